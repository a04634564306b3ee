// The autoscaler's policy on a fake clock (plain numbers) and fake provider state: unit cases for
// each rule and its reason, and properties over random clusters (never above max or below min, no
// half gang, no busy worker stopped, the same input gives the same decisions).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backoffMs, decide, type DemandEntry, type PolicyGroup, type PolicyInput, type PolicyWorker } from "./policy.ts";
import type { ScaleGroupConfig } from "./provider.ts";

const GiB = 1024 ** 3;
const T0 = 1_000_000_000;

function group(name: string, o: Partial<ScaleGroupConfig> = {}, workers: PolicyWorker[] = [], failedBoots = 0, backoffUntilMs = 0): PolicyGroup {
  return {
    config: {
      name,
      provider: "local",
      minWorkers: 0,
      maxWorkers: 16,
      idleTimeoutMs: 120_000,
      bootTimeoutMs: 300_000,
      priority: 0,
      worker: { cpuMillis: 4000, memoryBytes: 8 * GiB, devices: {}, attributes: {} },
      ...o,
    },
    workers,
    boot: { failedBoots, backoffUntilMs },
  };
}

function demand(jobName: string, tasks: number, o: Partial<DemandEntry> = {}): DemandEntry {
  return {
    jobId: `${jobName}#1`,
    jobName,
    priority: 0,
    submittedAtMs: T0 - 1000,
    request: { cpuMillis: 4000, memoryBytes: GiB, devices: {} },
    constraints: [],
    tasks,
    gang: false,
    ...o,
  };
}

let seq = 0;
function worker(state: PolicyWorker["state"], o: Partial<PolicyWorker> = {}): PolicyWorker {
  seq++;
  return { workerId: `w${seq}`, providerId: `p${seq}`, state, busy: false, startedAtMs: T0 - 10_000, ...(state === "ready" ? { idleSinceMs: T0 - 5000 } : {}), ...o };
}

const starts = (out: ReturnType<typeof decide>): { group: string; count: number; reason: string }[] =>
  out.decisions.filter((d) => d.kind === "start").map((d) => ({ group: d.group, count: (d as { count: number }).count, reason: d.reason }));
const noteOf = (out: ReturnType<typeof decide>, jobId: string, input?: PolicyInput): string | undefined =>
  out.notes[(input ?? lastInput).demand.findIndex((d) => d.jobId === jobId)];
let lastInput: PolicyInput;
const run = (input: PolicyInput): ReturnType<typeof decide> => {
  lastInput = input;
  return decide(input);
};
const reasons = (out: ReturnType<typeof decide>, kind: string): string[] => out.decisions.filter((d) => d.kind === kind).map((d) => d.reason);

