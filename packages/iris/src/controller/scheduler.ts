// The scheduler: a pure function from one consistent snapshot (workers with their free capacity,
// pending tasks) to assignments plus a readable reason for every task it could not place. The
// controller reads the snapshot and commits the result in one transaction; nothing here touches
// the database, the clock or the network, so it is unit-tested and benchmarked on its own.
//
// Semantics (documented in the CLI/README too):
// - Order: priority (higher first), then age (`submittedAtMs`, older first), then snapshot order.
// - First fit over the workers in snapshot order, without head-of-line blocking: a task that does
//   not fit never stops a later (smaller, or differently constrained) task.
// - Gangs (tasks sharing `gangId`) are placed all-or-nothing, ONE MEMBER PER WORKER (distinct
//   workers), at the position of the gang's first member in the order. A gang is a set of peers
//   that usually want a host each (collectives across machines); packing two on one host would
//   hide a capacity problem until the job scales out.
// - Constraints on worker attributes: EQ / NE / EXISTS / IN / GT / LT. NE matches a worker without
//   the attribute; EQ, IN, GT and LT need it; GT/LT compare numerically (a non-numeric side never
//   matches).
// - Devices match by kind: a request of `{ gpu: 2 }` needs 2 free `gpu` on one worker. CPU and
//   memory are fungible.
//
// Speed (bench/iris/scheduler.bench.ts): tasks with the same constraint set and request form a
// "class". Free capacity only shrinks during a cycle, so a worker that did not fit a class never
// fits it later: each class keeps a cursor into its eligible workers and first fit resumes there;
// once a class fails, every later task of the class fails with the same reason without a scan.
// Eligible workers are computed once per distinct constraint set.

import { invariant } from "../internal/assert.ts";

/** Resources of a worker or a request: cpu in millicores, memory in bytes, devices by kind. */
export interface SchedResources {
  cpuMillis: number;
  memoryBytes: number;
  devices: Record<string, number>;
}

/** A constraint on a worker attribute (GT/LT compare numerically). */
export interface SchedConstraint {
  key: string;
  op: "EQ" | "NE" | "EXISTS" | "IN" | "GT" | "LT";
  value?: string;
  values?: string[];
}

/** A live worker as the scheduler sees it: total capacity and what unfinished attempts hold. */
export interface SchedWorker {
  id: string;
  capacity: SchedResources;
  used: SchedResources;
  attributes: Record<string, string>;
}

/** A task waiting for a worker. Tasks sharing a `gangId` are placed together or not at all. */
export interface SchedTask {
  taskId: string;
  jobId: string;
  priority: number;
  submittedAtMs: number;
  request: SchedResources;
  constraints: SchedConstraint[];
  gangId?: string;
}

/** One consistent view of the cluster: the input of {@link schedule}. */
export interface SchedSnapshot {
  workers: SchedWorker[];
  pending: SchedTask[];
}

/** What {@link schedule} decided: every pending task is in exactly one of the two lists. */
export interface SchedResult {
  assignments: { taskId: string; workerId: string }[];
  unplaced: { taskId: string; reason: string }[];
}

/** Whether one worker attribute map satisfies one constraint (the single evaluator). */
export function constraintMatches(c: SchedConstraint, attributes: Record<string, string>): boolean {
  const has = Object.hasOwn(attributes, c.key);
  const v = has ? attributes[c.key] : undefined;
  switch (c.op) {
    case "EQ":
      return v !== undefined && v === c.value;
    case "NE":
      return v !== c.value;
    case "EXISTS":
      return has;
    case "IN":
      return v !== undefined && (c.values ?? []).includes(v);
    case "GT":
    case "LT": {
      if (v === undefined || c.value === undefined) return false;
      const a = toNumber(v);
      const b = toNumber(c.value);
      if (Number.isNaN(a) || Number.isNaN(b)) return false;
      return c.op === "GT" ? a > b : a < b;
    }
    default:
      return false;
  }
}

