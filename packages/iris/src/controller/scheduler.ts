// The scheduler: a pure function from one consistent snapshot (workers with their free capacity,
// pending tasks) to assignments plus a readable reason for every task it could not place. The
// controller reads the snapshot and commits the result in one transaction; nothing here touches
// the database, the clock or the network, so it is unit-tested and benchmarked on its own.
//
// Semantics (documented in the CLI/README too):
// - Order: priority (higher first), then fair share (`rank`: users take turns, see SchedTask.rank),
//   then age (`submittedAtMs`, older first), then snapshot order.
// - First fit over the workers in snapshot order, without head-of-line blocking: a task that does
//   not fit never stops a later (smaller, or differently constrained) task.
// - Gangs (tasks sharing `gangId`) are placed all-or-nothing, ONE MEMBER PER WORKER (distinct
//   workers), at the position of the gang's first member in the order. A gang is a set of peers
//   that usually want a host each (collectives across machines); packing two on one host would
//   hide a capacity problem until the job scales out.
// - Constraints on worker attributes: EQ / NE / EXISTS / IN / GT / LT. NE matches a worker without
//   the attribute; EQ, IN, GT and LT need it; GT/LT compare numerically (a non-numeric side never
//   matches).
// - Tasks that can never fit become UNSCHEDULABLE: at once when no registered worker could ever
//   hold them (judged against the registered workers' total capacity, not what is free now; a gang
//   of n needs n distinct such workers, its summed request named in the reason); with no worker
//   registered, once a task has waited `schedulingTimeoutMs` (see `SchedTask.waitingSinceMs`).
//   With an autoscaler, the worker shapes its scale groups could start count too
//   (`SchedSnapshot.startable`): a task is UNSCHEDULABLE at once only when neither a registered
//   worker nor any group could ever hold it (the reason names the largest group's shape), and
//   the no-worker timeout does not apply while some group could.
// - Devices match by kind: a request of `{ gpu: 2 }` needs 2 free `gpu` on one worker. CPU and
//   memory are fungible.
//
// Speed (bench/iris/scheduler.bench.ts): tasks with the same constraint set and request form a
// "class". Free capacity only shrinks during a cycle, so a worker that did not fit a class never
// fits it later: each class keeps a cursor into its eligible workers and first fit resumes there;
// once a class fails, every later task of the class fails with the same reason without a scan.
// Eligible workers are computed once per distinct constraint set.
//
// Why this file is over 500 lines: most of it is schedule() itself, one pass whose classes,
// cursors and per-worker free capacity are local state shared by every step; cutting it into
// files would only thread that state through parameters. The reasons' formatting sits beside it.

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
  /**
   * Fair share among tasks of the same priority, before age: the controller gives each user's
   * k-th pending task rank k (a gang's members share one), so that users take turns and a huge
   * old job does not take every free slot before a small newer one gets its first. Absent = 0.
   */
  rank?: number;
  request: SchedResources;
  constraints: SchedConstraint[];
  gangId?: string;
  /**
   * The gang's full size when `pending` holds only some of its members (the controller passes one
   * member of a gang too big for the workers alive, so that a 100,000-member gang costs a pass one
   * task, not 100,000). Such a gang is never placed; its reasons name the full size.
   */
  gangSize?: number;
  /** Since when the task has waited with no worker registered (for the scheduling timeout). */
  waitingSinceMs?: number;
  /** With no worker registered, the task becomes UNSCHEDULABLE after this long; 0/absent = never. */
  schedulingTimeoutMs?: number;
}

/** A registered worker's total capacity and attributes: what decides whether a task could ever fit. */
export interface SchedCapacity {
  capacity: SchedResources;
  attributes: Record<string, string>;
}

/** One consistent view of the cluster: the input of {@link schedule}. */
export interface SchedSnapshot {
  workers: SchedWorker[];
  pending: SchedTask[];
  /**
   * Every registered worker (also those not taking work now, e.g. unhealthy). When given, a task
   * no registered worker could ever hold is UNSCHEDULABLE (and, with none registered, one whose
   * scheduling timeout ran out); without it every task that is not placed is only unplaced.
   */
  registered?: SchedCapacity[];
  /** The time the scheduling timeouts are judged at (default 0: none has run out). */
  nowMs?: number;
  /**
   * The worker shapes an autoscaler's scale groups could start, each up to `count` workers (its
   * maxWorkers). Given (non-empty), they count beside `registered` for "could ever fit".
   */
  startable?: SchedStartable[];
}