describe("decide", () => {
  it("starts one worker per task that does not share a worker, from zero", () => {
    const out = run({ nowMs: T0, groups: [group("cpu")], demand: [demand("/alice/job", 3)] });
    expect(starts(out)).toEqual([{ group: "cpu", count: 3, reason: "+3 cpu for /alice/job" }]);
    expect(noteOf(out, "/alice/job#1")).toBe("waiting for 3 cpu workers to boot");
    expect(out.routed.get("cpu")).toEqual({ units: 1, tasks: 3 });
  });

  it("packs small tasks several to a worker", () => {
    const out = run({ nowMs: T0, groups: [group("cpu")], demand: [demand("/alice/job", 5, { request: { cpuMillis: 1000, memoryBytes: GiB, devices: {} } })] });
    expect(starts(out)).toEqual([{ group: "cpu", count: 2, reason: "+2 cpu for /alice/job" }]);
  });

  it("provisions a gang of n as n workers at once, one member each", () => {
    const out = run({ nowMs: T0, groups: [group("cpu")], demand: [demand("/alice/train", 2, { gang: true, request: { cpuMillis: 1000, memoryBytes: GiB, devices: {} } })] });
    expect(starts(out)).toEqual([{ group: "cpu", count: 2, reason: "+2 cpu for /alice/train (gang of 2)" }]);
  });

  it("never half-provisions a gang: a gang that does not fit under max starts nothing", () => {
    const g = group("cpu", { maxWorkers: 3 }, [worker("ready", { busy: true })]);
    const out = run({ nowMs: T0, groups: [g], demand: [demand("/alice/train", 3, { gang: true })] });
    expect(starts(out)).toEqual([]);
    expect(reasons(out, "hold")).toEqual(["cpu at max 3"]);
    expect(noteOf(out, "/alice/train#1")).toBe("cpu at max 3");
  });

  it("stops at max and says so for what is left", () => {
    const out = run({ nowMs: T0, groups: [group("cpu", { maxWorkers: 2 })], demand: [demand("/alice/job", 3)] });
    expect(starts(out)).toEqual([{ group: "cpu", count: 2, reason: "+2 cpu for /alice/job" }]);
    expect(reasons(out, "hold")).toEqual(["cpu at max 2"]);
    expect(noteOf(out, "/alice/job#1")).toBe("waiting for 2 cpu workers to boot; 1 more: cpu at max 2");
  });

  it("counts workers already booting, and names the provider's detail", () => {
    const g = group("cpu", {}, [worker("pending", { detail: "slurm job 812 PENDING: Resources" }), worker("booting")]);
    const out = run({ nowMs: T0, groups: [g], demand: [demand("/alice/job", 2)] });
    expect(starts(out)).toEqual([]);
    expect(noteOf(out, "/alice/job#1")).toBe("waiting for 2 cpu workers to boot (slurm job 812 PENDING: Resources)");
  });

  it("says when no group can hold a task", () => {
    const out = run({ nowMs: T0, groups: [group("cpu")], demand: [demand("/alice/big", 1, { request: { cpuMillis: 64_000, memoryBytes: GiB, devices: {} } })] });
    expect(starts(out)).toEqual([]);
    expect(noteOf(out, "/alice/big#1")).toMatch(/^no group can hold cpu 64, memory 1\.0 GiB \(largest worker: cpu, cpu 4, memory 8\.0 GiB\)$/);
  });

  it("routes by group priority, then config order, and spills over when a group is at max", () => {
    const groups = [group("a", { maxWorkers: 1 }), group("b", { priority: 5, maxWorkers: 1 }), group("c", { maxWorkers: 5 })];
    const out = run({ nowMs: T0, groups, demand: [demand("/u/j", 3)] });
    expect(starts(out).map((s) => [s.group, s.count])).toEqual([
      ["a", 1],
      ["b", 1],
      ["c", 1],
    ]);
    // b (priority 5) took the first task: its start is the first routed.
    expect(noteOf(out, "/u/j#1")).toBe("waiting for 1 b worker to boot; waiting for 1 a worker to boot; waiting for 1 c worker to boot");
  });

  it("matches constraints against the group's attributes (and iris.group)", () => {
    const groups = [
      group("cpu", { worker: { cpuMillis: 4000, memoryBytes: 8 * GiB, devices: {}, attributes: { pool: "cpu" } } }),
      group("gpu", { worker: { cpuMillis: 4000, memoryBytes: 8 * GiB, devices: { gpu: 1 }, attributes: { pool: "gpu" } } }),
    ];
    const out = run({
      nowMs: T0,
      groups,
      demand: [demand("/u/g", 1, { constraints: [{ key: "pool", op: "EQ", value: "gpu" }] }), demand("/u/c", 1, { constraints: [{ key: "iris.group", op: "EQ", value: "cpu" }] })],
    });
    expect(starts(out).map((s) => s.reason)).toEqual(["+1 cpu for /u/c", "+1 gpu for /u/g"]);
  });

  it("keeps minWorkers", () => {
    const out = run({ nowMs: T0, groups: [group("cpu", { minWorkers: 2 }, [worker("ready")])], demand: [] });
    expect(starts(out)).toEqual([{ group: "cpu", count: 1, reason: "+1 cpu to keep min 2" }]);
  });

  it("stops idle workers past idleTimeout, never below min and never a busy one", () => {
    const idle = (ago: number): PolicyWorker => worker("ready", { idleSinceMs: T0 - ago });
    const ws = [idle(600_000), idle(500_000), idle(10_000), worker("ready", { busy: true, idleSinceMs: undefined })];
    const out = run({ nowMs: T0, groups: [group("cpu", { minWorkers: 2 }, ws)], demand: [] });
    const stops = out.decisions.filter((d) => d.kind === "stop");
    expect(stops.map((d) => (d as { workerId: string }).workerId)).toEqual([ws[0].workerId, ws[1].workerId]);
    expect(stops[0].reason).toBe(`-1 cpu: ${ws[0].workerId} idle for 10 min`);
    const min3 = run({ nowMs: T0, groups: [group("cpu", { minWorkers: 3 }, ws)], demand: [] });
    expect(min3.decisions.filter((d) => d.kind === "stop")).toHaveLength(1);
  });

  it("does not stop an idle worker that pending demand is about to use", () => {
    const w = worker("ready", { idleSinceMs: T0 - 600_000 });
    const out = run({ nowMs: T0, groups: [group("cpu", {}, [w])], demand: [demand("/u/j", 1)] });
    expect(out.decisions).toEqual([]);
    expect(noteOf(out, "/u/j#1")).toBe("placing on 1 idle cpu worker");
  });

  it("stops a drained worker once it holds nothing", () => {
    const d = worker("draining");
    const busy = worker("draining", { busy: true });
    const out = run({ nowMs: T0, groups: [group("cpu", {}, [d, busy])], demand: [] });
    expect(out.decisions).toEqual([{ kind: "stop", group: "cpu", workerId: d.workerId, providerId: d.providerId, reason: `-1 cpu: ${d.workerId} drained` }]);
  });

  it("cancels a boot past bootTimeout and backs off exponentially", () => {
    const w = worker("pending", { startedAtMs: T0 - 300_000, detail: "slurm job 9 PENDING: Resources" });
    const out = run({ nowMs: T0, groups: [group("cpu", {}, [w], 2, 0)], demand: [demand("/u/j", 1)] });
    expect(reasons(out, "cancel")).toEqual([`cpu: ${w.workerId} not registered within 5 min (slurm job 9 PENDING: Resources), cancelled; boot failed 3×, backing off 4 min`]);
    expect(out.boot.get("cpu")).toEqual({ failedBoots: 3, backoffUntilMs: T0 + 240_000 });
    expect(starts(out)).toEqual([]);
    expect(reasons(out, "hold")).toEqual(["cpu: boot failed 3×, backing off 4 min"]);
    // After the backoff the group starts again.
    const later = run({ nowMs: T0 + 240_000, groups: [group("cpu", {}, [], 3, T0 + 240_000)], demand: [demand("/u/j", 1)] });
    expect(starts(later)).toHaveLength(1);
    expect([1, 2, 3, 4, 10].map(backoffMs)).toEqual([60_000, 120_000, 240_000, 480_000, 1_800_000]);
  });
});

