// Data parallelism: (1) the transport choice — raw TCP with levanter's framing vs a gRPC bidi
// stream, ping-pong latency and one-way throughput at a few sizes; (2) the exact all-reduce
// (reduce-scatter + all-gather over the gang's mesh) between 2 processes on this host, 1 KiB–64 MiB
// of float32 gradient, through shared memory and over TCP; (3) a machine check (one single-threaded
// GEMM process alone, then two at once: what two busy cores give here before any communication),
// then trainLm tokens/s on 1 and 2 ranks (one thread each, iris gang on an
// embedded LocalCluster) for the two reference models (global batch 16, as the models define it;
// and 2 ranks of 16 each, global 32: weak scaling), beside one rank at 2 threads and two
// independent one-rank runs at once, on the whole batch each (the ceiling of two processes on this
// machine) and on half of it each (the ceiling of 2 ranks at that global batch), and PyTorch
// (torchPeer.py) at 2 threads on the same model in the same run when /usr/bin/python3 has torch.
//
// Usage: pnpm bench levanter/dataParallel [-- --backend wasm|native --steps N --rounds R --batch B --models small,large --no-torch --only transport,allreduce,train]
import * as grpc from "@grpc/grpc-js";
import { LocalCluster } from "@marin/iris";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { submitTrainGang } from "../../packages/levanter/src/trainer/gangJob.ts";
import { byteTokenizer, encodeDocument } from "@marin/levanter";
import { finalizeTokenCache, writeTokenCacheShard } from "@marin/levanter/sharding";
import { loadNativeAddon } from "../../packages/levanter/src/kernels/native/addon.ts";
import { allReduceExactMean } from "../../packages/levanter/src/parallel/collectives.ts";
import { formGang, type Gang } from "../../packages/levanter/src/parallel/gang.ts";
import { Kind, Link } from "../../packages/levanter/src/parallel/wire.ts";
import { integerFlag } from "@marin/iris/toolkit";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const arg = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
process.env.LEVANTER_LOG ??= "warn";
const SIZES = [1024, 16 * 1024, 256 * 1024, 4 * 2 ** 20, 16 * 2 ** 20, 64 * 2 ** 20];
const fmt = (b: number) => (b >= 2 ** 20 ? `${b / 2 ** 20} MiB` : `${b / 1024} KiB`);

// ---- child mode: rank 1 of the all-reduce benchmark ------------------------------------------
if (args[0] === "--allreduce-rank1") {
  const gang = await formGang({
    rank: 1,
    world: 2,
    secret: process.env.BENCH_SECRET!,
    host: "127.0.0.1",
    port: 0,
    rendezvous: { register: async () => async () => {}, resolve: async () => args[1]! },
  });
  for (const bytes of SIZES) {
    const n = bytes / 4;
    const values = new Float32Array(n);
    const into = new Float32Array(n);
    for (let i = 0; i < repsFor(bytes) + 1; i++) await allReduceExactMean(gang, { kind: "raw", values }, [{ offset: 0, length: n, s: 0 }], 2, { into });
  }
  await gang.close();
  process.exit(0);
}

// ---- child mode: one single-threaded GEMM process of the machine check -----------------------
if (args[0] === "--gemm-probe") {
  const { selectBackend } = await import("@marin/levanter");
  const { measureMatMulGflops } = await import("@marin/levanter/internals");
  await selectBackend({ force: args[1] as "native" | "wasm", threads: 1 });
  // A rank's largest product on the large model: its 8 rows × 64 tokens through the MLP.
  const rates: number[] = [];
  const until = performance.now() + Number(args[2]) * 1000;
  while (performance.now() < until) rates.push(measureMatMulGflops(512, 256, 1024, 10).wall);
  rates.sort((a, b) => a - b);
  console.log(JSON.stringify({ gflops: rates[Math.floor(rates.length / 2)] }));
  process.exit(0);
}

function repsFor(bytes: number): number {
  return bytes <= 256 * 1024 ? 50 : bytes <= 4 * 2 ** 20 ? 10 : 3;
}

const only = arg("only")?.split(",") ?? ["transport", "allreduce", "train"];
console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"})`,
);