/** A scale group's worker shape (see {@link SchedSnapshot.startable}). */
export interface SchedStartable extends SchedCapacity {
  /** The group's name, for reasons. */
  name: string;
  /** How many such workers the group may run. */
  count: number;
}

/** What {@link schedule} decided: every pending task is in exactly one of the three lists. */
export interface SchedResult {
  assignments: { taskId: string; workerId: string }[];
  unplaced: { taskId: string; reason: string }[];
  /** Tasks that can never be placed (or waited out the timeout with no worker), with the reason. */
  unschedulable: { taskId: string; reason: string }[];
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

/**
 * Free capacity of the workers of one constraint set, as a max-segment-tree over their positions
 * (snapshot order): each node holds the largest free cpu, memory and per-kind device count below
 * it, so "leftmost worker that fits" skips whole ranges that cannot, and the root answers "best
 * free" for the reasons in O(1).
 */
interface FreeTree {
  n: number;
  size: number;
  cpu: Float64Array;
  mem: Float64Array;
  dev: Float64Array[];
}

/** A distinct constraint set: its eligible workers (in snapshot order) and their free tree. */
interface ConstraintSet {
  constraints: SchedConstraint[];
  eligible: Int32Array;
  tree: FreeTree;
  /** Its classes by a hash of cpu and memory; see `classOf`. */
  classes: Map<number, TaskClass>;
}

/** A distinct (constraint set, request) pair; see the file comment. */
interface TaskClass {
  cs: ConstraintSet;
  cpu: number;
  mem: number;
  /** `kind=count,…` of its devices, sorted ("" for none). */
  devKey: string;
  /** Requested devices as (kind index, count), count > 0. */
  devKinds: readonly number[];
  devCounts: readonly number[];
  cursor: number;
  failedReason: string | undefined;
  /** The next class with the same hash. */
  nextInBucket: TaskClass | undefined;
}

const NO_DEVICES: readonly number[] = [];

function sameConstraints(a: SchedConstraint[], b: SchedConstraint[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x.key !== y.key || x.op !== y.op || x.value !== y.value) return false;
    const xv = x.values ?? [];
    const yv = y.values ?? [];
    if (xv.length !== yv.length || xv.some((v, j) => v !== yv[j])) return false;
  }
  return true;
}

