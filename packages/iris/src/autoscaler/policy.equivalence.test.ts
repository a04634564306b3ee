// The fast policy (demand grouped into classes, cursors per shape, shared notes) against the
// per-entry policy it replaced (policyReference.ts): on random clusters and queues — repeated
// shapes, constraints in either order, gangs, priorities out of age order, backoffs, groups at
// max — both give exactly the same decisions, notes, routed demand and boot records.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { SchedConstraint } from "../controller/scheduler.ts";
import { decide, type DemandEntry, type PolicyGroup, type PolicyInput, type PolicyWorker } from "./policy.ts";
import { decideReference } from "./policyReference.ts";

const GiB = 1024 ** 3;
const NOW = 1_000_000_000;
const pools = ["a", "b", "c"];

const arbWorker = fc.record({
  state: fc.constantFrom<PolicyWorker["state"]>("pending", "booting", "ready", "draining"),
  busy: fc.boolean(),
  startedAgo: fc.integer({ min: 0, max: 900_000 }),
  idleAgo: fc.integer({ min: 0, max: 900_000 }),
  detail: fc.option(fc.constantFrom("slurm job 1 PENDING: Resources", "slurm job 2 PENDING: Priority"), { nil: undefined }),
});

const arbGroup = fc.record({
  min: fc.integer({ min: 0, max: 3 }),
  max: fc.integer({ min: 0, max: 12 }),
  priority: fc.integer({ min: 0, max: 2 }),
  cpu: fc.constantFrom(1000, 2000, 4000, 8000),
  memGiB: fc.constantFrom(2, 8, 16),
  gpu: fc.constantFrom(0, 0, 1, 2),
  pool: fc.constantFrom(...pools),
  failedBoots: fc.integer({ min: 0, max: 3 }),
  backoff: fc.boolean(),
  workers: fc.array(arbWorker, { maxLength: 10 }),
});

// Few distinct values: many entries share a class, which is what the fast policy exploits.
const arbConstraint: fc.Arbitrary<SchedConstraint> = fc.oneof(
  fc.record({ key: fc.constant("pool"), op: fc.constantFrom<"EQ" | "NE">("EQ", "NE"), value: fc.constantFrom(...pools) }),
  fc.record({ key: fc.constant("pool"), op: fc.constant<"IN">("IN"), values: fc.subarray(pools, { minLength: 1 }) }),
  fc.record({ key: fc.constant("iris.group"), op: fc.constant<"EQ">("EQ"), value: fc.constantFrom("g0", "g1") }),
  fc.record({ key: fc.constant("pool"), op: fc.constant<"EXISTS">("EXISTS") }),
);

const arbDemand = fc.record({
  tasks: fc.integer({ min: 0, max: 12 }),
  gang: fc.boolean(),
  cpu: fc.constantFrom(0, 500, 1000, 2000, 4000, 16_000),
  memGiB: fc.constantFrom(0, 1, 4, 32),
  gpu: fc.constantFrom(0, 0, 0, 1, 2),
  priority: fc.integer({ min: 0, max: 2 }),
  age: fc.integer({ min: 0, max: 5 }),
  constraints: fc.array(arbConstraint, { maxLength: 2 }),
});

type G = typeof arbGroup extends fc.Arbitrary<infer T> ? T : never;
type D = typeof arbDemand extends fc.Arbitrary<infer T> ? T : never;

function build(gs: G[], ds: D[], repeat: number, byAge: boolean): PolicyInput {
  let n = 0;
  const groups: PolicyGroup[] = gs.map((g, i) => ({
    config: {
      name: `g${i}`,
      provider: "local",
      minWorkers: g.min,
      maxWorkers: g.max,
      idleTimeoutMs: 120_000,
      bootTimeoutMs: 600_000,
      priority: g.priority,
      worker: { cpuMillis: g.cpu, memoryBytes: g.memGiB * GiB, devices: g.gpu > 0 ? ({ gpu: g.gpu } as Record<string, number>) : {}, attributes: { pool: g.pool } },
    },
    workers: g.workers.map((w) => ({
      workerId: `w${n}`,
      providerId: String(n++),
      state: w.state,
      busy: w.state === "ready" || w.state === "draining" ? w.busy : false,
      startedAtMs: NOW - w.startedAgo,
      ...(w.state === "ready" && !w.busy ? { idleSinceMs: NOW - w.idleAgo } : {}),
      ...(w.state === "pending" || w.state === "booting" ? { detail: w.detail } : {}),
    })),
    boot: { failedBoots: g.failedBoots, backoffUntilMs: g.backoff ? NOW + 60_000 : 0 },
  }));
  // Each drawn entry several times (fresh objects, constraints reversed every other time).
  const demand: DemandEntry[] = [];
  for (let k = 0; k < repeat; k++) {
    ds.forEach((d, i) => {
      const j = demand.length;
      demand.push({
        jobId: `j${j}`,
        jobName: `/u/job-${i % 3 === 0 ? 0 : j}`,
        priority: d.priority,
        submittedAtMs: byAge ? NOW - 100_000 + j : NOW - 100_000 + d.age,
        request: { cpuMillis: d.cpu, memoryBytes: d.memGiB * GiB, devices: d.gpu > 0 ? { gpu: d.gpu } : { gpu: 0 } },
        constraints: k % 2 === 0 ? d.constraints.map((c) => ({ ...c })) : [...d.constraints].reverse(),
        tasks: d.tasks,
        gang: d.gang,
      });
    });
  }
  return { nowMs: NOW, groups, demand };
}

describe("decide() equals the per-entry reference policy", () => {
  it("on random clusters and queues", () => {
    fc.assert(
      fc.property(
        fc.array(arbGroup, { minLength: 1, maxLength: 4 }),
        fc.array(arbDemand, { maxLength: 10 }),
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        (gs, ds, repeat, byAge) => {
          const input = build(gs, ds, repeat, byAge);
          const fast = decide(input);
          const ref = decideReference(input);
          expect(fast.decisions).toEqual(ref.decisions);
          expect(fast.notes).toEqual(ref.notes);
          expect([...fast.routed]).toEqual([...ref.routed]);
          expect([...fast.boot]).toEqual([...ref.boot]);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("on a large queue of repeated shapes (the benchmark's kind)", () => {
    fc.assert(
      fc.property(fc.array(arbGroup, { minLength: 2, maxLength: 6 }), fc.array(arbDemand, { minLength: 5, maxLength: 20 }), (gs, ds) => {
        const input = build(gs, ds, 40, true);
        const fast = decide(input);
        const ref = decideReference(input);
        expect(fast.decisions).toEqual(ref.decisions);
        expect(fast.notes).toEqual(ref.notes);
        expect([...fast.routed]).toEqual([...ref.routed]);
      }),
      { numRuns: 60 },
    );
  });
});
