// A bounded soak of iris: jobs with big specs (env and argv) and chatty logs run in waves on two
// workers, the controller is restarted in the middle (same database and port), and the run prints
// jobs finished, log lines stored vs printed, and this process's memory (controller and workers
// live here) at start, peak and end.
//
//   pnpm bench iris/soak [-- --jobs N --lines L --spec-kb K --concurrency C]
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import { Controller, IrisClient, Worker, type Job } from "@marin/iris";
import { integerFlag } from "@marin/iris/toolkit";

const arg = (name: string, dflt: number): number => integerFlag(name, dflt, { min: 0 });
const JOBS = arg("jobs", 120);
const LINES = arg("lines", 2000);
const SPEC_KB = arg("spec-kb", 1000);
const CONCURRENCY = arg("concurrency", 8);

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;
const MB = 1024 * 1024;
const mem = (): { rss: number; heap: number } => {
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed };
};
const fmt = (m: { rss: number; heap: number }): string => `rss ${(m.rss / MB).toFixed(0)} MB, heap ${(m.heap / MB).toFixed(0)} MB`;

const dir = mkdtempSync(path.join(os.tmpdir(), "iris-soak-"));
const dbPath = path.join(dir, "controller.sqlite");
let controller = await Controller.start({ port: 0, host: "127.0.0.1", dbPath, workerTimeoutMs: 20_000 });
const port = controller.port;
const workers = await Promise.all(
  [0, 1].map((i) => Worker.start({ controller: controller.address, cpuMillis: 4000, memoryBytes: 8 * 1024 ** 3, stateRoot: path.join(dir, `w${i}`) })),
);
await Promise.all(workers.map((w) => w.registered));
const client = IrisClient.connect(controller.address, { user: "soak" });

// The spec's bulk: 64 KB of env (the worker passes the whole job env again in IRIS_JOB_ENV, and
// Linux caps one env string at 128 KiB) and the rest as 100 KB argv strings (~2 MB in all at most).
const env: Record<string, string> = {};
for (let i = 0; i < 64; i++) env[`SOAK_PAD_${i}`] = "x".repeat(1000);
const padArgs = Array.from({ length: Math.max(0, Math.round((SPEC_KB - 64) / 100)) }, () => "z".repeat(100_000));
const script = `for (let i = 0; i < ${LINES}; i++) console.log("soak line " + i + " " + "y".repeat(80))`;

gc();
const start = mem();
let peak = { ...start };
const sampler = setInterval(() => {
  const m = mem();
  peak = { rss: Math.max(peak.rss, m.rss), heap: Math.max(peak.heap, m.heap) };
}, 100);

const t0 = Date.now();
let submitted = 0;
let restarted = false;
const states = new Map<string, number>();
const jobs: Job[] = [];
async function lane(): Promise<void> {
  while (submitted < JOBS) {
    const i = submitted++;
    if (!restarted && i >= JOBS / 2) {
      restarted = true;
      await controller.stop();
      controller = await Controller.start({ port, host: "127.0.0.1", dbPath, workerTimeoutMs: 20_000 });
      console.log(`controller restarted after ${i} submissions (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    }
    for (let tries = 0; ; tries++) {
      try {
        const job = await client.submit({ name: `soak-${i}`, entrypoint: { command: [process.execPath, "-e", script, ...padArgs] }, env, resources: { cpuMillis: 1000 } });
        jobs.push(job);
        const st = await job.wait({ timeoutMs: 300_000 });
        states.set(st.state, (states.get(st.state) ?? 0) + 1);
        if (st.state !== "SUCCEEDED" && states.get(st.state) === 1) console.log(`first ${st.state} job: ${st.error ?? ""}`);
        break;
      } catch (e) {
        // Submitting while the controller restarts is refused (UNAVAILABLE): try again.
        if (tries > 50) throw e;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
}
await Promise.all(Array.from({ length: CONCURRENCY }, lane));
const runS = (Date.now() - t0) / 1000;

// Every stored line of a finished job is readable once `logs()` ends (it waits for them).
let stored = 0;
for (const job of jobs) for await (const _ of job.logs()) stored++;
clearInterval(sampler);
const markers = (controller.state.core.db.prepare("SELECT COUNT(*) AS n FROM logs WHERE line LIKE '[iris: %'").get() as { n: number }).n;
gc();
const end = mem();

console.log(
  `jobs: ${JOBS} submitted, ${[...states].map(([s, n]) => `${n} ${s}`).join(", ")} in ${runS.toFixed(1)} s (${CONCURRENCY} at a time, 2 workers, specs of ~${SPEC_KB} KB)`,
);
console.log(
  `log lines: ${JOBS * LINES} printed, ${stored} stored and read back (${markers} loss markers); dropped by refusals ${workers.reduce((n, w) => n + w.droppedLogLines, 0)}`,
);
console.log(`memory at start: ${fmt(start)}`);
console.log(`memory at peak:  ${fmt(peak)}`);
console.log(`memory at end:   ${fmt(end)} (after GC)`);

client.close();
await Promise.all(workers.map((w) => w.stop()));
await controller.stop();
rmSync(dir, { recursive: true, force: true });