function sameRequest(a: SchedResources, b: SchedResources): boolean {
  if (a === b) return true;
  if (a.cpuMillis !== b.cpuMillis || a.memoryBytes !== b.memoryBytes) return false;
  for (const k in a.devices) if ((a.devices[k] ?? 0) !== (b.devices[k] ?? 0)) return false;
  for (const k in b.devices) if ((a.devices[k] ?? 0) !== (b.devices[k] ?? 0)) return false;
  return true;
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

  // Device kinds as small integers.
  const kindIndex = new Map<string, number>();
  const kindNames: string[] = [];
  const addKind = (k: string): void => {
    if (!kindIndex.has(k)) {
      kindIndex.set(k, kindNames.length);
      kindNames.push(k);
    }
  };
  for (const w of workers) for (const k in w.capacity.devices) addKind(k);
  for (const t of pending) for (const k in t.request.devices) addKind(k);
  const nK = kindNames.length;

  // Free capacity per worker; trees hold copies at their leaves.
  const freeCpu = new Float64Array(nW);
  const freeMem = new Float64Array(nW);
  const freeDev = kindNames.map(() => new Float64Array(nW));
  for (let i = 0; i < nW; i++) {
    const w = workers[i];
    freeCpu[i] = w.capacity.cpuMillis - w.used.cpuMillis;
    freeMem[i] = w.capacity.memoryBytes - w.used.memoryBytes;
    for (let k = 0; k < nK; k++) {
      freeDev[k][i] = (w.capacity.devices[kindNames[k]] ?? 0) - (w.used.devices[kindNames[k]] ?? 0);
    }
  }

  // Which trees hold each worker, at which position: placements update all of them.
  const memberships: { tree: FreeTree; pos: number }[][] = Array.from({ length: nW }, () => []);

  function buildTree(eligible: Int32Array): FreeTree {
    const n = eligible.length;
    let size = 1;
    while (size < n) size <<= 1;
    const tree: FreeTree = {
      n,
      size,
      cpu: new Float64Array(2 * size).fill(-Infinity),
      mem: new Float64Array(2 * size).fill(-Infinity),
      dev: kindNames.map(() => new Float64Array(2 * size).fill(-Infinity)),
    };
    for (let p = 0; p < n; p++) {
      const w = eligible[p];
      tree.cpu[size + p] = freeCpu[w];
      tree.mem[size + p] = freeMem[w];
      for (let k = 0; k < nK; k++) tree.dev[k][size + p] = freeDev[k][w];
      memberships[w].push({ tree, pos: p });
    }
    for (let i = size - 1; i >= 1; i--) {
      tree.cpu[i] = Math.max(tree.cpu[2 * i], tree.cpu[2 * i + 1]);
      tree.mem[i] = Math.max(tree.mem[2 * i], tree.mem[2 * i + 1]);
      for (let k = 0; k < nK; k++) tree.dev[k][i] = Math.max(tree.dev[k][2 * i], tree.dev[k][2 * i + 1]);
    }
    return tree;
  }

  function updateTrees(w: number): void {
    for (const { tree, pos } of memberships[w]) {
      let i = tree.size + pos;
      tree.cpu[i] = freeCpu[w];
      tree.mem[i] = freeMem[w];
      for (let k = 0; k < nK; k++) tree.dev[k][i] = freeDev[k][w];
      for (i >>= 1; i >= 1; i >>= 1) {
        tree.cpu[i] = Math.max(tree.cpu[2 * i], tree.cpu[2 * i + 1]);
        tree.mem[i] = Math.max(tree.mem[2 * i], tree.mem[2 * i + 1]);
        for (let k = 0; k < nK; k++) tree.dev[k][i] = Math.max(tree.dev[k][2 * i], tree.dev[k][2 * i + 1]);
      }
    }
  }

  /** Whether the maxima below `node` could hold the request (exact at a leaf). */
  function nodeFits(tree: FreeTree, node: number, cls: TaskClass): boolean {
    if (tree.cpu[node] < cls.cpu || tree.mem[node] < cls.mem) return false;
    for (let j = 0; j < cls.devKinds.length; j++) {
      if (tree.dev[cls.devKinds[j]][node] < cls.devCounts[j]) return false;
    }
    return true;
  }

  /**
   * The leftmost position ≥ `from` whose worker fits the class, or -1: a depth-first walk from
   * the leaf at `from` rightwards, descending into nodes whose maxima could fit. Maxima of
   * different dimensions may come from different workers, so a descent can fail and move on.
   */
  function leftmost(cls: TaskClass, from: number): number {
    const tree = cls.cs.tree;
    // The root's maxima answer most failures without a walk.
    if (from >= tree.n || !nodeFits(tree, 1, cls)) return -1;
    const size = tree.size;
    let i = from + size;
    for (;;) {
      if (nodeFits(tree, i, cls)) {
        if (i >= size) return i - size;
        i = 2 * i;
        continue;
      }
      while (i & 1) i >>= 1;
      if (i === 0) return -1;
      i++;
    }
  }

  /** How many workers of the class's constraint set fit it now. */
  function countFits(cls: TaskClass): number {
    const tree = cls.cs.tree;
    const rec = (node: number, lo: number, hi: number): number => {
      if (lo >= tree.n || !nodeFits(tree, node, cls)) return 0;
      if (hi - lo === 1) return 1;
      const mid = (lo + hi) >> 1;
      return rec(2 * node, lo, mid) + rec(2 * node + 1, mid, hi);
    };
    return tree.n === 0 ? 0 : rec(1, 0, tree.size);
  }

  function take(cls: TaskClass, w: number): void {
    freeCpu[w] -= cls.cpu;
    freeMem[w] -= cls.mem;
    for (let j = 0; j < cls.devKinds.length; j++) freeDev[cls.devKinds[j]][w] -= cls.devCounts[j];
    updateTrees(w);
  }

  // Classes, shared across tasks with the same constraints and request. Tasks of one job are
  // usually adjacent, so the previous task's class is checked first (by value, which is much
  // cheaper than building the key: number-to-string conversions dominate otherwise).
  const constraintSets = new Map<string, ConstraintSet>();
  const taskClass: TaskClass[] = new Array(pending.length);
  const seen = new Set<string>();

  function constraintSetOf(constraints: SchedConstraint[]): ConstraintSet {
    const key = constraintKey(constraints);
    let cs = constraintSets.get(key);
    if (!cs) {
      const eligible: number[] = [];
      for (let w = 0; w < nW; w++) {
        const attrs = workers[w].attributes;
        if (constraints.every((c) => constraintMatches(c, attrs))) eligible.push(w);
      }
      const el = Int32Array.from(eligible);
      cs = { constraints, eligible: el, tree: buildTree(el), classes: new Map() };
      constraintSets.set(key, cs);
    }
    return cs;
  }

  function classOf(cs: ConstraintSet, request: SchedResources): TaskClass {
    let devs: string[] | undefined;
    for (const k in request.devices) if (request.devices[k] > 0) (devs ??= []).push(k);
    devs?.sort();
    const devKey = devs === undefined ? "" : devs.map((k) => `${k}=${request.devices[k]}`).join(",");
    // A numeric hash (exact while memory < 1 TiB and cpu < 4096 cores; collisions chain): string
    // keys would spend most of this loop converting byte counts to text.
    const hash = request.cpuMillis * 2 ** 40 + request.memoryBytes;
    const head = cs.classes.get(hash);
    for (let c = head; c !== undefined; c = c.nextInBucket) {
      if (c.cpu === request.cpuMillis && c.mem === request.memoryBytes && c.devKey === devKey) return c;
    }
    const cls: TaskClass = {
      cs,
      cpu: request.cpuMillis,
      mem: request.memoryBytes,
      devKey,
      devKinds: devs === undefined ? NO_DEVICES : devs.map((k) => kindIndex.get(k)!),
      devCounts: devs === undefined ? NO_DEVICES : devs.map((k) => request.devices[k]),
      cursor: 0,
      failedReason: undefined,
      nextInBucket: head,
    };
    cs.classes.set(hash, cls);
    return cls;
  }

  let prevConstraints: SchedConstraint[] | undefined;
  let prevCs: ConstraintSet | undefined;
  let prevRequest: SchedResources | undefined;
  let prevCls: TaskClass | undefined;
  for (let i = 0; i < pending.length; i++) {
    const t = pending[i];
    invariant(!seen.has(t.taskId), `duplicate pending task ${t.taskId}`);
    seen.add(t.taskId);
    const cs = prevConstraints !== undefined && sameConstraints(t.constraints, prevConstraints) ? prevCs! : constraintSetOf(t.constraints);
    const cls = prevRequest !== undefined && cs === prevCs && sameRequest(t.request, prevRequest) ? prevCls! : classOf(cs, t.request);
    taskClass[i] = cls;
    prevConstraints = t.constraints;
    prevCs = cs;
    prevRequest = t.request;
    prevCls = cls;
  }

  // Order: priority desc, rank asc, age asc, then snapshot order (stable).
  const order = Array.from(pending.keys());
  order.sort((a, b) => {
    const ta = pending[a];
    const tb = pending[b];
    if (ta.priority !== tb.priority) return tb.priority - ta.priority;
    if ((ta.rank ?? 0) !== (tb.rank ?? 0)) return (ta.rank ?? 0) - (tb.rank ?? 0);
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
      if (members[0] === i) placeGang(members);
      continue;
    }
    const cls = taskClass[i];
    if (cls.failedReason !== undefined) {
      reasons[i] = cls.failedReason;
      continue;
    }
    const p = leftmost(cls, cls.cursor);
    if (p >= 0) {
      cls.cursor = p;
      const w = cls.cs.eligible[p];
      take(cls, w);
      placedOn[i] = w;
      assignments.push({ taskId: t.taskId, workerId: workers[w].id });
    } else {
      cls.cursor = cls.cs.tree.n;
      cls.failedReason = explainSingle(cls);
      reasons[i] = cls.failedReason;
    }
  }

  function placeGang(members: number[]): void {
    if ((pending[members[0]].gangSize ?? members.length) > members.length) {
      const reason = explainGang(members, 0);
      for (const idx of members) reasons[idx] = reason;
      return;
    }
    // Tentative: distinct workers, so each member only needs its own worker to fit. Members of
    // one class continue the search after the previous member of that class.
    const used = new Set<number>();
    const localCursor = new Map<TaskClass, number>();
    const chosen: number[] = [];
    for (let m = 0; m < members.length; m++) {
      const cls = taskClass[members[m]];
      let p = leftmost(cls, localCursor.get(cls) ?? cls.cursor);
      while (p >= 0 && used.has(cls.cs.eligible[p])) p = leftmost(cls, p + 1);
      if (p < 0) {
        const reason = explainGang(members, m);
        for (const idx of members) reasons[idx] = reason;
        return;
      }
      used.add(cls.cs.eligible[p]);
      chosen.push(cls.cs.eligible[p]);
      localCursor.set(cls, p + 1);
    }
    for (let m = 0; m < members.length; m++) {
      const idx = members[m];
      take(taskClass[idx], chosen[m]);
      placedOn[idx] = chosen[m];
      assignments.push({ taskId: pending[idx].taskId, workerId: workers[chosen[m]].id });
    }
  }

  function explainGang(members: number[], failedAt: number): string {
    const cls = taskClass[members[failedAt]];
    const n = Math.max(members.length, pending[members[0]].gangSize ?? 0);
    if (nW === 0) return `gang of ${n}: no workers registered`;
    const constraintReason = explainConstraints(cls.cs);
    if (constraintReason !== undefined) return `gang of ${n}: ${constraintReason}`;
    const scope = cls.cs.constraints.length > 0 ? ` matching ${describeConstraints(cls.cs.constraints)}` : "";
    return `gang of ${n} needs ${n} workers${scope} with ${describeRequest(cls, kindNames)} free, ` + `only ${countFits(cls)} fit (${workerCount(cls.cs.eligible.length)})`;
  }

  function explainSingle(cls: TaskClass): string {
    if (nW === 0) return "no workers registered";
    const constraintReason = explainConstraints(cls.cs);
    if (constraintReason !== undefined) return constraintReason;
    const tree = cls.cs.tree;
    const count = `(${workerCount(tree.n)})`;
    for (let j = 0; j < cls.devKinds.length; j++) {
      const best = tree.dev[cls.devKinds[j]][1];
      if (best < cls.devCounts[j]) {
        const kind = kindNames[cls.devKinds[j]];
        return `insufficient ${kind} devices: need ${cls.devCounts[j]}, best worker has ${Math.max(0, best)} free ${count}`;
      }
    }
    if (tree.mem[1] < cls.mem) {
      return `insufficient memory: need ${formatBytes(cls.mem)}, best worker has ${formatBytes(Math.max(0, tree.mem[1]))} free ${count}`;
    }
    if (tree.cpu[1] < cls.cpu) {
      return `insufficient cpu: need ${formatCores(cls.cpu)}, best worker has ${formatCores(Math.max(0, tree.cpu[1]))} free ${count}`;
    }
    return `insufficient resources: no worker has ${describeRequest(cls, kindNames)} free at once ${count}`;
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

  // Could the task ever fit? Counted once per class: the registered workers matching its
  // constraints whose total capacity holds its request.
  const registered = snapshot.registered;
  const nowMs = snapshot.nowMs ?? 0;
  const capableCount = new Map<TaskClass, number>();
  function capable(cls: TaskClass): number {
    let n = capableCount.get(cls);
    if (n === undefined) {
      n = 0;
      for (const w of registered ?? []) {
        if (!cls.cs.constraints.every((c) => constraintMatches(c, w.attributes))) continue;
        if (w.capacity.cpuMillis < cls.cpu || w.capacity.memoryBytes < cls.mem) continue;
        let ok = true;
        for (let j = 0; j < cls.devKinds.length; j++) {
          if ((w.capacity.devices[kindNames[cls.devKinds[j]]] ?? 0) < cls.devCounts[j]) ok = false;
        }
        if (ok) n++;
      }
      capableCount.set(cls, n);
    }
    return n;
  }

  const startable = snapshot.startable !== undefined && snapshot.startable.length > 0 ? snapshot.startable : undefined;
  const startableCount = new Map<TaskClass, number>();
  function couldStart(cls: TaskClass): number {
    let n = startableCount.get(cls);
    if (n === undefined) {
      n = 0;
      for (const g of startable ?? []) if (holdsClass(g, cls, kindNames)) n += g.count;
      startableCount.set(cls, n);
    }
    return n;
  }

  function neverFits(i: number): string | undefined {
    const t = pending[i];
    if (registered === undefined) return undefined;
    if (startable !== undefined) {
      const cls = taskClass[i];
      const n = t.gangId !== undefined ? Math.max(gangs.get(t.gangId)!.length, t.gangSize ?? 0) : 1;
      if (capable(cls) + couldStart(cls) >= n) return undefined;
      return neverStartsReason(cls, n, startable, kindNames);
    }
    if (registered.length === 0) {
      const limit = t.schedulingTimeoutMs ?? 0;
      if (limit > 0 && t.waitingSinceMs !== undefined && nowMs - t.waitingSinceMs >= limit) {
        return `no worker registered within the scheduling timeout (${formatMillis(limit)})`;
      }
      return undefined;
    }
    const cls = taskClass[i];
    const n = t.gangId !== undefined ? Math.max(gangs.get(t.gangId)!.length, t.gangSize ?? 0) : 1;
    if (capable(cls) >= n) return undefined;
    return neverFitsReason(cls, n, registered, kindNames);
  }

  const unplaced: SchedResult["unplaced"] = [];
  const unschedulable: SchedResult["unschedulable"] = [];
  for (let i = 0; i < pending.length; i++) {
    if (placedOn[i] >= 0) continue;
    const never = neverFits(i);
    if (never !== undefined) {
      unschedulable.push({ taskId: pending[i].taskId, reason: never });
      continue;
    }
    const reason = reasons[i];
    invariant(reason !== undefined, `task ${pending[i].taskId} neither placed nor explained`);
    unplaced.push({ taskId: pending[i].taskId, reason });
  }
  return { assignments, unplaced, unschedulable };
}

/** Whether a worker of this total capacity and these attributes could ever hold one task of the class. */
function holdsClass(w: SchedCapacity, cls: TaskClass, kindNames: string[]): boolean {
  if (!cls.cs.constraints.every((c) => constraintMatches(c, w.attributes))) return false;
  if (w.capacity.cpuMillis < cls.cpu || w.capacity.memoryBytes < cls.mem) return false;
  for (let j = 0; j < cls.devKinds.length; j++) {
    if ((w.capacity.devices[kindNames[cls.devKinds[j]]] ?? 0) < cls.devCounts[j]) return false;
  }
  return true;
}

/** Why a class (a gang of `n` when n > 1) can never fit what is registered or the groups could start. */
function neverStartsReason(cls: TaskClass, n: number, startable: SchedStartable[], kindNames: string[]): string {
  let largest = startable[0];
  for (const g of startable) {
    if (g.capacity.cpuMillis > largest.capacity.cpuMillis || (g.capacity.cpuMillis === largest.capacity.cpuMillis && g.capacity.memoryBytes > largest.capacity.memoryBytes))
      largest = g;
  }
  const scope = cls.cs.constraints.length > 0 ? ` matching ${describeConstraints(cls.cs.constraints)}` : "";
  const shape = `the largest group, ${largest.name}, starts workers of cpu ${formatCores(largest.capacity.cpuMillis)}, memory ${formatBytes(largest.capacity.memoryBytes)}`;
  const devs = Object.entries(largest.capacity.devices).filter(([, v]) => v > 0);
  const shapeText = devs.length > 0 ? `${shape}, ${devs.map(([k, v]) => `${v} ${k}`).join(", ")}` : shape;
  if (n > 1) return `gang of ${n} needs ${n} workers${scope} with ${describeRequest(cls, kindNames)} each, and no scale group can start that many; ${shapeText}`;
  return `no scale group can hold ${describeRequest(cls, kindNames)}${scope}; ${shapeText}`;
}

/** Why a class (a gang of `n` when n > 1) can never fit the registered workers. */
function neverFitsReason(cls: TaskClass, n: number, registered: SchedCapacity[], kindNames: string[]): string {
  const nR = registered.length;
  const all = `${nR} registered ${nR === 1 ? "worker" : "workers"}`;
  for (const c of cls.cs.constraints) {
    if (!registered.some((w) => constraintMatches(c, w.attributes))) return `constraint ${describeConstraint(c)} matches none of the ${all}`;
  }
  const eligible = registered.filter((w) => cls.cs.constraints.every((c) => constraintMatches(c, w.attributes)));
  if (eligible.length === 0) return `constraints ${describeConstraints(cls.cs.constraints)} together match none of the ${all}`;
  const scope = eligible.length === nR ? all : `${eligible.length} of the ${all} (matching ${describeConstraints(cls.cs.constraints)})`;
  if (n > 1) {
    const fit = eligible.filter(
      (w) => w.capacity.cpuMillis >= cls.cpu && w.capacity.memoryBytes >= cls.mem && cls.devKinds.every((k, j) => (w.capacity.devices[kindNames[k]] ?? 0) >= cls.devCounts[j]),
    ).length;
    const totalCpu = eligible.reduce((a, w) => a + w.capacity.cpuMillis, 0);
    const totalMem = eligible.reduce((a, w) => a + w.capacity.memoryBytes, 0);
    return (
      `gang of ${n} needs ${n} workers with ${describeRequest(cls, kindNames)} each ` +
      `(${formatCores(cls.cpu * n)}, ${formatBytes(cls.mem * n)} in all); ` +
      `only ${fit} of ${scope} could ever hold a member (together ${formatCores(totalCpu)}, ${formatBytes(totalMem)})`
    );
  }
  for (let j = 0; j < cls.devKinds.length; j++) {
    const kind = kindNames[cls.devKinds[j]];
    const best = Math.max(...eligible.map((w) => w.capacity.devices[kind] ?? 0));
    if (best < cls.devCounts[j]) return `needs ${cls.devCounts[j]} ${kind} devices, the largest of ${scope} has ${best}`;
  }
  const bestMem = Math.max(...eligible.map((w) => w.capacity.memoryBytes));
  if (bestMem < cls.mem) return `needs memory ${formatBytes(cls.mem)}, the largest of ${scope} has ${formatBytes(bestMem)}`;
  const bestCpu = Math.max(...eligible.map((w) => w.capacity.cpuMillis));
  if (bestCpu < cls.cpu) return `needs cpu ${formatCores(cls.cpu)}, the largest of ${scope} has ${formatCores(bestCpu)}`;
  return `needs ${describeRequest(cls, kindNames)} on one worker, and none of ${scope} has all of it`;
}

/** Milliseconds for people: `300 ms`, `45 s`, `5 min`, `1.5 h`. */
export function formatMillis(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${Math.round(ms / 100) / 10} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 6000) / 10} min`;
  return `${Math.round(ms / 360_000) / 10} h`;
}

function workerCount(n: number): string {
  return `${n} ${n === 1 ? "worker" : "workers"}`;
}

function describeConstraints(cs: SchedConstraint[]): string {
  return cs.map(describeConstraint).join(", ");
}

function describeRequest(cls: TaskClass, kindNames: string[]): string {
  const parts = [`cpu ${formatCores(cls.cpu)}`, `memory ${formatBytes(cls.mem)}`];
  for (let j = 0; j < cls.devKinds.length; j++) parts.push(`${cls.devCounts[j]} ${kindNames[cls.devKinds[j]]}`);
  return parts.join(", ");
}
