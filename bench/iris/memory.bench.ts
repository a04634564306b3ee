// Controller memory given back after large specs (issue 30): RSS and V8 heap of a controller
// (in this process, real gRPC on loopback and SQLite) idle, while large specs are live, and after
// they ended. Large specs: jobs with ~500 KiB specs each (250 KB of env and 250 KB of argv: the per-field limits), and a
// 100,000-member gang; no workers, so everything waits and is then terminated.
//
//   pnpm bench iris/memory [-- --jobs N --cycles N]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import { Controller, IrisClient } from "@marin/iris";
import { integerFlag } from "@marin/iris/toolkit";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

const arg = (name: string, dflt: number): number => integerFlag(name, dflt, { min: 0 });
const JOBS = arg("jobs", 200);
const CYCLES = arg("cycles", 2);
const MiB = 1024 * 1024;

async function settle(): Promise<{ rss: number; heap: number; external: number }> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 200));
  }
  const m = process.memoryUsage();
  return { rss: m.rss / MiB, heap: m.heapUsed / MiB, external: (m.external + m.arrayBuffers) / MiB };
}
const fmt = (m: { rss: number; heap: number; external: number }): string => `RSS ${m.rss.toFixed(0)} MiB, heap ${m.heap.toFixed(0)} MiB, external ${m.external.toFixed(0)} MiB`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-mem-"));
const controller = await Controller.start({ port: 0, dbPath: path.join(dir, "c.sqlite"), schedulingTimeoutMs: 10 * 60_000 });
const client = IrisClient.connect(controller.address);
// Warm up the paths once, so that "idle" includes loaded code.
const warm = await client.submit({ name: "/bob/warm", entrypoint: { command: ["true"] }, resources: { cpuMillis: 1 } });
await client.terminate(warm.name);
await (await client.job(warm.name)).status();
const idle = await settle();
console.log(`idle:                               ${fmt(idle)}`);

const env: Record<string, string> = {};
for (let i = 0; i < 250; i++) env[`V${i}`] = "x".repeat(1000);
const argv = ["true", ...Array.from({ length: 250 }, () => "y".repeat(1000))];
for (let cycle = 1; cycle <= CYCLES; cycle++) {
  const names: string[] = [];
  for (let i = 0; i < JOBS; i++) {
    const job = await client.submit({ name: `/alice/big-${cycle}-${i}`, entrypoint: { command: argv }, env, replicas: 100, resources: { cpuMillis: 1 } });
    names.push(job.name);
  }
  const gang = await client.submit({ name: `/alice/gang-${cycle}`, entrypoint: { command: ["true"] }, replicas: 100_000, gang: true, resources: { cpuMillis: 1000 } });
  for (const n of names.slice(0, 20)) await client.job(n).status();
  const live = await settle();
  console.log(`cycle ${cycle}: ${JOBS} ~500 KiB specs + 100k gang live: ${fmt(live)}`);
  for (const n of names) await client.terminate(n);
  await client.terminate(gang.name);
  for (const n of names.slice(0, 20)) await client.job(n).status();
  const after = await settle();
  console.log(`cycle ${cycle}: after they ended:                   ${fmt(after)}`);
  console.log(
    `cycle ${cycle}: heap ${((after.heap / idle.heap) * 100).toFixed(0)}% of idle; RSS ${(after.rss - idle.rss).toFixed(0)} MiB above idle (${(((after.rss - idle.rss) / (live.rss - idle.rss)) * 100).toFixed(0)}% of the growth)`,
  );
}

client.close();
await controller.stop();
fs.rmSync(dir, { recursive: true, force: true });