function toNumber(s: string): number {
  return s.trim() === "" ? Number.NaN : Number(s);
}

/** A constraint as people read it: `zone EQ us-east`, `zone IN [a, b]`, `gpu EXISTS`. */
export function describeConstraint(c: SchedConstraint): string {
  if (c.op === "EXISTS") return `${c.key} EXISTS`;
  if (c.op === "IN") return `${c.key} IN [${(c.values ?? []).join(", ")}]`;
  return `${c.key} ${c.op} ${c.value ?? ""}`;
}

/** Bytes for people: `512 B`, `1.5 KiB`, `2.0 GiB`. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = bytes;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** Millicores for people: `1 core`, `0.5 cores`, `16 cores`. */
export function formatCores(millis: number): string {
  const cores = Math.round(millis) / 1000;
  return `${cores} ${cores === 1 ? "core" : "cores"}`;
}

// ---------------------------------------------------------------------------------------------

interface Free {
  cpu: Float64Array;
  mem: Float64Array;
  dev: Map<string, Float64Array>;
}

/** A distinct constraint set: its eligible workers, computed once. */
interface ConstraintSet {
  constraints: SchedConstraint[];
  eligible: Int32Array;
}

/** A distinct (constraint set, request) pair; see the file comment. */
interface TaskClass {
  cs: ConstraintSet;
  cpu: number;
  mem: number;
  devs: [kind: string, count: number][];
  cursor: number;
  failedReason: string | undefined;
}

function resourceKey(r: SchedResources): string {
  const devs = Object.keys(r.devices)
    .filter((k) => r.devices[k] > 0)
    .sort()
    .map((k) => `${k}=${r.devices[k]}`)
    .join(",");
  return `${r.cpuMillis}|${r.memoryBytes}|${devs}`;
}

function constraintKey(cs: SchedConstraint[]): string {
  if (cs.length === 0) return "";
  return cs
    .map((c) => `${c.key}\u0000${c.op}\u0000${c.value ?? ""}\u0000${(c.values ?? []).join("\u0001")}`)
    .sort()
    .join("\u0002");
}

/**
 * Places pending tasks on workers: priority then age, first fit without head-of-line blocking,
 * gangs all-or-nothing on distinct workers, attribute constraints and device kinds respected.
 * Pure and deterministic: the same snapshot always gives the same result.
 *
 * @example
 * const { assignments, unplaced } = schedule({ workers, pending });
 * // unplaced[i].reason: "insufficient memory: need 2.0 GiB, best worker has 1.0 GiB free (3 workers)"
 */
