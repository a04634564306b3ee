// Tests of the pure scheduler: fit, priorities, gangs, constraints, reasons.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  constraintMatches,
  formatBytes,
  schedule,
  type SchedConstraint,
  type SchedResources,
  type SchedResult,
  type SchedSnapshot,
  type SchedTask,
  type SchedWorker,
} from "./scheduler.ts";

const GiB = 1024 ** 3;

function res(cpuMillis: number, memoryBytes: number, devices: Record<string, number> = {}): SchedResources {
  return { cpuMillis, memoryBytes, devices };
}
function worker(id: string, cap: SchedResources, attributes: Record<string, string> = {}, used = res(0, 0)): SchedWorker {
  return { id, capacity: cap, used, attributes };
}
let seq = 0;
function task(taskId: string, request: SchedResources, extra: Partial<SchedTask> = {}): SchedTask {
  return { taskId, jobId: taskId.split("/").slice(0, -1).join("/") || taskId, priority: 0, submittedAtMs: seq++, request, constraints: [], ...extra };
}
const placed = (r: SchedResult): Record<string, string> => Object.fromEntries(r.assignments.map((a) => [a.taskId, a.workerId]));
const reasons = (r: SchedResult): Record<string, string> => Object.fromEntries(r.unplaced.map((u) => [u.taskId, u.reason]));

describe("schedule: ordering and first fit", () => {
  it("places by priority first, then age", () => {
    const r = schedule({
      workers: [worker("w1", res(1000, GiB))],
      pending: [task("old-low", res(1000, 0), { priority: 0, submittedAtMs: 1 }), task("new-high", res(1000, 0), { priority: 5, submittedAtMs: 9 })],
    });
    expect(placed(r)).toEqual({ "new-high": "w1" });
    expect(Object.keys(reasons(r))).toEqual(["old-low"]);

    const byAge = schedule({
      workers: [worker("w1", res(1000, GiB))],
      pending: [task("young", res(1000, 0), { submittedAtMs: 9 }), task("old", res(1000, 0), { submittedAtMs: 1 })],
    });
    expect(placed(byAge)).toEqual({ old: "w1" });
  });

  it("uses the first worker that fits, in snapshot order", () => {
    const r = schedule({
      workers: [worker("small", res(500, GiB)), worker("big1", res(4000, GiB)), worker("big2", res(4000, GiB))],
      pending: [task("a", res(1000, 0)), task("b", res(300, 0))],
    });
    expect(placed(r)).toEqual({ a: "big1", b: "small" });
  });

  it("does not let a task that does not fit block later smaller tasks", () => {
    const r = schedule({
      workers: [worker("w1", res(2000, 2 * GiB))],
      pending: [task("huge", res(1000, 8 * GiB), { priority: 10 }), task("small1", res(1000, GiB)), task("small2", res(1000, GiB)), task("small3", res(1000, GiB))],
    });
    expect(placed(r)).toEqual({ small1: "w1", small2: "w1" });
    expect(reasons(r).huge).toBe("insufficient memory: need 8.0 GiB, best worker has 2.0 GiB free (1 worker)");
    expect(reasons(r).small3).toBe("insufficient memory: need 1.0 GiB, best worker has 0 B free (1 worker)");
  });

  it("subtracts what running attempts already use", () => {
    const r = schedule({
      workers: [worker("w1", res(4000, 4 * GiB), {}, res(3500, GiB)), worker("w2", res(4000, 4 * GiB))],
      pending: [task("a", res(1000, GiB))],
    });
    expect(placed(r)).toEqual({ a: "w2" });
  });
});