// ---- (1) transport: TCP framing vs gRPC stream (client and server in this process) ----------
async function tcpPair(): Promise<{ send: (b: Buffer) => void; acks: () => number; close: () => void }> {
  let acks = 0;
  const server = net.createServer((s) => {
    const l = new Link(s, "server");
    l.authenticated = true;
    l.onFrame = () => l.send(Kind.GATHER, 0, 0);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const sock = await new Promise<net.Socket>((r) => {
    const s = net.connect((server.address() as net.AddressInfo).port, "127.0.0.1", () => r(s));
  });
  const client = new Link(sock, "client");
  client.authenticated = true;
  client.onFrame = () => acks++;
  return { send: (b) => client.send(Kind.REDUCE, 0, 0, b), acks: () => acks, close: () => (sock.destroy(), server.close()) };
}

async function grpcPair(): Promise<{ send: (b: Buffer) => void; acks: () => number; close: () => void }> {
  const id = (b: Buffer) => b;
  const def = {
    exchange: {
      path: "/bench.Bench/Exchange",
      requestStream: true,
      responseStream: true,
      requestSerialize: id,
      requestDeserialize: id,
      responseSerialize: id,
      responseDeserialize: id,
      originalName: "exchange",
    },
  };
  const opts = { "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 };
  const server = new grpc.Server(opts);
  server.addService(def as unknown as grpc.ServiceDefinition, {
    exchange: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => call.on("data", () => call.write(Buffer.alloc(0))),
  });
  const port = await new Promise<number>((r, j) => server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? j(e) : r(p))));
  const Client = grpc.makeGenericClientConstructor(def as unknown as grpc.ServiceDefinition, "Bench");
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), opts) as unknown as {
    exchange: () => grpc.ClientDuplexStream<Buffer, Buffer>;
    close: () => void;
  };
  const call = client.exchange();
  let acks = 0;
  call.on("data", () => acks++);
  call.on("error", () => {});
  return { send: (b) => void call.write(b), acks: () => acks, close: () => (call.end(), client.close(), server.forceShutdown()) };
}

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}

async function measureTransport(
  name: string,
  make: () => Promise<{ send: (b: Buffer) => void; acks: () => number; close: () => void }>,
): Promise<Map<number, { latUs: number; gbps: number }>> {
  const p = await make();
  const out = new Map<number, { latUs: number; gbps: number }>();
  for (const bytes of [1024, 64 * 1024, 2 ** 20, 16 * 2 ** 20]) {
    const buf = Buffer.alloc(bytes, 7);
    const reps = bytes <= 64 * 1024 ? 200 : bytes <= 2 ** 20 ? 30 : 6;
    // ping-pong: one message, wait for its ack
    let t0 = performance.now();
    for (let i = 0; i < reps; i++) {
      const want = p.acks() + 1;
      p.send(buf);
      await until(() => p.acks() >= want);
    }
    const latUs = ((performance.now() - t0) / reps) * 1000;
    // streaming: reps messages back to back, then wait for the last ack
    const start = p.acks();
    t0 = performance.now();
    for (let i = 0; i < reps; i++) p.send(buf);
    await until(() => p.acks() >= start + reps);
    const gbps = (bytes * reps) / ((performance.now() - t0) / 1000) / 1e9;
    out.set(bytes, { latUs, gbps });
    console.log(`${name.padEnd(5)} ${fmt(bytes).padStart(7)}  round trip ${latUs.toFixed(0).padStart(7)} µs  stream ${gbps.toFixed(2).padStart(6)} GB/s`);
  }
  p.close();
  return out;
}

if (only.includes("transport")) {
  console.log("\n(1) transport, one process (client and server share its thread): round trip of one message, streamed throughput");
  const tcp = await measureTransport("tcp", tcpPair);
  const g = await measureTransport("grpc", grpcPair);
  for (const [b, t] of tcp)
    console.log(`  ${fmt(b).padStart(7)}: tcp/grpc throughput ${(t.gbps / g.get(b)!.gbps).toFixed(2)}×, grpc/tcp latency ${(g.get(b)!.latUs / t.latUs).toFixed(2)}×`);
}

