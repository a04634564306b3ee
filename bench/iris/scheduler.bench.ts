// Scheduler cycle time: 10,000 pending tasks over 1,000 workers (goal < 100 ms per cycle).
// Side by side with a naive first fit (every task scans every worker and re-evaluates its
// constraints), the baseline the class/cursor design is measured against.
//
//   pnpm bench iris/scheduler [-- --runs N]
import {
  constraintMatches,
  schedule,
  type SchedConstraint,
  type SchedResources,
  type SchedSnapshot,
  type SchedTask,
  type SchedWorker,
} from "../../packages/iris/src/controller/scheduler.ts";
import { integerFlag } from "@marin/iris/toolkit";

const GiB = 1024 ** 3;
const RUNS = integerFlag("runs", 20, { min: 1 });

/** Deterministic PRNG (mulberry32) so every run schedules the same cluster. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const zones = ["us-east", "us-west", "eu-west", "ap-south"];

function workers(n: number, rand: () => number): SchedWorker[] {
  return Array.from({ length: n }, (_, i) => {
    const big = rand() < 0.3;
    const gpu = rand() < 0.1;
    const capacity: SchedResources = {
      cpuMillis: big ? 64_000 : 16_000,
      memoryBytes: (big ? 256 : 64) * GiB,
      devices: gpu ? { gpu: 8 } : {},
    };
    const frac = rand() * 0.5;
    const used: SchedResources = {
      cpuMillis: Math.floor(capacity.cpuMillis * frac),
      memoryBytes: Math.floor(capacity.memoryBytes * frac),
      devices: {},
    };
    return {
      id: `worker-${i}`,
      capacity,
      used,
      attributes: { zone: zones[i % zones.length], rack: String(i % 40), preemptible: rand() < 0.5 ? "true" : "false" },
    };
  });
}

/** Jobs of 1–32 identical replicas from a menu of sizes: what a real queue looks like. */
function realisticPending(n: number, rand: () => number): SchedTask[] {
  const sizes: SchedResources[] = [
    { cpuMillis: 500, memoryBytes: GiB / 2, devices: {} },
    { cpuMillis: 1000, memoryBytes: 2 * GiB, devices: {} },
    { cpuMillis: 4000, memoryBytes: 16 * GiB, devices: {} },
    { cpuMillis: 8000, memoryBytes: 32 * GiB, devices: {} },
    { cpuMillis: 16_000, memoryBytes: 128 * GiB, devices: {} },
    { cpuMillis: 4000, memoryBytes: 32 * GiB, devices: { gpu: 1 } },
    { cpuMillis: 8000, memoryBytes: 64 * GiB, devices: { gpu: 4 } },
  ];
  const constraintMenu: SchedConstraint[][] = [
    [],
    [],
    [],
    [{ key: "zone", op: "EQ", value: "us-east" }],
    [{ key: "zone", op: "IN", values: ["us-west", "eu-west"] }],
    [{ key: "preemptible", op: "NE", value: "true" }],
    [{ key: "rack", op: "LT", value: "10" }],
    [{ key: "zone", op: "EQ", value: "mars-1" }], // matches nothing
  ];
  const out: SchedTask[] = [];
  let job = 0;
  while (out.length < n) {
    const replicas = Math.min(n - out.length, 1 + Math.floor(rand() * 32));
    const request = sizes[Math.floor(rand() * sizes.length)];
    const constraints = constraintMenu[Math.floor(rand() * constraintMenu.length)];
    const gang = rand() < 0.1;
    const jobId = `/bench/job-${job++}`;
    const priority = Math.floor(rand() * 3);
    const submittedAtMs = Math.floor(rand() * 1e6);
    for (let r = 0; r < replicas; r++) {
      out.push({ taskId: `${jobId}/${r}`, jobId, priority, submittedAtMs, request, constraints, ...(gang ? { gangId: jobId } : {}) });
    }
  }
  return out;
}

/** Worst case for the class cache: every task has a request of its own. */
function distinctPending(n: number, rand: () => number): SchedTask[] {
  return Array.from({ length: n }, (_, i) => ({
    taskId: `/bench/solo-${i}/0`,
    jobId: `/bench/solo-${i}`,
    priority: Math.floor(rand() * 3),
    submittedAtMs: i,
    request: { cpuMillis: 100 + Math.floor(rand() * 8000), memoryBytes: Math.floor(rand() * 32 * GiB), devices: {} },
    constraints: [],
  }));
}

/** The baseline: textbook first fit, O(tasks × workers) with constraints evaluated per pair. */
function naive(s: SchedSnapshot): number {
  const cpu = s.workers.map((w) => w.capacity.cpuMillis - w.used.cpuMillis);
  const mem = s.workers.map((w) => w.capacity.memoryBytes - w.used.memoryBytes);
  const dev = s.workers.map((w) => {
    const d: Record<string, number> = {};
    for (const [k, n] of Object.entries(w.capacity.devices)) d[k] = n - (w.used.devices[k] ?? 0);
    return d;
  });
  const order = [...s.pending].sort((a, b) => b.priority - a.priority || a.submittedAtMs - b.submittedAtMs);
  let placed = 0;
  for (const t of order) {
    for (let w = 0; w < s.workers.length; w++) {
      if (cpu[w] < t.request.cpuMillis || mem[w] < t.request.memoryBytes) continue;
      if (!Object.entries(t.request.devices).every(([k, n]) => (dev[w][k] ?? 0) >= n)) continue;
      if (!t.constraints.every((c) => constraintMatches(c, s.workers[w].attributes))) continue;
      cpu[w] -= t.request.cpuMillis;
      mem[w] -= t.request.memoryBytes;
      for (const [k, n] of Object.entries(t.request.devices)) dev[w][k] -= n;
      placed++;
      break;
    }
  }
  return placed;
}

/** Median and p95 wall time, and median CPU time (the machine may be shared: CPU time is the
 * figure that does not move with other load). */
function time(fn: () => void, runs: number): { median: number; p95: number; cpu: number } {
  for (let i = 0; i < 10; i++) fn();
  const ms: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    fn();
    ms.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  ms.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const mid = Math.floor(runs / 2);
  return { median: ms[mid], p95: ms[Math.min(runs - 1, Math.ceil(runs * 0.95) - 1)], cpu: cpu[mid] };
}

const fmt = (x: number): string => `${x.toFixed(1)} ms`;

console.log(`scheduler cycle, 10,000 pending tasks × 1,000 workers, ${RUNS} runs after 10 warm-up (goal < 100 ms)`);
console.log("wall median / p95 and CPU median; cold = the first call in a fresh process\n");
const rows: Record<string, string | number>[] = [];
for (const [label, gen] of [
  ["jobs of 1–32 replicas, 10% gangs", realisticPending],
  ["10,000 distinct requests", distinctPending],
] as const) {
  const rand = rng(42);
  const snapshot: SchedSnapshot = { workers: workers(1000, rand), pending: gen(10_000, rand) };
  const c0 = performance.now();
  const result = schedule(snapshot);
  const cold = performance.now() - c0;
  const ours = time(() => schedule(snapshot), RUNS);
  const base = time(() => naive(snapshot), RUNS);
  rows.push({
    scenario: label,
    "schedule() wall": fmt(ours.median),
    p95: fmt(ours.p95),
    cpu: fmt(ours.cpu),
    cold: fmt(cold),
    "naive wall": fmt(base.median),
    "naive cpu": fmt(base.cpu),
    placed: result.assignments.length,
    unplaced: result.unplaced.length,
  });
}
console.table(rows);
