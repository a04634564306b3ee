// Inference serving: generated tokens/s and time to first token (p50/p99) through the HTTP server
// at concurrency 1, 8 and 32, and KV-cached decoding vs full recomputation at 256 generated tokens:
// the engine's preallocated buffers (BatchDecoder + KvPool) and the model's tensor cache
// (TransformerLm.extend/decodeStep, one concat per token) side by side in the same run.
//
// Model: the small reference model's shape (L2 D128 H4, learned positions, byte vocabulary) with
// seqLen 512 so 256 tokens fit, random weights saved as a checkpoint (speed does not depend on the
// values). The load generator runs in a child process (as real load generators do: the clients'
// HTTP parsing does not share the server's event loop); its clients stream (`stream: true`) over
// keep-alive node:http connections and time the first text chunk. Tokens/s counts the engine's
// generated tokens over the wall time of the level; "server CPU s" is the server process's CPU time
// for the level (all threads), a steadier figure than wall time on a shared machine; "client CPU s"
// is the load generator's. The decoder line says where the step runs (native addon or JS).
//
// Usage: pnpm bench levanter/serve [-- --requests-per-client 4 --max-tokens 64 --levels 1,8,32 --http-only --backend wasm]
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { TfBackendName } from "@marin/levanter";

const args = process.argv.slice(2);
const arg = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const perClient = Number(arg("requests-per-client") ?? 3);
const maxTokens = Number(arg("max-tokens") ?? 64);
const levels = (arg("levels") ?? "1,8,32").split(",").map(Number);

/** A level the load generator runs, and what it reports back. */
interface LevelAsk {
  url: string;
  concurrency: number;
  perClient: number;
  maxTokens: number;
}
interface LevelDone {
  ttfts: number[];
  cpu: number;
}

const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

// The load generator (the child): one streamed completion per call, on a keep-alive agent.
async function clientMain(): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const streamOne = (url: string, prompt: string, seed: number, tokens: number): Promise<number> =>
    new Promise((resolve, reject) => {
      const t0 = performance.now();
      const body = JSON.stringify({ prompt, max_tokens: tokens, temperature: 1, seed, stream: true });
      const req = http.request(`${url}/v1/completions`, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
        let ttft = -1;
        res.on("data", (chunk: Buffer) => {
          if (ttft < 0 && chunk.includes('"text":"')) ttft = performance.now() - t0;
        });
        res.on("end", () => resolve(ttft < 0 ? performance.now() - t0 : ttft));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body);
    });
  process.on("message", (ask: LevelAsk) => {
    void (async () => {
      const c0 = cpuSeconds();
      const ttfts: number[] = [];
      await Promise.all(
        Array.from({ length: ask.concurrency }, async (_, client) => {
          for (let i = 0; i < ask.perClient; i++) ttfts.push(await streamOne(ask.url, `Client ${client} asks question number ${i}:`, client * 1000 + i, ask.maxTokens));
        }),
      );
      process.send!({ ttfts, cpu: cpuSeconds() - c0 } satisfies LevelDone);
    })();
  });
  process.on("disconnect", () => process.exit(0));
}

if (process.argv.includes("--load-generator")) {
  await clientMain();
} else {
  await serverMain();
}