// ---- properties ----------------------------------------------------------------------------------

const arbWorker = fc.record({
  state: fc.constantFrom<PolicyWorker["state"]>("pending", "booting", "ready", "draining"),
  busy: fc.boolean(),
  startedAgo: fc.integer({ min: 0, max: 900_000 }),
  idleAgo: fc.integer({ min: 0, max: 900_000 }),
});

const arbGroup = fc
  .record({
    min: fc.integer({ min: 0, max: 4 }),
    extra: fc.integer({ min: 1, max: 6 }),
    priority: fc.integer({ min: 0, max: 2 }),
    cpu: fc.constantFrom(1000, 2000, 4000),
    failedBoots: fc.integer({ min: 0, max: 3 }),
    backoff: fc.boolean(),
    workers: fc.array(arbWorker, { maxLength: 8 }),
  })
  .map((g) => ({ ...g, workers: g.workers.slice(0, g.min + g.extra) }));

const arbDemand = fc.record({
  tasks: fc.integer({ min: 1, max: 6 }),
  gang: fc.boolean(),
  cpu: fc.constantFrom(500, 1000, 2000, 4000, 8000),
  priority: fc.integer({ min: 0, max: 2 }),
});

type GroupArb = typeof arbGroup extends fc.Arbitrary<infer T> ? T : never;
type DemandArb = typeof arbDemand extends fc.Arbitrary<infer T> ? T : never;