export function schedule(snapshot: SchedSnapshot): SchedResult {
  const { workers, pending } = snapshot;
  const nW = workers.length;

  const free: Free = { cpu: new Float64Array(nW), mem: new Float64Array(nW), dev: new Map() };
  const kinds = new Set<string>();
  for (const w of workers) for (const k of Object.keys(w.capacity.devices)) kinds.add(k);
  for (const t of pending) for (const k of Object.keys(t.request.devices)) kinds.add(k);
  for (const k of kinds) free.dev.set(k, new Float64Array(nW));
  for (let i = 0; i < nW; i++) {
    const w = workers[i];
    free.cpu[i] = w.capacity.cpuMillis - w.used.cpuMillis;
    free.mem[i] = w.capacity.memoryBytes - w.used.memoryBytes;
    for (const [k, arr] of free.dev) arr[i] = (w.capacity.devices[k] ?? 0) - (w.used.devices[k] ?? 0);
  }

  // Classes, shared across tasks with the same constraints and request.
  const constraintSets = new Map<string, ConstraintSet>();
  const classes = new Map<string, TaskClass>();
  const taskClass: TaskClass[] = new Array(pending.length);
  const seen = new Set<string>();
  for (let i = 0; i < pending.length; i++) {
    const t = pending[i];
    invariant(!seen.has(t.taskId), `duplicate pending task ${t.taskId}`);
    seen.add(t.taskId);
    const ck = constraintKey(t.constraints);
    let cs = constraintSets.get(ck);
    if (!cs) {
      const eligible: number[] = [];
      for (let w = 0; w < nW; w++) {
        const attrs = workers[w].attributes;
        if (t.constraints.every((c) => constraintMatches(c, attrs))) eligible.push(w);
      }
      cs = { constraints: t.constraints, eligible: Int32Array.from(eligible) };
      constraintSets.set(ck, cs);
    }
    const key = `${ck}\u0003${resourceKey(t.request)}`;
    let cls = classes.get(key);
    if (!cls) {
      cls = {
        cs,
        cpu: t.request.cpuMillis,
        mem: t.request.memoryBytes,
        devs: Object.entries(t.request.devices).filter(([, n]) => n > 0),
        cursor: 0,
        failedReason: undefined,
      };
      classes.set(key, cls);
    }
    taskClass[i] = cls;
  }

  const fits = (cls: TaskClass, w: number): boolean => {
    if (free.cpu[w] < cls.cpu || free.mem[w] < cls.mem) return false;
    for (const [k, n] of cls.devs) if (free.dev.get(k)![w] < n) return false;
    return true;
  };
  const take = (cls: TaskClass, w: number): void => {
    free.cpu[w] -= cls.cpu;
    free.mem[w] -= cls.mem;
    for (const [k, n] of cls.devs) free.dev.get(k)![w] -= n;
  };

  // Order: priority desc, age asc, then snapshot order (stable).
  const order = Array.from(pending.keys());
  order.sort((a, b) => {
    const ta = pending[a];
    const tb = pending[b];
    if (ta.priority !== tb.priority) return tb.priority - ta.priority;
    if (ta.submittedAtMs !== tb.submittedAtMs) return ta.submittedAtMs - tb.submittedAtMs;
    return a - b;
  });

  // Gang members in order, keyed by gangId; a gang is handled at its first member.
  const gangs = new Map<string, number[]>();
  for (const i of order) {
    const g = pending[i].gangId;
    if (g === undefined) continue;
    const members = gangs.get(g);
    if (members) members.push(i);
    else gangs.set(g, [i]);
  }

  const placedOn = new Int32Array(pending.length).fill(-1);
  const reasons: (string | undefined)[] = new Array(pending.length);
  const assignments: SchedResult["assignments"] = [];

  for (const i of order) {
    const t = pending[i];
    if (t.gangId !== undefined) {
      const members = gangs.get(t.gangId)!;
      if (members[0] !== i) continue;
      placeGang(members);
      continue;
    }
    const cls = taskClass[i];
    if (cls.failedReason !== undefined) {
      reasons[i] = cls.failedReason;
      continue;
    }
    const el = cls.cs.eligible;
    while (cls.cursor < el.length && !fits(cls, el[cls.cursor])) cls.cursor++;
    if (cls.cursor < el.length) {
      const w = el[cls.cursor];
      take(cls, w);
      placedOn[i] = w;
      assignments.push({ taskId: t.taskId, workerId: workers[w].id });
    } else {
      cls.failedReason = explainSingle(cls);
      reasons[i] = cls.failedReason;
    }
  }

  function placeGang(members: number[]): void {
    // Tentative: distinct workers, so each member only needs its own worker to fit. Members of
    // one class continue the scan where the previous member of that class stopped.
    const used = new Set<number>();
    const localCursor = new Map<TaskClass, number>();
    const chosen: number[] = [];
    let failedAt = -1;
    for (let m = 0; m < members.length; m++) {
      const cls = taskClass[members[m]];
      const el = cls.cs.eligible;
      let c = localCursor.get(cls) ?? cls.cursor;
      while (c < el.length && (used.has(el[c]) || !fits(cls, el[c]))) c++;
      if (c >= el.length) {
        failedAt = m;
        break;
      }
      used.add(el[c]);
      chosen.push(el[c]);
      localCursor.set(cls, c + 1);
    }
    if (failedAt < 0) {
      for (let m = 0; m < members.length; m++) {
        const idx = members[m];
        take(taskClass[idx], chosen[m]);
        placedOn[idx] = chosen[m];
        assignments.push({ taskId: pending[idx].taskId, workerId: workers[chosen[m]].id });
      }
      return;
    }
    const reason = explainGang(members, failedAt);
    for (const idx of members) reasons[idx] = reason;
  }

  function explainGang(members: number[], failedAt: number): string {
    const cls = taskClass[members[failedAt]];
    const n = members.length;
    if (nW === 0) return `gang of ${n}: no workers registered`;
    const constraintReason = explainConstraints(cls.cs);
    if (constraintReason !== undefined) return `gang of ${n}: ${constraintReason}`;
    let fitting = 0;
    for (const w of cls.cs.eligible) if (fits(cls, w)) fitting++;
    const scope = cls.cs.constraints.length > 0 ? ` matching ${describeConstraints(cls.cs.constraints)}` : "";
    return (
      `gang of ${n} needs ${n} workers${scope} with ${describeRequest(cls)} free, ` +
      `only ${fitting} fit (${cls.cs.eligible.length} workers)`
    );
  }

  function explainSingle(cls: TaskClass): string {
    if (nW === 0) return "no workers registered";
    const constraintReason = explainConstraints(cls.cs);
    if (constraintReason !== undefined) return constraintReason;
    const el = cls.cs.eligible;
    const count = `(${el.length} ${el.length === 1 ? "worker" : "workers"})`;
    let bestCpu = -Infinity;
    let bestMem = -Infinity;
    const bestDev = new Map<string, number>();
    for (const w of el) {
      bestCpu = Math.max(bestCpu, free.cpu[w]);
      bestMem = Math.max(bestMem, free.mem[w]);
      for (const [k] of cls.devs) bestDev.set(k, Math.max(bestDev.get(k) ?? -Infinity, free.dev.get(k)![w]));
    }
    for (const [k, n] of cls.devs) {
      const best = bestDev.get(k)!;
      if (best < n) return `insufficient ${k} devices: need ${n}, best worker has ${Math.max(0, best)} free ${count}`;
    }
    if (bestMem < cls.mem) {
      return `insufficient memory: need ${formatBytes(cls.mem)}, best worker has ${formatBytes(Math.max(0, bestMem))} free ${count}`;
    }
    if (bestCpu < cls.cpu) {
      return `insufficient cpu: need ${formatCores(cls.cpu)}, best worker has ${formatCores(Math.max(0, bestCpu))} free ${count}`;
    }
    return `insufficient resources: no worker has ${describeRequest(cls)} free at once ${count}`;
  }

  function explainConstraints(cs: ConstraintSet): string | undefined {
    if (cs.eligible.length > 0) return undefined;
    // Name the first constraint that alone excludes everyone; else the combination.
    for (const c of cs.constraints) {
      let matched = 0;
      for (const w of workers) if (constraintMatches(c, w.attributes)) matched++;
      if (matched === 0) return `constraint ${describeConstraint(c)} matched 0 of ${nW} workers`;
    }
    return `constraints ${describeConstraints(cs.constraints)} matched 0 of ${nW} workers together`;
  }

  const unplaced: SchedResult["unplaced"] = [];
  for (let i = 0; i < pending.length; i++) {
    if (placedOn[i] >= 0) continue;
    const reason = reasons[i];
    invariant(reason !== undefined, `task ${pending[i].taskId} neither placed nor explained`);
    unplaced.push({ taskId: pending[i].taskId, reason });
  }
  return { assignments, unplaced };
}

function describeConstraints(cs: SchedConstraint[]): string {
  return cs.map(describeConstraint).join(", ");
}

function describeRequest(cls: { cpu: number; mem: number; devs: [string, number][] }): string {
  const parts = [`cpu ${formatCores(cls.cpu)}`, `memory ${formatBytes(cls.mem)}`];
  for (const [k, n] of cls.devs) parts.push(`${n} ${k}`);
  return parts.join(", ");
}