describe("schedule: reasons", () => {
  it("reports memory with the best free figure and the worker count", () => {
    const r = schedule({
      workers: [worker("a", res(8000, GiB)), worker("b", res(8000, GiB)), worker("c", res(8000, GiB / 2))],
      pending: [task("t", res(100, 2 * GiB))],
    });
    expect(r.unplaced).toEqual([{ taskId: "t", reason: "insufficient memory: need 2.0 GiB, best worker has 1.0 GiB free (3 workers)" }]);
  });

  it("reports cpu in cores", () => {
    const r = schedule({ workers: [worker("a", res(1500, GiB))], pending: [task("t", res(2500, 0))] });
    expect(reasons(r).t).toBe("insufficient cpu: need 2.5 cores, best worker has 1.5 cores free (1 worker)");
  });

  it("reports when resources exist only on different workers", () => {
    const r = schedule({
      workers: [worker("cpu-rich", res(8000, GiB)), worker("mem-rich", res(1000, 8 * GiB))],
      pending: [task("t", res(4000, 4 * GiB))],
    });
    expect(reasons(r).t).toBe("insufficient resources: no worker has cpu 4 cores, memory 4.0 GiB free at once (2 workers)");
  });

  it("reports a constraint that matches no worker", () => {
    const ws = ["us-west", "us-west", "eu", "eu"].map((z, i) => worker(`w${i}`, res(1000, GiB), { zone: z }));
    const r = schedule({
      workers: ws,
      pending: [task("t", res(100, 0), { constraints: [{ key: "zone", op: "EQ", value: "us-east" }] })],
    });
    expect(reasons(r).t).toBe("constraint zone EQ us-east matched 0 of 4 workers");
  });

  it("reports a combination of constraints that matches no worker", () => {
    const ws = [worker("a", res(1000, GiB), { zone: "x", tier: "1" }), worker("b", res(1000, GiB), { zone: "y", tier: "2" })];
    const r = schedule({
      workers: ws,
      pending: [
        task("t", res(1, 0), {
          constraints: [
            { key: "zone", op: "EQ", value: "x" },
            { key: "tier", op: "GT", value: "1" },
          ],
        }),
      ],
    });
    expect(reasons(r).t).toBe("constraints zone EQ x, tier GT 1 matched 0 of 2 workers together");
  });

  it("reports missing devices by kind", () => {
    const r = schedule({
      workers: [worker("a", res(1000, GiB, { gpu: 1 })), worker("b", res(1000, GiB, { tpu: 8 }))],
      pending: [task("t", res(100, 0, { gpu: 2 }))],
    });
    expect(reasons(r).t).toBe("insufficient gpu devices: need 2, best worker has 1 free (2 workers)");
  });

  it("reports an empty cluster", () => {
    const r = schedule({ workers: [], pending: [task("t", res(1, 1))] });
    expect(reasons(r).t).toBe("no workers registered");
  });
});

describe("schedule: devices and constraints", () => {
  it("matches devices by kind and counts them down", () => {
    const r = schedule({
      workers: [worker("tpu", res(8000, 8 * GiB, { tpu: 4 })), worker("gpu", res(8000, 8 * GiB, { gpu: 2 }))],
      pending: [task("g1", res(100, 0, { gpu: 1 })), task("g2", res(100, 0, { gpu: 1 })), task("g3", res(100, 0, { gpu: 1 }))],
    });
    expect(placed(r)).toEqual({ g1: "gpu", g2: "gpu" });
    expect(reasons(r).g3).toMatch(/^insufficient gpu devices: need 1, best worker has 0 free/);
  });

  it("evaluates every operator", () => {
    const attrs = { zone: "us-east", slots: "8", pre: "true" };
    const m = (c: SchedConstraint): boolean => constraintMatches(c, attrs);
    expect(m({ key: "zone", op: "EQ", value: "us-east" })).toBe(true);
    expect(m({ key: "zone", op: "EQ", value: "eu" })).toBe(false);
    expect(m({ key: "zone", op: "NE", value: "eu" })).toBe(true);
    expect(m({ key: "zone", op: "NE", value: "us-east" })).toBe(false);
    expect(m({ key: "missing", op: "NE", value: "x" })).toBe(true);
    expect(m({ key: "pre", op: "EXISTS" })).toBe(true);
    expect(m({ key: "missing", op: "EXISTS" })).toBe(false);
    expect(m({ key: "zone", op: "IN", values: ["eu", "us-east"] })).toBe(true);
    expect(m({ key: "zone", op: "IN", values: ["eu"] })).toBe(false);
    expect(m({ key: "slots", op: "GT", value: "10" })).toBe(false); // numeric, not lexicographic
    expect(m({ key: "slots", op: "GT", value: "7.5" })).toBe(true);
    expect(m({ key: "slots", op: "LT", value: "10" })).toBe(true);
    expect(m({ key: "zone", op: "LT", value: "10" })).toBe(false); // non-numeric never matches
    expect(m({ key: "missing", op: "GT", value: "0" })).toBe(false);
    expect(m({ key: "toString", op: "EXISTS" })).toBe(false); // own attributes only
  });

  it("places constrained tasks only on matching workers", () => {
    const r = schedule({
      workers: [worker("w1", res(1000, GiB), { zone: "a" }), worker("w2", res(1000, GiB), { zone: "b" })],
      pending: [task("t", res(100, 0), { constraints: [{ key: "zone", op: "IN", values: ["b", "c"] }] })],
    });
    expect(placed(r)).toEqual({ t: "w2" });
  });
});

