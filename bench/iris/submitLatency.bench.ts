// Submit latency of a command job on a LocalCluster (1 worker), each figure side by side with its
// like-for-like bare twin on the same machine, in the same run:
//   submit → RUNNING at the client      vs  bare spawn() call → 'spawn' event (process started)
//   submit → first output line at client vs  bare spawn() call → first stdout line
//   submit → SUCCEEDED at the client     vs  bare spawn() call → 'exit' event
// RUNNING means the worker has spawned the attempt's process (and the client has heard of it).
// Goal (issue 3): submit → RUNNING ≤ 1.5× the bare spawn → 'spawn' event. The other two pairs
// show what iris adds on the whole path (its supervisor, log shipping, state reporting).
//
//   pnpm bench iris/submitLatency [-- --runs N]
import { spawn } from "node:child_process";
import { IrisClient, LocalCluster } from "@marin/iris";
import { integerFlag } from "@marin/iris/toolkit";

const RUNS = integerFlag("runs", 20, { min: 1 });

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

// A bare spawn until Node reports the process started ('spawn' event): the twin of RUNNING.
function bareStarted(): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
    p.once("error", reject);
    p.once("spawn", () => resolve(performance.now() - t0));
  });
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
    await bareStarted();
    await submitToRunning(cluster.client, -1 - i);
  }
  const bare: number[] = [];
  const bareStart: number[] = [];
  const running: number[] = [];
  const done: number[] = [];
  const bareLine: number[] = [];
  const irisLine: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    bare.push(await bareSpawn());
    bareStart.push(await bareStarted());
    const r = await submitToRunning(cluster.client, i);
    running.push(r.running);
    done.push(r.done);
    bareLine.push(await bareFirstLine());
    irisLine.push(await submitToFirstLine(cluster.client, i));
  }
  const fmt = (x: number) => `${x.toFixed(1)} ms`.padStart(9);
  const row = (what: string, iris: number[], twin: string, bareXs: number[]) =>
    `${what.padEnd(34)} ${fmt(median(iris))} (p90 ${fmt(p90(iris))})   vs  ${twin.padEnd(34)} ${fmt(median(bareXs))} (p90 ${fmt(p90(bareXs))})   ${(median(iris) / median(bareXs)).toFixed(2)}×`;
  const [load1] = (await import("node:os")).loadavg();
  console.log(`runs: ${RUNS}   load average (1 min) at the end: ${load1!.toFixed(2)} on ${(await import("node:os")).availableParallelism()} CPUs`);
  console.log("like for like (medians; iris / bare):");
  console.log(row("iris submit → RUNNING", running, "bare spawn → 'spawn' (started)", bareStart) + "   goal ≤ 1.5×");
  console.log(row("iris submit → first line at client", irisLine, "bare spawn → first stdout line", bareLine));
  console.log(row("iris submit → SUCCEEDED (node -e 0)", done, "bare spawn → exit (node -e 0)", bare));
} finally {
  await cluster.stop();
}