function build(groups: GroupArb[], demands: DemandArb[]): PolicyInput {
  let n = 0;
  return {
    nowMs: T0,
    groups: groups.map((g, gi) => ({
      config: {
        name: `g${gi}`,
        provider: "local",
        minWorkers: g.min,
        maxWorkers: g.min + g.extra,
        idleTimeoutMs: 300_000,
        bootTimeoutMs: 600_000,
        priority: g.priority,
        worker: { cpuMillis: g.cpu, memoryBytes: 8 * GiB, devices: {}, attributes: {} },
      },
      workers: g.workers.map((w) => {
        n++;
        const ready = w.state === "ready" || w.state === "draining";
        return {
          workerId: `w${n}`,
          providerId: `p${n}`,
          state: w.state,
          busy: ready && w.busy,
          startedAtMs: T0 - w.startedAgo,
          ...(w.state === "ready" && !w.busy ? { idleSinceMs: T0 - w.idleAgo } : {}),
        };
      }),
      boot: { failedBoots: g.failedBoots, backoffUntilMs: g.backoff ? T0 + 60_000 : 0 },
    })),
    demand: demands.map((d, i) => ({
      jobId: `j${i}`,
      jobName: `/u/j${i}`,
      priority: d.priority,
      submittedAtMs: T0 - 1000 + i,
      request: { cpuMillis: d.cpu, memoryBytes: GiB, devices: {} },
      constraints: [],
      tasks: d.tasks,
      gang: d.gang,
    })),
  };
}

describe("decide (properties)", () => {
  const arbInput = fc.tuple(fc.array(arbGroup, { minLength: 1, maxLength: 4 }), fc.array(arbDemand, { maxLength: 8 })).map(([g, d]) => build(g, d));

  it("never goes above max, never below min by stopping, never stops a busy worker, never half a gang", () => {
    fc.assert(
      fc.property(arbInput, (input) => {
        const out = decide(input);
        for (const g of input.groups) {
          const c = g.config;
          const mine = out.decisions.filter((d) => d.group === c.name);
          const started = mine.filter((d) => d.kind === "start").reduce((a, d) => a + (d as { count: number }).count, 0);
          const gone = new Set(mine.filter((d) => d.kind === "stop" || d.kind === "cancel").map((d) => (d as { workerId: string }).workerId));
          const liveBefore = g.workers.filter((w) => w.state !== "draining" && !gone.has(w.workerId));
          const after = liveBefore.length + started;
          expect(after).toBeLessThanOrEqual(c.maxWorkers);
          // Idle stops never take the group below min.
          const idleStops = mine.filter((d) => d.kind === "stop" && !d.reason.endsWith("drained"));
          if (idleStops.length > 0) expect(after).toBeGreaterThanOrEqual(c.minWorkers);
          // Without a backoff, min is kept.
          const boot = out.boot.get(c.name)!;
          if (boot.backoffUntilMs <= input.nowMs) expect(after).toBeGreaterThanOrEqual(c.minWorkers);
          // Never a busy worker stopped.
          for (const d of mine) {
            if (d.kind !== "stop") continue;
            const w = g.workers.find((x) => x.workerId === d.workerId)!;
            expect(w.busy).toBe(false);
          }
          // A gang's start covers the whole gang with the workers the group had free or had
          // just started for earlier demand (one member per worker).
          let startedBefore = 0;
          for (const d of mine) {
            if (d.kind !== "start") continue;
            const count = (d as { count: number }).count;
            const m = /\(gang of (\d+)\)$/.exec(d.reason);
            if (m) {
              const n = Number(m[1]);
              const free = g.workers.filter((w) => !gone.has(w.workerId) && (w.state === "pending" || w.state === "booting" || (w.state === "ready" && !w.busy))).length;
              expect(count).toBeLessThanOrEqual(n);
              expect(count + free + startedBefore).toBeGreaterThanOrEqual(n);
            }
            startedBefore += count;
          }
        }
      }),
      { numRuns: 400 },
    );
  });

  it("gives the same decisions for the same input (and for its workers in any order)", () => {
    fc.assert(
      fc.property(arbInput, fc.integer(), (input, seed) => {
        const a = decide(input);
        const b = decide(structuredClone(input));
        expect(b).toEqual(a);
        const shuffled = structuredClone(input);
        for (const g of shuffled.groups)
          g.workers.sort((x, y) => ((x.workerId.length * 31 + seed) % 7) - ((y.workerId.length * 31 + seed) % 7) || (x.workerId < y.workerId ? 1 : -1));
        expect(decide(shuffled).decisions).toEqual(a.decisions);
      }),
      { numRuns: 200 },
    );
  });
});