async function serverMain(): Promise<void> {
  const { AdamW, BatchDecoder, KvPool, ModelConfigSchema, Rng, TransformerLm, createInferenceServer, defaultDecayMask, resolveModelConfig, saveTrainState, selectBackend } = await import("@marin/levanter");
  const backend = (arg("backend") ?? "wasm") as TfBackendName;

  const sel = await selectBackend({ force: backend });
  console.log(`backend ${sel.name}, ${sel.threads} matMul thread(s), ${os.availableParallelism()} cores, load average ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  const dir = mkdtempSync(path.join(os.tmpdir(), "lev-serve-bench-"));
  const cfg = resolveModelConfig(ModelConfigSchema.parse({ nLayers: 2, dModel: 128, nHeads: 4, seqLen: 512 }), 257);
  {
    const rng = new Rng(1);
    const model = TransformerLm.init(cfg, rng);
    const optimizer = new AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 0, decayMask: defaultDecayMask });
    await saveTrainState(path.join(dir, "step-0"), false, { step: 0, model, optimizer, rng, tokenizer: "byte", loader: { seed: 0, step: 0, batchSize: 1, seqLen: 512 } });
    model.dispose();
    optimizer.dispose();
}

  const server = await createInferenceServer({ checkpoint: dir });
  await server.ready;
  const engine = server.engine()!;
  const pct = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
  };
  {
    const probe = new BatchDecoder(engine.model);
    console.log(`decoder: ${probe.projections === "native" ? "the native addon's decode step" : `JS (${probe.projections} projections)`}`);
    probe.dispose();
}

  // The load generator: this file again in a child process, one level per message.
  const child = fork(fileURLToPath(import.meta.url), ["--load-generator"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  let pending: { resolve: (d: LevelDone) => void; reject: (e: Error) => void } | undefined;
  child.on("message", (m) => pending?.resolve(m as LevelDone));
  child.on("exit", (code) => pending?.reject(new Error(`the load generator exited (${code})`)));
  const level = (ask: LevelAsk) =>
    new Promise<LevelDone>((resolve, reject) => {
      pending = { resolve, reject };
      child.send(ask);
    });

  console.log(`\nthrough HTTP (stream; clients in a child process), max_tokens ${maxTokens}, ${perClient} requests per client`);
  console.log("| concurrency | requests | generated tokens | wall s | server CPU s | client CPU s | tokens/s | TTFT p50 ms | TTFT p99 ms |");
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  // Warm-up (JIT, buffers, connections): every level's shape once, unmeasured.
  for (const c of levels) await level({ url: server.url, concurrency: c, perClient: 1, maxTokens });
  const rates: Record<number, number> = {};
  for (const c of levels) {
    const before = engine.stats().generatedTokens;
    const t0 = performance.now();
    const c0 = cpuSeconds();
    const done = await level({ url: server.url, concurrency: c, perClient, maxTokens });
    const wall = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds() - c0;
    const tokens = engine.stats().generatedTokens - before;
    rates[c] = tokens / wall;
    console.log(`| ${c} | ${c * perClient} | ${tokens} | ${wall.toFixed(2)} | ${cpu.toFixed(2)} | ${done.cpu.toFixed(2)} | **${rates[c]!.toFixed(0)}** | ${pct(done.ttfts, 50).toFixed(1)} | ${pct(done.ttfts, 99).toFixed(1)} |`);
}
  child.disconnect();
  if (rates[1]) console.log(`batching: ${levels.filter((c) => c > 1 && rates[c]).map((c) => `concurrency ${c} = ${(rates[c]! / rates[1]!).toFixed(2)}×`).join("; ")} concurrency 1`);

  if (args.includes("--http-only")) {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    return;
  }

  // KV cache vs full recomputation, batch 1, greedy, 256 new tokens after a 16-token prompt.
  const N = 256;
  const prompt = Array.from({ length: 16 }, (_, i) => 97 + (i % 26));
  const model = engine.model;
  const argmax = (row: ArrayLike<number>, off: number) => {
    let best = 0;
    for (let j = 1; j < cfg.vocabSize; j++) if (row[off + j]! > row[off + best]!) best = j;
    return best;
  };
  // The engine's path: one preallocated buffer, each token written in place.
  let t = performance.now();
  const decoder = new BatchDecoder(model);
  const pool = new KvPool(decoder.layout, 64 * 2 ** 20);
  const kv = pool.allocate(prompt.length + N);
  let row = decoder.step(prompt.map((token, pos) => ({ kv, token, pos, logits: pos === prompt.length - 1 })));
  const engineTokens: number[] = [];
  for (let i = 0; i < N; i++) {
    const best = argmax(row, 0);
    engineTokens.push(best);
    if (i < N - 1) row = decoder.step([{ kv, token: best, pos: kv.length, logits: true }]);
}
  pool.free(kv);
  decoder.dispose();
  const engineMs = performance.now() - t;
  // The model's tensor cache: [heads, length, headDim] tensors per layer, concatenated every token.
  t = performance.now();
  let { logits, cache } = model.extend(prompt);
  const tensorTokens: number[] = [];
  for (let i = 0; i < N; i++) {
    const all = logits.dataSync();
    logits.dispose();
    const best = argmax(all, all.length - cfg.vocabSize);
    tensorTokens.push(best);
    if (i === N - 1) break;
    const next = model.decodeStep([best], [cache]);
    for (const x of [...cache.keys, ...cache.values]) x.dispose();
    logits = next.logits;
    cache = next.caches[0]!;
}
  for (const x of [...cache.keys, ...cache.values]) x.dispose();
  const tensorMs = performance.now() - t;
  // Full recomputation: a forward over the whole context for every token (what generate() does; here
  // through the model's tensor kernels, with no cache kept).
  t = performance.now();
  const ctx = [...prompt];
  for (let i = 0; i < N; i++) {
    const full = model.extend(ctx);
    const all = full.logits.dataSync();
    full.logits.dispose();
    for (const x of [...full.cache.keys, ...full.cache.values]) x.dispose();
    ctx.push(argmax(all, all.length - cfg.vocabSize));
}
  const fullMs = performance.now() - t;
  const same = (a: number[]) => a.every((x, i) => x === ctx[prompt.length + i]);
  const rate = (ms: number) => ((N * 1000) / ms).toFixed(0);
  console.log(`\n${N} generated tokens (batch 1, greedy, 16-token prompt; same tokens as recomputation: engine ${same(engineTokens)}, tensor cache ${same(tensorTokens)})`);
  console.log("| path | ms | tokens/s | vs full recomputation |");
  console.log("| --- | --- | --- | --- |");
  console.log(`| engine: preallocated KV buffer (BatchDecoder) | ${engineMs.toFixed(0)} | ${rate(engineMs)} | **${(fullMs / engineMs).toFixed(2)}×** |`);
  console.log(`| model tensor cache (extend/decodeStep, concat per token) | ${tensorMs.toFixed(0)} | ${rate(tensorMs)} | ${(fullMs / tensorMs).toFixed(2)}× |`);
  console.log(`| full recomputation | ${fullMs.toFixed(0)} | ${rate(fullMs)} | 1× |`);

  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
