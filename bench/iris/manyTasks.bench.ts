// The controller's reads and scheduling with a million tasks: `--jobs` jobs of `--replicas` tasks
// each (default 10 × 100,000) on one SQLite file, one worker that runs a few at a time. Prints
// the time to submit, ListJobs (all pages) and GetJob (first page; every page through the client)
// latencies and sizes, the time until tasks run, and this process's memory (RSS, heap).
//
//   pnpm bench iris/manyTasks [-- --jobs N --replicas R]
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Controller, IrisClient, Worker } from "@marin/iris";
import { integerFlag } from "@marin/iris/toolkit";

const arg = (name: string, dflt: number): number => integerFlag(name, dflt, { min: 0 });
const JOBS = arg("jobs", 10);
const REPLICAS = arg("replicas", 100_000);
const MB = 1024 * 1024;
const mem = (): string => {
  const m = process.memoryUsage();
  return `rss ${(m.rss / MB).toFixed(0)} MB, heap ${(m.heapUsed / MB).toFixed(0)} MB`;
};
const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const r = await fn();
  return [r, performance.now() - t0];
};

/** Polls the job's summary (ListJobs) until `n` of its tasks have succeeded; resolves to that count. */
async function waitForSucceeded(client: IrisClient, name: string, n: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [j] = await client.list({ prefix: name });
    const done = j?.taskCounts?.SUCCEEDED ?? 0;
    if (done >= n) return done;
    if (Date.now() > deadline) throw new Error(`only ${done} tasks of ${name} succeeded within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const dir = mkdtempSync(path.join(os.tmpdir(), "iris-many-"));
const controller = await Controller.start({ port: 0, host: "127.0.0.1", dbPath: path.join(dir, "c.sqlite") });
const client = IrisClient.connect(controller.address, { user: "many" });
console.log(`start: ${mem()}`);

const [, submitMs] = await timed(async () => {
  for (let i = 0; i < JOBS; i++) await client.submit({ name: `wide-${i}`, entrypoint: { command: ["true"] }, replicas: REPLICAS, resources: { cpuMillis: 1000 } });
});
console.log(`submitted ${JOBS} × ${REPLICAS} = ${JOBS * REPLICAS} tasks in ${(submitMs / 1000).toFixed(1)} s; ${mem()}`);

const [jobs, listMs] = await timed(() => client.list());
console.log(
  `ListJobs (all pages): ${jobs.length} jobs in ${listMs.toFixed(0)} ms, ${JSON.stringify(jobs).length} bytes of JSON; counts of the first: ${JSON.stringify(jobs[0]?.taskCounts)}`,
);

const [full, getMs] = await timed(() => client.job("wide-1").status());
console.log(`GetJob through the client (every page, no worker running): ${full.tasks.length} tasks in ${getMs.toFixed(0)} ms; ${mem()}`);

const worker = await Worker.start({ controller: controller.address, cpuMillis: 4000, memoryBytes: 8 * 1024 ** 3, stateRoot: path.join(dir, "w") });
await worker.registered;
const [ran, runMs] = await timed(() => waitForSucceeded(client, "wide-0", 20, 300_000));
console.log(`scheduling: ${ran} tasks of wide-0 finished ${(runMs / 1000).toFixed(1)} s after a worker registered; ${mem()}`);

const [during, getDuringMs] = await timed(() => client.job("wide-0").status());
console.log(`GetJob through the client (every page, while tasks run): ${during.tasks.length} tasks in ${getDuringMs.toFixed(0)} ms; ${mem()}`);
const [again, listAgainMs] = await timed(() => client.list());
console.log(`ListJobs while running: ${again.length} jobs in ${listAgainMs.toFixed(0)} ms; wide-0: ${JSON.stringify(again[0]?.taskCounts)}`);

// (Terminating 1,000,000 tasks one by one takes minutes: the bench just stops everything.)
await worker.stop();
client.close();
await controller.stop();
console.log(`end: ${mem()}`);
rmSync(dir, { recursive: true, force: true });