// ---- (2) the exact all-reduce between 2 processes -------------------------------------------
if (only.includes("allreduce")) {
  for (const transport of ["shared memory", "tcp"] as const) {
    console.log(
      `\n(2) exact all-reduce, 2 processes on this host, ${transport === "tcp" ? "TCP on loopback (LEVANTER_DP_SHM=off: the path between hosts)" : "buckets through /dev/shm (TCP carries the notices)"} — float32 gradient bytes, one micro-batch per rank; algorithm bandwidth = bytes / time`,
    );
    if (transport === "tcp") process.env.LEVANTER_DP_SHM = "off";
    const secret = "bench";
    let announce: (a: string) => void = () => {};
    const registered = new Promise<string>((r) => (announce = r));
    const forming = formGang({
      rank: 0,
      world: 2,
      secret,
      host: "127.0.0.1",
      port: 0,
      rendezvous: { register: async (a) => (announce(a), async () => {}), resolve: async () => "" },
    });
    const address = await registered;
    const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--allreduce-rank1", address], {
      stdio: "inherit",
      env: { ...process.env, BENCH_SECRET: secret },
    });
    const gang: Gang = await forming;
    for (const bytes of SIZES) {
      const n = bytes / 4;
      const seg = [{ offset: 0, length: n, s: 0 }];
      await allReduceExactMean(gang, { kind: "raw", values: new Float32Array(n) }, seg, 2); // warm-up
      const reps = repsFor(bytes);
      let total = 0;
      const values = new Float32Array(n);
      const into = new Float32Array(n);
      for (let i = 0; i < reps; i++) {
        const t0 = performance.now();
        await allReduceExactMean(gang, { kind: "raw", values }, seg, 2, { into });
        total += performance.now() - t0;
      }
      const ms = total / reps;
      console.log(`allreduce ${fmt(bytes).padStart(7)}  ${ms.toFixed(3).padStart(9)} ms  ${(bytes / (ms / 1000) / 1e9).toFixed(2).padStart(6)} GB/s`);
    }
    await new Promise<void>((r) => child.on("exit", () => r()));
    await gang.close();
    delete process.env.LEVANTER_DP_SHM;
  }
}

