// Submit → RUNNING latency of a command job on a LocalCluster (1 worker), side by side with a
// bare `node -e 0` spawn (spawn → exit) on the same machine. Goal: ≤ 1.5× the bare spawn.
// RUNNING means the worker has spawned the attempt's process; for the whole path, also
// submit → SUCCEEDED and submit → first output line at the client, against their bare twins.
//
//   pnpm bench iris/submitLatency [-- --runs N]
import { spawn } from "node:child_process";
import { IrisClient, LocalCluster } from "@marin/iris";

const runsArg = process.argv.indexOf("--runs");
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 20;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
function p90(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.9))]!;
}

// A bare spawn until the program's first line of output.
function bareFirstLine(): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["-e", "console.log('up')"], { stdio: ["ignore", "pipe", "ignore"] });
    p.once("error", reject);
    p.stdout.once("data", () => resolve(performance.now() - t0));
  });
}

// Submit until the job's first log line reaches the client (logs -f).
async function submitToFirstLine(client: IrisClient, i: number): Promise<number> {
  const t0 = performance.now();
  const job = await client.submit({ name: `bench-line-${Date.now()}-${i}`, entrypoint: { command: [process.execPath, "-e", "console.log('up')"] }, resources: { cpuMillis: 100 } });
  for await (const _ of job.logs({ follow: true })) return performance.now() - t0;
  throw new Error("no output");
}

function bareSpawn(): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
    p.once("error", reject);
    p.once("exit", () => resolve(performance.now() - t0));
  });
}

// Submits a job and resolves when WatchJob first shows it RUNNING (or already finished), and
// when it finished.
async function submitToRunning(client: IrisClient, i: number): Promise<{ running: number; done: number }> {
  const t0 = performance.now();
  const job = await client.submit({ name: `bench-latency-${Date.now()}-${i}`, entrypoint: { command: [process.execPath, "-e", "0"] }, resources: { cpuMillis: 100 } });
  let running = 0;
  const stream = client.rpc.watchJob({ name: job.name, instanceId: job.instanceId });
  for await (const st of stream as AsyncIterable<{ state: string }>) {
    if (!running && st.state !== "PENDING") running = performance.now() - t0;
  }
  return { running, done: performance.now() - t0 };
}

const cluster = await LocalCluster.start({ workers: 1 });
try {
  // Warm up both paths (JIT, the worker's runner, the page cache).
  for (let i = 0; i < 3; i++) {
    await bareSpawn();
    await submitToRunning(cluster.client, -1 - i);
  }
  const bare: number[] = [];
  const running: number[] = [];
  const done: number[] = [];
  const bareLine: number[] = [];
  const irisLine: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    bare.push(await bareSpawn());
    const r = await submitToRunning(cluster.client, i);
    running.push(r.running);
    done.push(r.done);
    bareLine.push(await bareFirstLine());
    irisLine.push(await submitToFirstLine(cluster.client, i));
  }
  const fmt = (x: number) => `${x.toFixed(1)} ms`;
  console.log(`runs: ${RUNS}`);
  console.log(`bare \`node -e 0\` spawn → exit      median ${fmt(median(bare))}   p90 ${fmt(p90(bare))}`);
  console.log(`iris submit → RUNNING              median ${fmt(median(running))}   p90 ${fmt(p90(running))}   (${(median(running) / median(bare)).toFixed(2)}× bare; goal ≤ 1.5×)`);
  console.log(`iris submit → SUCCEEDED (node -e 0) median ${fmt(median(done))}   p90 ${fmt(p90(done))}   (${(median(done) / median(bare)).toFixed(2)}× bare)`);
  console.log(`bare spawn → first output line      median ${fmt(median(bareLine))}   p90 ${fmt(p90(bareLine))}`);
  console.log(`iris submit → first line at client  median ${fmt(median(irisLine))}   p90 ${fmt(p90(irisLine))}   (${(median(irisLine) / median(bareLine)).toFixed(2)}× bare)`);
} finally {
  await cluster.stop();
}