describe("schedule: gangs", () => {
  const gang = (id: string, n: number, request: SchedResources, extra: Partial<SchedTask> = {}): SchedTask[] =>
    Array.from({ length: n }, (_, i) => task(`${id}/${i}`, request, { jobId: id, gangId: id, ...extra }));

  it("places a gang on distinct workers", () => {
    const r = schedule({
      workers: ["a", "b", "c"].map((id) => worker(id, res(4000, 4 * GiB))),
      pending: gang("/u/g", 3, res(1000, GiB)),
    });
    expect(placed(r)).toEqual({ "/u/g/0": "a", "/u/g/1": "b", "/u/g/2": "c" });
  });

  it("places nothing of a gang that does not fit, and lets later tasks through", () => {
    const r = schedule({
      workers: [worker("a", res(4000, 4 * GiB)), worker("b", res(4000, 4 * GiB)), worker("c", res(500, 4 * GiB))],
      pending: [...gang("/u/g", 4, res(1000, GiB), { priority: 1 }), task("/u/small/0", res(1000, GiB))],
    });
    expect(placed(r)).toEqual({ "/u/small/0": "a" });
    const rs = reasons(r);
    expect(Object.keys(rs).sort()).toEqual(["/u/g/0", "/u/g/1", "/u/g/2", "/u/g/3"]);
    expect(rs["/u/g/0"]).toBe("gang of 4 needs 4 workers with cpu 1 core, memory 1.0 GiB free, only 2 fit (3 workers)");
  });

  it("explains a gang whose constraint matches nothing", () => {
    const r = schedule({
      workers: [worker("a", res(4000, GiB), { zone: "x" })],
      pending: gang("/u/g", 2, res(1, 0), { constraints: [{ key: "zone", op: "EQ", value: "y" }] }),
    });
    expect(reasons(r)["/u/g/1"]).toBe("gang of 2: constraint zone EQ y matched 0 of 1 workers");
  });
});

// ---------------------------------------------------------------------------------------------
// Property tests. The reference is a deliberately naive first fit (no classes, no cursors): the
// optimised scheduler must produce exactly its assignments.

function reference(s: SchedSnapshot): Record<string, string> {
  const free = s.workers.map((w) => {
    const devs: Record<string, number> = {};
    for (const k of new Set([...Object.keys(w.capacity.devices), ...Object.keys(w.used.devices)])) {
      devs[k] = (w.capacity.devices[k] ?? 0) - (w.used.devices[k] ?? 0);
    }
    return { cpu: w.capacity.cpuMillis - w.used.cpuMillis, mem: w.capacity.memoryBytes - w.used.memoryBytes, devs };
  });
  const ok = (t: SchedTask, w: number, extra: Set<number>): boolean =>
    !extra.has(w) &&
    t.constraints.every((c) => constraintMatches(c, s.workers[w].attributes)) &&
    free[w].cpu >= t.request.cpuMillis &&
    free[w].mem >= t.request.memoryBytes &&
    Object.entries(t.request.devices).every(([k, n]) => (free[w].devs[k] ?? 0) >= n);
  const take = (t: SchedTask, w: number): void => {
    free[w].cpu -= t.request.cpuMillis;
    free[w].mem -= t.request.memoryBytes;
    for (const [k, n] of Object.entries(t.request.devices)) free[w].devs[k] = (free[w].devs[k] ?? 0) - n;
  };
  const order = s.pending
    .map((t, i) => ({ t, i }))
    .sort((a, b) => b.t.priority - a.t.priority || a.t.submittedAtMs - b.t.submittedAtMs || a.i - b.i)
    .map((x) => x.t);
  const out: Record<string, string> = {};
  const doneGangs = new Set<string>();
  for (const t of order) {
    if (t.gangId !== undefined) {
      if (doneGangs.has(t.gangId)) continue;
      doneGangs.add(t.gangId);
      const members = order.filter((m) => m.gangId === t.gangId);
      const used = new Set<number>();
      const chosen: number[] = [];
      for (const m of members) {
        const w = s.workers.findIndex((_, wi) => ok(m, wi, used));
        if (w < 0) break;
        used.add(w);
        chosen.push(w);
      }
      if (chosen.length === members.length) {
        members.forEach((m, k) => {
          take(m, chosen[k]);
          out[m.taskId] = s.workers[chosen[k]].id;
        });
      }
      continue;
    }
    const w = s.workers.findIndex((_, wi) => ok(t, wi, new Set()));
    if (w >= 0) {
      take(t, w);
      out[t.taskId] = s.workers[w].id;
    }
  }
  return out;
}