// ---- (3) trainLm tokens/s on 1 and 2 ranks, and PyTorch at 2 threads ------------------------
if (only.includes("train")) {
  const backend = arg("backend") ?? (loadNativeAddon().ok ? "native" : "wasm");
  const models = { small: { nLayers: 2, dModel: 128, nHeads: 4, seqLen: 64 }, large: { nLayers: 4, dModel: 256, nHeads: 8, seqLen: 64 } } as const;
  // Global batch in sequences (default 16, the reference models' batch); --models small,large picks models.
  const BATCH = integerFlag("batch", 16, { min: 1 });
  const picked = (arg("models") ?? "small,large").split(",");
  const dir = mkdtempSync(path.join(os.tmpdir(), "bench-dp-"));
  // Byte tokens of a repeated pangram: throughput does not depend on the text.
  const docs = Array.from({ length: 400 }, (_, i) => `${i}: the quick brown fox jumps over the lazy dog. `.repeat(6));
  await writeTokenCacheShard(
    path.join(dir, "cache"),
    0,
    docs.map((d) => encodeDocument(byteTokenizer, d)),
    { tokenizer: byteTokenizer.name, vocabSize: byteTokenizer.vocabSize },
  );
  await finalizeTokenCache(path.join(dir, "cache"));
  // The machine's own ceiling for two processes: one single-threaded GEMM process alone, then two
  // at once. What two busy cores lose to each other here (shared caches and memory, the host)
  // bounds every 2-process scheme, before any communication.
  const probe = () =>
    new Promise<number>((resolve, reject) => {
      const c = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--gemm-probe", backend, "4"], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      c.stdout.on("data", (d: Buffer) => (out += d.toString()));
      c.on("exit", (code) => (code === 0 ? resolve((JSON.parse(out.trim().split("\n").pop()!) as { gflops: number }).gflops) : reject(new Error(`gemm probe exited ${code}`))));
    });
  const alone = await probe();
  const [pa, pb] = await Promise.all([probe(), probe()]);
  const alone2 = await probe();
  const best = Math.max(alone, alone2);
  console.log(
    `\n(3) machine check: GEMM [512,256]·[256,1024] on ${backend}, one thread a process: alone ${alone.toFixed(1)}, ${alone2.toFixed(1)} GFLOP/s; two processes at once ${pa.toFixed(1)} + ${pb.toFixed(1)} → ${((pa + pb) / best).toFixed(2)}× one (the most 2 processes get from compute-bound work here)`,
  );
  const cluster = await LocalCluster.start({ workers: 2, workerCpuMillis: 1000 });
  console.log(`\n(3) trainLm tokens/s (global batch ${BATCH} × 64, backend ${backend}, 1 thread per rank; median of the steps after the first 2)`);
  const tps: Record<string, number> = {};
  const median = (runDir: string) => {
    const values = readFileSync(path.join(runDir, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { metrics?: Record<string, number> } & Record<string, number>)
      .map((r) => (r.metrics ?? r)["throughput/tokens_per_second"]!)
      .slice(2)
      .sort((a, b) => a - b);
    return values[Math.floor(values.length / 2)]!;
  };
  const run = async (
    label: string,
    m: (typeof models)[keyof typeof models],
    steps: number,
    ranks: number,
    microBatches: number,
    threads: number,
    tag: string,
    batchSize = BATCH,
  ) => {
    const runDir = path.join(dir, `${label}-${tag}`);
    const job = await submitTrainGang(
      cluster.client,
      {
        model: m,
        data: { trainCache: path.join(dir, "cache") },
        trainer: {
          numTrainSteps: steps,
          batchSize,
          microBatches,
          runDir,
          trackers: ["jsonl"],
          backend: backend as "wasm",
          threads,
          checkpointer: { saveIntervalSeconds: null, keep: null },
        },
      },
      ranks,
      { name: `bench-${label}-${tag}`, maxRetries: 0, cpuMillis: 1000, env: { LEVANTER_LOG: "warn" } },
    );
    const st = await job.wait();
    if (st.state !== "SUCCEEDED") {
      console.log(`${label} ${tag}: ${st.state} ${st.error ?? ""}`);
      return undefined;
    }
    return median(runDir);
  };
  try {
    for (const [label, m] of Object.entries(models).filter(([l]) => picked.includes(l))) {
      // Long enough to be steady: the first tens of steps of a gang run slower (both processes'
      // JIT and first touches compete for the two cores), and host stalls come in bursts; 40 and
      // 16 steps (1–3 s a run) were mostly warm-up.
      const steps = integerFlag("steps", label === "small" ? 200 : 40, { min: 1 });
      const rounds = integerFlag("rounds", 3, { min: 1 });
      const ratios: string[] = [];
      const weakRatios: string[] = [];
      // 1 rank and 2 ranks back to back, `rounds` times (this shared machine drifts: every round
      // is printed), then the same-bits one-rank run with 2 micro-batches.
      for (let round = 1; round <= rounds; round++) {
        const one = await run(label, m, steps, 1, 1, 1, `r${round}-1-1`);
        const two = await run(label, m, steps, 2, 2, 1, `r${round}-2-2`);
        // Weak scaling beside it: each of 2 ranks trains the reference batch (global 2 × BATCH).
        const weak = await run(label, m, steps, 2, 2, 1, `r${round}-2-2-weak`, 2 * BATCH);
        if (one) tps[`${label}/1/1`] = Math.max(tps[`${label}/1/1`] ?? 0, one);
        if (two) tps[`${label}/2/2`] = Math.max(tps[`${label}/2/2`] ?? 0, two);
        const vs = (x: number | undefined) => (one && x ? ` (${(x / one).toFixed(2)}×)` : "");
        console.log(
          `${label.padEnd(6)} round ${round}: 1 rank ${one?.toFixed(0).padStart(6) ?? "failed"} · 2 ranks ${two?.toFixed(0).padStart(6) ?? "failed"}${vs(two)} · 2 ranks of ${BATCH} each ${weak?.toFixed(0).padStart(6) ?? "failed"}${vs(weak)} tokens/s`,
        );
        if (one && two) ratios.push((two / one).toFixed(2));
        if (one && weak) weakRatios.push((weak / one).toFixed(2));
      }
      const mb2 = await run(label, m, steps, 1, 2, 1, "1-2");
      if (mb2) console.log(`${label.padEnd(6)} 1 rank, 2 micro-batches (the 2-rank run's bits): ${mb2.toFixed(0).padStart(6)} tokens/s`);
      // What one process does with both cores, and the ceiling of two processes on this machine:
      // two independent one-rank runs at once (no communication at all), twice as long so that
      // they overlap for most of their steps.
      const twoThreads = await run(label, m, steps, 1, 1, 2, "1-1-2threads");
      if (twoThreads) console.log(`${label.padEnd(6)} 1 rank, 2 threads: ${twoThreads.toFixed(0).padStart(6)} tokens/s`);
      const pair = await Promise.all([run(label, m, 2 * steps, 1, 1, 1, "alone-a"), run(label, m, 2 * steps, 1, 1, 1, "alone-b")]);
      // The ceiling of the 2-rank run itself (strong scaling): two independent one-rank runs at
      // once, each on half the global batch, as each rank computes it — everything 2 ranks do but
      // talk. Their tokens/s summed over the best 1-rank round bounds what any all-reduce can give.
      const halves = BATCH % 2 === 0 ? await Promise.all([run(label, m, 2 * steps, 1, 1, 1, "half-a", BATCH / 2), run(label, m, 2 * steps, 1, 1, 1, "half-b", BATCH / 2)]) : [];
      const one = tps[`${label}/1/1`];
      const two = tps[`${label}/2/2`];
      if (pair[0] && pair[1] && one)
        console.log(
          `${label.padEnd(6)} two independent 1-rank runs at once: ${pair[0].toFixed(0)} + ${pair[1].toFixed(0)} tokens/s → ceiling ${((pair[0] + pair[1]) / one).toFixed(2)}× the best 1-rank round`,
        );
      if (halves[0] && halves[1] && one) {
        const ceiling = (halves[0] + halves[1]) / one;
        console.log(
          `${label.padEnd(6)} two independent 1-rank runs at once of batch ${BATCH / 2} (a rank's half, no communication): ${halves[0].toFixed(0)} + ${halves[1].toFixed(0)} tokens/s → strong-scaling ceiling ${ceiling.toFixed(2)}× the best 1-rank round${two ? `; 2 ranks reach ${((two / one / ceiling) * 100).toFixed(0)} % of it` : ""}`,
        );
      }
      if (one && two)
        console.log(
          `${label.padEnd(6)} 2 ranks / 1 rank by round: ${ratios.join(", ")}× (best of each: ${(two / one).toFixed(2)}×${mb2 ? `; vs the same-bits 1-rank run: ${(two / mb2).toFixed(2)}×` : ""}${twoThreads ? `; vs 1 rank at 2 threads: ${(two / twoThreads).toFixed(2)}×` : ""})`,
        );
      if (weakRatios.length > 0) console.log(`${label.padEnd(6)} 2 ranks of ${BATCH} each (global ${2 * BATCH}) / 1 rank of ${BATCH}, by round: ${weakRatios.join(", ")}×`);
    }
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const python = "/usr/bin/python3";
  if (args.includes("--no-torch") || spawnSync(python, ["-c", "import torch"], { stdio: "ignore" }).status !== 0) {
    console.log("PyTorch peer skipped (no torch in /usr/bin/python3, or --no-torch)");
  } else {
    for (const [label, m] of Object.entries(models).filter(([l]) => picked.includes(l))) {
      const r = spawnSync(
        python,
        [
          path.join(here, "torchPeer.py"),
          "--layers",
          String(m.nLayers),
          "--d",
          String(m.dModel),
          "--heads",
          String(m.nHeads),
          "--seq",
          String(m.seqLen),
          "--batch",
          String(BATCH),
          "--steps",
          label === "small" ? "10" : "5",
          "--threads",
          "2",
        ],
        {
          encoding: "utf8",
          env: { ...process.env, OPENBLAS_NUM_THREADS: "2", OMP_NUM_THREADS: "2" },
        },
      );
      if (r.status !== 0) {
        console.log(`PyTorch ${label}: failed ${(r.stderr || "").trim().split("\n").pop()}`);
        continue;
      }
      const t = JSON.parse(r.stdout.trim().split("\n").pop()!) as { tokens_per_s: number };
      const two = tps[`${label}/2/2`];
      console.log(
        `PyTorch ${label.padEnd(6)} 2 threads: ${t.tokens_per_s.toFixed(0).padStart(7)} tokens/s${two ? `; levanter 2 ranks / PyTorch: ${(two / t.tokens_per_s).toFixed(2)}×` : ""}`,
      );
    }
  }
}
