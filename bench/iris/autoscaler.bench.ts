// The autoscaler: one policy decision over 100,000 pending tasks and 20 scale groups (goal
// < 50 ms), in two shapes — a realistic queue (jobs of 1–64 tasks, some gangs, some constrained)
// and the worst case, 100,000 one-task jobs (one demand entry each).
//
//   pnpm bench iris/autoscaler [-- --runs N --slurm-runs N]
//
// Then the scale-up latency (submit a one-task job with zero workers → running on a fresh Slurm
// worker), beside the floor of a bare `sbatch` of `node -e 0` measured in the same run
// (`slurmScaleUp.ts`; skipped with a notice where Slurm cannot start).
import { decide, type DemandEntry, type PolicyGroup, type PolicyWorker } from "../../packages/iris/src/autoscaler/policy.ts";
import type { SchedConstraint } from "../../packages/iris/src/controller/scheduler.ts";
import { scaleUpLatency } from "./slurmScaleUp.ts";
import { integerFlag } from "@marin/iris/toolkit";

const GiB = 1024 ** 3;
const RUNS = integerFlag("runs", 15, { min: 1 });
const NOW = 1_700_000_000_000;

/** Deterministic PRNG (mulberry32) so every run decides the same cluster. */
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

const pools = ["cpu", "highmem", "gpu", "preemptible"];

/** 20 groups: 4 pools × 5 sizes, 50–500 workers each, with workers in every state. */
function groups(rand: () => number): PolicyGroup[] {
  const out: PolicyGroup[] = [];
  let n = 0;
  for (let i = 0; i < 20; i++) {
    const pool = pools[i % pools.length];
    const size = 2 ** (i % 5); // 1..16 × base
    const max = 50 + Math.floor(rand() * 450);
    const workers: PolicyWorker[] = [];
    const existing = Math.floor(rand() * max * 0.5);
    for (let w = 0; w < existing; w++) {
      const r = rand();
      const state: PolicyWorker["state"] = r < 0.1 ? "pending" : r < 0.2 ? "booting" : r < 0.95 ? "ready" : "draining";
      const busy = state === "ready" || state === "draining" ? rand() < 0.8 : false;
      workers.push({
        workerId: `g${i}-w${n}`,
        providerId: String(n++),
        state,
        busy,
        startedAtMs: NOW - Math.floor(rand() * 600_000),
        ...(state === "ready" && !busy ? { idleSinceMs: NOW - Math.floor(rand() * 600_000) } : {}),
        ...(state === "pending" ? { detail: `slurm job ${n} PENDING: Resources` } : {}),
      });
    }
    out.push({
      config: {
        name: `${pool}-${size}x`,
        provider: "slurm",
        minWorkers: i % 3 === 0 ? 2 : 0,
        maxWorkers: max,
        idleTimeoutMs: 300_000,
        bootTimeoutMs: 900_000,
        priority: i % 4,
        worker: { cpuMillis: 4000 * size, memoryBytes: (pool === "highmem" ? 32 : 8) * size * GiB, devices: pool === "gpu" ? { gpu: size } : {}, attributes: { pool } },
      },
      workers,
      boot: { failedBoots: 0, backoffUntilMs: 0 },
    });
  }
  return out;
}

function entry(i: number, tasks: number, rand: () => number): DemandEntry {
  const cpu = [500, 1000, 2000, 4000, 8000, 16_000][Math.floor(rand() * 6)];
  const constrained = rand() < 0.3;
  const constraints: SchedConstraint[] = constrained ? [{ key: "pool", op: "EQ", value: pools[Math.floor(rand() * pools.length)] }] : [];
  const gpu = constraints[0]?.value === "gpu" && rand() < 0.5;
  return {
    jobId: `job-${i}`,
    jobName: `/user${i % 50}/job-${i}`,
    priority: Math.floor(rand() * 3),
    submittedAtMs: NOW - 1_000_000 + i,
    request: { cpuMillis: cpu, memoryBytes: Math.floor(rand() * 8 + 1) * GiB, devices: gpu ? { gpu: 1 } : {} },
    constraints,
    tasks,
    gang: tasks > 1 && tasks <= 16 && rand() < 0.2,
  };
}

function realistic(total: number, rand: () => number): DemandEntry[] {
  const out: DemandEntry[] = [];
  let left = total;
  for (let i = 0; left > 0; i++) {
    const tasks = Math.min(left, 1 + Math.floor(rand() * 64));
    out.push(entry(i, tasks, rand));
    left -= tasks;
  }
  return out;
}

function singles(total: number, rand: () => number): DemandEntry[] {
  return Array.from({ length: total }, (_, i) => entry(i, 1, rand));
}

function measure(name: string, demand: DemandEntry[], gs: PolicyGroup[]): void {
  const tasks = demand.reduce((a, d) => a + d.tasks, 0);
  const times: number[] = [];
  let out = decide({ nowMs: NOW, groups: gs, demand });
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    out = decide({ nowMs: NOW, groups: gs, demand });
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const p = (q: number): string => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(1);
  const started = out.decisions.filter((d) => d.kind === "start").reduce((a, d) => a + (d as { count: number }).count, 0);
  console.log(
    `${name.padEnd(34)} ${String(tasks).padStart(7)} tasks ${String(demand.length).padStart(7)} entries  min ${times[0].toFixed(1)} ms  median ${p(0.5)} ms  p90 ${p(0.9)} ms  (goal < 50 ms)  ` +
      `→ ${out.decisions.length} decisions, +${started} workers, ${out.notes.filter((n) => n !== undefined).length} notes`,
  );
}

console.log(`autoscaler decision, 20 groups, ${RUNS} runs each:`);
const rand = rng(42);
const gs = groups(rand);
measure("realistic queue (1–64 tasks/job)", realistic(100_000, rng(7)), gs);
measure("100,000 one-task jobs", singles(100_000, rng(8)), gs);

// ---- SCALE-UP LATENCY (slurm-provider branch) -------------------------------------------------
// A one-task job submitted with zero workers → its task RUNNING on a fresh Slurm worker, beside a
// bare `sbatch` of `node -e 0` in the same run (goal: ≤ floor + 3 s); on the test Slurm of
// @marin/iris/testing (root and Debian's slurm-wlm and munge needed, else skipped with a notice).
// `--slurm-runs N` (default 3).
await scaleUpLatency(integerFlag("slurm-runs", 3, { min: 1 }));