const zones = ["a", "b", "c"];
const arbResources = (max: number): fc.Arbitrary<SchedResources> =>
  fc.record({
    cpuMillis: fc.integer({ min: 0, max }),
    memoryBytes: fc.integer({ min: 0, max }),
    devices: fc.dictionary(fc.constantFrom("gpu", "tpu"), fc.integer({ min: 0, max: 4 }), { maxKeys: 2 }),
  });
const arbConstraint: fc.Arbitrary<SchedConstraint> = fc.oneof(
  fc.record({ key: fc.constant("zone"), op: fc.constantFrom("EQ" as const, "NE" as const), value: fc.constantFrom(...zones) }),
  fc.record({ key: fc.constantFrom("zone", "fast"), op: fc.constant("EXISTS" as const) }),
  fc.record({ key: fc.constant("zone"), op: fc.constant("IN" as const), values: fc.subarray(zones) }),
  fc.record({ key: fc.constant("rank"), op: fc.constantFrom("GT" as const, "LT" as const), value: fc.integer({ min: 0, max: 5 }).map(String) }),
);
const arbSnapshot: fc.Arbitrary<SchedSnapshot> = fc
  .record({
    workers: fc.array(
      fc.record({
        capacity: arbResources(8),
        usedFrac: fc.double({ min: 0, max: 1, noNaN: true }),
        zone: fc.option(fc.constantFrom(...zones), { nil: undefined }),
        fast: fc.boolean(),
        rank: fc.integer({ min: 0, max: 5 }),
      }),
      { maxLength: 8 },
    ),
    pending: fc.array(
      fc.record({
        request: arbResources(4),
        priority: fc.integer({ min: 0, max: 2 }),
        submittedAtMs: fc.integer({ min: 0, max: 5 }),
        constraints: fc.array(arbConstraint, { maxLength: 2 }),
        gang: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined, freq: 3 }),
      }),
      { maxLength: 25 },
    ),
  })
  .map(({ workers, pending }) => ({
    workers: workers.map((w, i) => {
      const used = {
        cpuMillis: Math.floor(w.capacity.cpuMillis * w.usedFrac),
        memoryBytes: Math.floor(w.capacity.memoryBytes * w.usedFrac),
        devices: Object.fromEntries(Object.entries(w.capacity.devices).map(([k, n]) => [k, Math.floor(n * w.usedFrac)])),
      };
      const attributes: Record<string, string> = { rank: String(w.rank) };
      if (w.zone !== undefined) attributes.zone = w.zone;
      if (w.fast) attributes.fast = "1";
      return { id: `w${i}`, capacity: w.capacity, used, attributes };
    }),
    pending: pending.map((p, i) => ({
      taskId: `t${i}`,
      // Gang members share a job (same priority and age), as the controller produces them.
      jobId: p.gang !== undefined ? `g${p.gang}` : `j${i}`,
      priority: p.gang !== undefined ? 0 : p.priority,
      submittedAtMs: p.gang !== undefined ? p.gang : p.submittedAtMs,
      request: p.request,
      constraints: p.constraints,
      ...(p.gang !== undefined ? { gangId: `g${p.gang}` } : {}),
    })),
  }));

