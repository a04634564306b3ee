// Scheduling fairness under a huge pending job (issue 30): other users' LaunchJob latency and a
// small job's submit-to-assigned time, idle vs. while
//   A. a 100,000-member gang waits (submitted before any worker registered, inside its
//      scheduling timeout), and
//   B. 100,000 single tasks (one job) wait for busy workers.
// Goal: within 2× of idle. Also the longest scheduling pass seen in each phase. The controller
// runs in this process (real gRPC on loopback for the client, real SQLite); workers are played
// through the controller state's own register/reconcile calls and never run anything (attempts
// stay ASSIGNED).
//
//   pnpm bench iris/fairness [-- --members N --probes N]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Controller, IrisClient } from "@marin/iris";
import { integerFlag } from "@marin/iris/toolkit";

const arg = (name: string, dflt: number): number => integerFlag(name, dflt, { min: 0 });
const MEMBERS = arg("members", 100_000);
const PROBES = arg("probes", 30);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!;
}
const fmt = (xs: number[]): string => `p50 ${pct(xs, 0.5).toFixed(1)} ms, p90 ${pct(xs, 0.9).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-fair-"));
const controller = await Controller.start({ port: 0, dbPath: path.join(dir, "c.sqlite"), schedulingTimeoutMs: 10 * 60_000, workerTimeoutMs: 10 * 60_000 });
const client = IrisClient.connect(controller.address);

// The longest scheduling pass: timed around the state's pass (the controller's own timer too).
let longestPass = 0;
const state = controller.state.jobs as unknown as { schedulePass(): unknown };
const pass = state.schedulePass.bind(state);
state.schedulePass = () => {
  const t0 = performance.now();
  try {
    return pass();
  } finally {
    longestPass = Math.max(longestPass, performance.now() - t0);
  }
};

let seq = 0;
async function launchLatencies(label: string, user: string, constraints: { key: string; op: "EQ"; value: string }[] = []): Promise<number[]> {
  const xs: number[] = [];
  for (let i = 0; i < PROBES; i++) {
    const t0 = performance.now();
    const job = await client.submit({ name: `/${user}/probe-${label}-${seq++}`, entrypoint: { command: ["true"] }, resources: { cpuMillis: 1 }, constraints });
    xs.push(performance.now() - t0);
    await client.terminate(job.name);
  }
  return xs;
}

const workerIds: string[] = [];
const register = (id: string, cpuMillis: number, pool: string) => {
  workerIds.push(id);
  return controller.state.workers.registerWorker({ workerId: id, host: "127.0.0.1", attributes: { pool }, capacity: { cpuMillis, memoryBytes: 64 * 1024 ** 3, devices: {} } });
};
/** The raw workers report that they run nothing: what was stopped frees its capacity. */
async function reconcileAll(): Promise<void> {
  for (const id of workerIds) controller.state.workers.reconcile(id, [], { healthy: true });
  await new Promise((r) => setImmediate(r));
}

/** Polls (every 2 ms) until job `name`'s first task is ASSIGNED; ms since `t0`. */
async function assignedAfter(name: string, t0: number): Promise<number> {
  for (;;) {
    const st = await client.job(name).status();
    if (st.tasks.some((t) => t.state === "ASSIGNED")) return performance.now() - t0;
    if (performance.now() - t0 > 60_000) return NaN;
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Submit → the small job's task is ASSIGNED to a worker. */
async function submitToAssigned(user: string, constraints: { key: string; op: "EQ"; value: string }[] = []): Promise<number> {
  const t0 = performance.now();
  const job = await client.submit({ name: `/${user}/small-${seq++}`, entrypoint: { command: ["true"] }, resources: { cpuMillis: 100 }, constraints });
  const ms = await assignedAfter(job.name, t0);
  await client.terminate(job.name);
  await reconcileAll();
  return ms;
}

const results: string[] = [];
const report = (line: string): void => {
  results.push(line);
  console.log(line);
};

// ---- idle ------------------------------------------------------------------------------------
await launchLatencies("warm", "bob");
longestPass = 0;
const idle = await launchLatencies("idle", "bob");
report(`idle (no workers):            LaunchJob ${fmt(idle)}; longest pass ${longestPass.toFixed(1)} ms`);

// ---- A: a huge gang waits with no worker registered ------------------------------------------
let t0 = performance.now();
await client.submit({ name: "/alice/huge-gang", entrypoint: { command: ["true"] }, replicas: MEMBERS, gang: true, resources: { cpuMillis: 1000 } });
report(`A: submitting the ${MEMBERS}-member gang took ${(performance.now() - t0).toFixed(0)} ms`);
longestPass = 0;
const underGang = await launchLatencies("gang", "bob");
report(`A: gang of ${MEMBERS} pending:  LaunchJob ${fmt(underGang)}; longest pass ${longestPass.toFixed(1)} ms (${(pct(underGang, 0.5) / pct(idle, 0.5)).toFixed(2)}× idle p50)`);
const gangState = (await client.job("/alice/huge-gang").status()).state;
report(`A: the gang is still ${gangState} (inside its scheduling timeout)`);
await client.terminate("/alice/huge-gang");

// ---- B: 100,000 single tasks wait for busy workers -------------------------------------------
await register("busy-1", 1000, "shared");
await register("busy-2", 1000, "shared");
await register("free", 1000, "free");
longestPass = 0;
const idleWorkers: number[] = [];
for (let i = 0; i < 5; i++) {
  // Idle twin: a free worker, nothing else pending.
  idleWorkers.push(await submitToAssigned("bob", [{ key: "pool", op: "EQ", value: "free" }]));
}
const idleLaunch = await launchLatencies("idle2", "bob", [{ key: "pool", op: "EQ", value: "nowhere" }]);
report(`B idle (3 workers):            LaunchJob ${fmt(idleLaunch)}; submit→assigned ${fmt(idleWorkers)}; longest pass ${longestPass.toFixed(1)} ms`);
// Fill both shared workers, then queue MEMBERS single tasks behind them.
await client.submit({
  name: "/alice/filler",
  entrypoint: { command: ["true"] },
  replicas: 2,
  resources: { cpuMillis: 1000 },
  constraints: [{ key: "pool", op: "EQ", value: "shared" }],
});
t0 = performance.now();
await client.submit({
  name: "/alice/many",
  entrypoint: { command: ["true"] },
  replicas: MEMBERS,
  resources: { cpuMillis: 1000 },
  constraints: [{ key: "pool", op: "EQ", value: "shared" }],
});
report(`B: submitting ${MEMBERS} single tasks took ${(performance.now() - t0).toFixed(0)} ms`);
longestPass = 0;
const underMany = await launchLatencies("many", "bob", [{ key: "pool", op: "EQ", value: "nowhere" }]);
const manyAssigned: number[] = [];
for (let i = 0; i < 5; i++) manyAssigned.push(await submitToAssigned("bob", [{ key: "pool", op: "EQ", value: "free" }]));
report(
  `B: ${MEMBERS} tasks pending:    LaunchJob ${fmt(underMany)}; submit→assigned ${fmt(manyAssigned)}; longest pass ${longestPass.toFixed(1)} ms (${(pct(underMany, 0.5) / pct(idleLaunch, 0.5)).toFixed(2)}× idle p50)`,
);
// Fairness: a freed shared slot goes to the other user's small job, not the next of 100,000.
const carol = await client.submit({
  name: "/carol/small",
  entrypoint: { command: ["true"] },
  resources: { cpuMillis: 1000 },
  constraints: [{ key: "pool", op: "EQ", value: "shared" }],
});
t0 = performance.now();
await client.terminate("/alice/filler");
await reconcileAll();
const fair = await assignedAfter(carol.name, t0);
report(`B: carol's job queued behind ${MEMBERS} older tasks, shared workers freed → assigned: ${Number.isNaN(fair) ? "not within 60 s" : `${fair.toFixed(1)} ms`}`);

client.close();
await controller.stop();
fs.rmSync(dir, { recursive: true, force: true });