function freeAfter(s: SchedSnapshot, r: SchedResult): Map<string, { cpu: number; mem: number; devs: Record<string, number> }> {
  const free = new Map(
    s.workers.map((w) => {
      const devs: Record<string, number> = {};
      for (const [k, n] of Object.entries(w.capacity.devices)) devs[k] = n - (w.used.devices[k] ?? 0);
      return [w.id, { cpu: w.capacity.cpuMillis - w.used.cpuMillis, mem: w.capacity.memoryBytes - w.used.memoryBytes, devs }];
    }),
  );
  const byId = new Map(s.pending.map((t) => [t.taskId, t]));
  for (const a of r.assignments) {
    const t = byId.get(a.taskId)!;
    const f = free.get(a.workerId)!;
    f.cpu -= t.request.cpuMillis;
    f.mem -= t.request.memoryBytes;
    for (const [k, n] of Object.entries(t.request.devices)) f.devs[k] = (f.devs[k] ?? 0) - n;
  }
  return free;
}

describe("schedule: invariants (fast-check)", () => {
  const runs = { numRuns: 400 };

  it("never puts a worker over capacity", () => {
    fc.assert(
      fc.property(arbSnapshot, (s) => {
        for (const f of freeAfter(s, schedule(s)).values()) {
          expect(f.cpu).toBeGreaterThanOrEqual(0);
          expect(f.mem).toBeGreaterThanOrEqual(0);
          for (const n of Object.values(f.devs)) expect(n).toBeGreaterThanOrEqual(0);
        }
      }),
      runs,
    );
  });

  it("accounts for every pending task exactly once, with a non-empty reason when unplaced", () => {
    fc.assert(
      fc.property(arbSnapshot, (s) => {
        const r = schedule(s);
        const ids = [...r.assignments.map((a) => a.taskId), ...r.unplaced.map((u) => u.taskId)].sort();
        expect(ids).toEqual(s.pending.map((t) => t.taskId).sort());
        for (const u of r.unplaced) expect(u.reason.length).toBeGreaterThan(0);
      }),
      runs,
    );
  });

  it("places gangs all-or-nothing, one member per worker", () => {
    fc.assert(
      fc.property(arbSnapshot, (s) => {
        const p = placed(schedule(s));
        const gangs = new Map<string, SchedTask[]>();
        for (const t of s.pending) if (t.gangId) gangs.set(t.gangId, [...(gangs.get(t.gangId) ?? []), t]);
        for (const members of gangs.values()) {
          const on = members.filter((m) => p[m.taskId] !== undefined).map((m) => p[m.taskId]);
          expect([0, members.length]).toContain(on.length);
          expect(new Set(on).size).toBe(on.length);
        }
      }),
      runs,
    );
  });

  it("respects constraints and device kinds", () => {
    fc.assert(
      fc.property(arbSnapshot, (s) => {
        const workers = new Map(s.workers.map((w) => [w.id, w]));
        for (const a of schedule(s).assignments) {
          const t = s.pending.find((x) => x.taskId === a.taskId)!;
          const w = workers.get(a.workerId)!;
          for (const c of t.constraints) expect(constraintMatches(c, w.attributes)).toBe(true);
          for (const [k, n] of Object.entries(t.request.devices)) if (n > 0) expect(w.capacity.devices[k] ?? 0).toBeGreaterThanOrEqual(n);
        }
      }),
      runs,
    );
  });

  it("leaves no unplaced single task that would still fit somewhere (no head-of-line blocking)", () => {
    fc.assert(
      fc.property(arbSnapshot, (s) => {
        const r = schedule(s);
        const free = freeAfter(s, r);
        for (const u of r.unplaced) {
          const t = s.pending.find((x) => x.taskId === u.taskId)!;
          if (t.gangId !== undefined) continue;
          for (const w of s.workers) {
            const f = free.get(w.id)!;
            const fitsNow =
              t.constraints.every((c) => constraintMatches(c, w.attributes)) &&
              f.cpu >= t.request.cpuMillis &&
              f.mem >= t.request.memoryBytes &&
              Object.entries(t.request.devices).every(([k, n]) => (f.devs[k] ?? 0) >= n);
            expect(fitsNow, `${t.taskId} fits ${w.id} but was left: ${u.reason}`).toBe(false);
          }
        }
      }),
      runs,
    );
  });

  it("is deterministic and equals a naive first-fit reference", () => {
    fc.assert(
      fc.property(arbSnapshot, (s) => {
        const r1 = schedule(s);
        const r2 = schedule(structuredClone(s));
        expect(r2).toEqual(r1);
        expect(placed(r1)).toEqual(reference(s));
      }),
      runs,
    );
  });
});

describe("formatBytes", () => {
  it("uses binary units", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(2 * GiB)).toBe("2.0 GiB");
  });
});

describe("schedule: tasks that can never fit (UNSCHEDULABLE)", () => {
  const caps = (ws: SchedWorker[]) => ws.map((w) => ({ capacity: w.capacity, attributes: w.attributes }));
  const never = (r: SchedResult): Record<string, string> => Object.fromEntries(r.unschedulable.map((u) => [u.taskId, u.reason]));

  it("ends at once a task larger than every registered worker's total capacity, naming the largest", () => {
    const workers = [worker("w1", res(2000, 4 * GiB)), worker("w2", res(4000, 8 * GiB))];
    const r = schedule({ workers, registered: caps(workers), pending: [task("big", res(64_000, GiB)), task("ok", res(1000, GiB))], nowMs: 0 });
    expect(placed(r)).toEqual({ ok: "w1" });
    expect(never(r)).toEqual({ big: "needs cpu 64 cores, the largest of 2 registered workers has 4 cores" });
    expect(reasons(r)).toEqual({});
  });

  it("keeps waiting a task that only lacks free capacity now (judged against totals, not free)", () => {
    const workers = [worker("w1", res(4000, 8 * GiB), {}, res(4000, 0))];
    const r = schedule({ workers, registered: caps(workers), pending: [task("t", res(2000, GiB))], nowMs: 1e9 });
    expect(never(r)).toEqual({});
    expect(reasons(r).t).toMatch(/insufficient cpu/);
  });

  it("judges against every registered worker, also those not taking work now (unhealthy)", () => {
    const registered = [{ capacity: res(8000, GiB), attributes: {} }];
    const r = schedule({ workers: [], registered, pending: [task("t", res(4000, 0))], nowMs: 0 });
    expect(never(r)).toEqual({});
    expect(reasons(r).t).toBe("no workers registered");
  });

  it("names a constraint no registered worker matches", () => {
    const workers = [worker("w1", res(4000, GiB), { zone: "a" })];
    const r = schedule({
      workers,
      registered: caps(workers),
      pending: [task("t", res(1000, 0), { constraints: [{ key: "zone", op: "EQ", value: "b" }] })],
    });
    expect(never(r)).toEqual({ t: "constraint zone EQ b matches none of the 1 registered worker" });
  });

  it("judges a gang by distinct workers able to hold a member, with its summed request", () => {
    const workers = [worker("w1", res(4000, 8 * GiB)), worker("w2", res(1000, 8 * GiB)), worker("w3", res(4000, 8 * GiB))];
    const gang = (n: number) => Array.from({ length: n }, (_, i) => task(`g${n}/${i}`, res(2000, GiB), { gangId: `g${n}` }));
    const r = schedule({ workers, registered: caps(workers), pending: [...gang(3), ...gang(2)] });
    expect(Object.keys(placed(r)).sort()).toEqual(["g2/0", "g2/1"]);
    const reason = never(r)["g3/0"];
    expect(reason).toBe(
      "gang of 3 needs 3 workers with cpu 2 cores, memory 1.0 GiB each (6 cores, 3.0 GiB in all); " +
        "only 2 of 3 registered workers could ever hold a member (together 9 cores, 24.0 GiB)",
    );
    expect(never(r)["g3/2"]).toBe(reason);
  });

  it("with no worker registered, waits until the task's scheduling timeout runs out (fake clock)", () => {
    const pending = [task("a", res(1000, 0), { waitingSinceMs: 1000, schedulingTimeoutMs: 300_000 }), task("forever", res(1000, 0), { waitingSinceMs: 0, schedulingTimeoutMs: 0 })];
    const before = schedule({ workers: [], registered: [], pending, nowMs: 300_999 });
    expect(never(before)).toEqual({});
    expect(reasons(before)).toEqual({ a: "no workers registered", forever: "no workers registered" });
    const after = schedule({ workers: [], registered: [], pending, nowMs: 301_000 });
    expect(never(after)).toEqual({ a: "no worker registered within the scheduling timeout (5 min)" });
    expect(Object.keys(reasons(after))).toEqual(["forever"]);
  });

  it("judges nothing as never fitting without the registered workers (the reasons only)", () => {
    const workers = [worker("w1", res(1000, GiB))];
    const r = schedule({ workers, pending: [task("big", res(64_000, 0))] });
    expect(r.unschedulable).toEqual([]);
    expect(reasons(r).big).toMatch(/insufficient cpu/);
  });
});
