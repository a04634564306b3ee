// The autoscaler's policy: a pure, deterministic function from what is pending and what each
// scale group has (workers pending in the provider, booting, ready, idle, draining) at a given
// time to decisions, each with a reason people read. No I/O, no clock of its own: the loop in
// autoscaler.ts gathers the input, applies the decisions through the providers and records them.
//
// Rules:
// - Demand: each pending job is one entry (its pending tasks, one request); a gang of n is ONE
//   unit needing n distinct workers at once (one member per worker, as the scheduler places it).
// - Routing: entries in scheduling order (priority desc, then age); each goes to the first group
//   (group priority desc, then config order) whose worker shape holds one task and whose
//   attributes meet its constraints. A group that cannot take it now (at max, backing off) passes
//   it on to the next capable group; when none can, the reason of the first one is kept.
// - Supply: a group's workers that have not registered yet (pending, booting) and its ready ones
//   with no attempt are counted with their whole shape free; demand fills them first (first fit),
//   and only what is left starts new workers, up to maxWorkers. A gang is provisioned whole or not
//   at all.
// - minWorkers is kept (new workers started when fewer are up or coming).
// - Scale-down: a ready worker with no attempt, idle for idleTimeout and not just counted as
//   supply, is drained and stopped, never taking the group below minWorkers. A draining worker is
//   stopped once it holds no attempt. A busy worker is never stopped.
// - Boot timeout: a worker not registered within bootTimeout of its start is cancelled and
//   counted as a failed boot; after n failed boots in a row the group starts nothing for
//   min(1 min × 2^(n−1), 30 min). A registration resets the count (the loop does that).

import type { SchedConstraint, SchedResources } from "../controller/scheduler.ts";
import { constraintMatches, describeConstraint, formatBytes, formatMillis } from "../controller/scheduler.ts";
import { backoffDelay } from "../toolkit/backoff.ts";
import type { DemandEntry } from "../controller/controllerState.ts";
import type { ScaleGroupConfig } from "./provider.ts";

export type { DemandEntry };

/** Where a group's worker is: pending in the provider, booting (running, not registered), ready, draining. */
export type PolicyWorkerState = "pending" | "booting" | "ready" | "draining";

/** A worker a provider started for a group, as the policy sees it. */
export interface PolicyWorker {
  workerId: string;
  providerId: string;
  state: PolicyWorkerState;
  /** Holds an attempt (ready/draining only). */
  busy: boolean;
  startedAtMs: number;
  /** Ready and holding nothing: since when (registration or its last attempt's end). */
  idleSinceMs?: number | undefined;
  /** The provider's words, shown in parentheses (`slurm job 812 PENDING: Resources`). */
  detail?: string | undefined;
}

/** A group's failed-boot record (carried from one decision to the next by the loop). */
export interface GroupBootState {
  /** Failed boots in a row. */
  failedBoots: number;
  /** Nothing is started before this time (0 = no backoff). */
  backoffUntilMs: number;
}

export interface PolicyGroup {
  config: ScaleGroupConfig;
  workers: PolicyWorker[];
  boot: GroupBootState;
}

export interface PolicyInput {
  nowMs: number;
  /** In config order. */
  groups: PolicyGroup[];
  demand: DemandEntry[];
}

/** One decision. `start`: start `count` workers; `stop`: drain then stop; `cancel`: a failed boot; `hold`: nothing done, and why. */
export type Decision =
  | { kind: "start"; group: string; count: number; reason: string }
  | { kind: "stop"; group: string; workerId: string; providerId: string; reason: string }
  | { kind: "cancel"; group: string; workerId: string; providerId: string; reason: string }
  | { kind: "hold"; group: string | undefined; reason: string };

/** What each group is asked for this round. */
export interface GroupDemand {
  /** Demand units routed to it (a gang counts once). */
  units: number;
  /** Tasks routed to it. */
  tasks: number;
}

export interface PolicyOutput {
  decisions: Decision[];
  /**
   * Per demand entry (same index as `input.demand`): what is being done for its pending tasks.
   * An array, not a map by job id: hashing 100,000 ids would cost more than the decision.
   */
  notes: (string | undefined)[];
  /** Per group name: the demand routed to it. */
  routed: Map<string, GroupDemand>;
  /** Per group name: its boot record after this round. */
  boot: Map<string, GroupBootState>;
}

/** How long a group waits after its n-th failed boot in a row. */
export function backoffMs(failedBoots: number): number {
  return failedBoots <= 0 ? 0 : backoffDelay(failedBoots - 1, { initialMs: 60_000, maxMs: 30 * 60_000 });
}

/** `cpu 64`, `cpu 4, memory 8.0 GiB, 2 gpu`: a request or a shape for people. */
export function describeShape(r: SchedResources): string {
  const parts = [`cpu ${Math.round(r.cpuMillis) / 1000}`];
  if (r.memoryBytes > 0) parts.push(`memory ${formatBytes(r.memoryBytes)}`);
  for (const k of Object.keys(r.devices).sort()) if (r.devices[k] > 0) parts.push(`${r.devices[k]} ${k}`);
  return parts.join(", ");
}

/** The group whose worker shape is largest (cpu, then memory; first in config order on ties). */
export function largestGroup(groups: readonly ScaleGroupConfig[]): ScaleGroupConfig | undefined {
  let best: ScaleGroupConfig | undefined;
  for (const g of groups) {
    if (!best || g.worker.cpuMillis > best.worker.cpuMillis || (g.worker.cpuMillis === best.worker.cpuMillis && g.worker.memoryBytes > best.worker.memoryBytes)) best = g;
  }
  return best;
}

/** Whether a worker of `shape` (whole) could ever hold one task asking `req` under `constraints`. */
export function shapeHolds(g: ScaleGroupConfig, req: SchedResources, constraints: readonly SchedConstraint[]): boolean {
  return holdsWith(g, groupAttributes(g), req, constraints);
}

/** The attributes a group's workers register with (its own plus `iris.group`). */
function groupAttributes(g: ScaleGroupConfig): Record<string, string> {
  return { ...g.worker.attributes, "iris.group": g.name };
}

/** {@link shapeHolds} with the group's attributes built once. */
function holdsWith(g: ScaleGroupConfig, attrs: Record<string, string>, req: SchedResources, constraints: readonly SchedConstraint[]): boolean {
  const w = g.worker;
  if (w.cpuMillis < req.cpuMillis || w.memoryBytes < req.memoryBytes) return false;
  for (const k in req.devices) if (req.devices[k] > 0 && (w.devices[k] ?? 0) < req.devices[k]) return false;
  return constraints.every((c) => constraintMatches(c, attrs));
}

const NO_KINDS: string[] = [];

/** The device kinds a request asks for (> 0); computed once per request shape. */
function kindsOf(devices: Record<string, number>): string[] {
  let out: string[] | undefined;
  for (const k of Object.keys(devices)) if (devices[k] > 0) (out ??= []).push(k);
  return out ?? NO_KINDS;
}

/** How many tasks asking `req` (whose device kinds are `kinds`) fit in `free` (at most `cap`). */
function fitCount(freeCpu: number, freeMem: number, freeDev: Record<string, number>, req: SchedResources, kinds: readonly string[], cap: number): number {
  let n = cap;
  if (req.cpuMillis > 0) n = Math.min(n, Math.floor(freeCpu / req.cpuMillis));
  else if (freeCpu < 0) n = 0;
  if (req.memoryBytes > 0) n = Math.min(n, Math.floor(freeMem / req.memoryBytes));
  for (let i = 0; i < kinds.length; i++) {
    const k = kinds[i];
    n = Math.min(n, Math.floor((freeDev[k] ?? 0) / req.devices[k]));
  }
  return Math.max(0, n);
}

/** A worker's free capacity during one decision (existing, or planned this round). */
interface Slot {
  cpu: number;
  mem: number;
  dev: Record<string, number>;
  /** Not registered yet (pending, booting, or planned now). */
  coming: boolean;
  /** An existing ready worker: counting it as supply keeps it from being stopped. */
  workerId: string | undefined;
  detail: string | undefined;
  /** The note of a job placed on this slot alone (built once, shared by every such job). */
  note: string | undefined;
}

/** Per group, during one decision. */
interface GroupRun {
  g: PolicyGroup;
  index: number;
  slots: Slot[];
  /** Live workers (not cancelled, not draining) plus those planned. */
  total: number;
  planned: number;
  /** Starts by job, in order, for the decisions. */
  startsFor: { jobName: string; count: number; gang: number }[];
  backoffUntilMs: number;
  failedBoots: number;
  /** Ready workers that took demand this round (not stopped). */
  usedReady: Set<string>;
  routed: GroupDemand;
  /**
   * First-fit cursor per request shape (by shape id): the slots before it cannot hold one more
   * task of that shape. Free capacity only shrinks within a round, so it only moves forward.
   */
  cursors: number[];
  /** Notes built once per count: `placing on N idle …` and `waiting for N … to boot` (no detail). */
  placingNotes: string[];
  waitingNotes: string[];
  /** Its workers' attributes (built on first use). */
  attrs: Record<string, string> | undefined;
}

/** A request's resources seen this round; first-fit cursors are kept per shape. */
interface Shape {
  id: number;
  req: SchedResources;
  kinds: string[];
}

/**
 * A demand class: a shape and a set of constraints (compared as the sorted descriptions of its
 * constraints), with what this round learned about it. Every entry of a class is routed by the
 * same facts, so they are computed once per class instead of once per entry.
 */
interface DemandClass {
  shape: Shape;
  constraints: readonly SchedConstraint[];
  /** The groups whose worker shape can hold one task, in routing order (computed on first use). */
  capable: GroupRun[] | undefined;
  /** Why no group can hold it (built once; its text names the constraints as the entry orders them). */
  noHold: string | undefined;
  /** Its record among the held reasons (counts the jobs held for it). */
  noHoldHeld: Held | undefined;
  /** A single-task entry found no room anywhere: every later one finds none either, for this reason. */
  singleFailed: string | undefined;
  singleHeld: Held | undefined;
  /** A gang of `n` found no room: a later gang at least as large is held for the same reason. */
  gangFailed: { n: number; reason: string } | undefined;
}

function sameDevices(a: Record<string, number>, b: Record<string, number>): boolean {
  for (const k in a) if (a[k] > 0 && b[k] !== a[k]) return false;
  for (const k in b) if (b[k] > 0 && a[k] !== b[k]) return false;
  return true;
}

function sameValues(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  const x = a ?? NO_KINDS;
  const y = b ?? NO_KINDS;
  if (x.length !== y.length) return x.join(", ") === y.join(", ");
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x.join(", ") === y.join(", ");
  return true;
}

/** Whether two constraints read the same (their descriptions are equal), without building them. */
function sameConstraint(a: SchedConstraint, b: SchedConstraint): boolean {
  if (a.key !== b.key || a.op !== b.op) return describeConstraint(a) === describeConstraint(b);
  if (a.op === "EXISTS") return true;
  if (a.op === "IN") return sameValues(a.values, b.values);
  return (a.value ?? "") === (b.value ?? "");
}

/** Whether two constraint lists are the same set (as their sorted descriptions). */
function sameConstraints(a: readonly SchedConstraint[], b: readonly SchedConstraint[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  if (a.length === 0) return true;
  if (a.length === 1) return sameConstraint(a[0], b[0]);
  const x = a.map(describeConstraint).sort();
  const y = b.map(describeConstraint).sort();
  return x.every((s, i) => s === y[i]);
}

/** A reason work is held, and how many jobs it holds. */
interface Held {
  group: string | undefined;
  reason: string;
  jobs: number;
}

/** A small integer (a Smi) from a request's cpu and memory. */
function shapeHash(req: SchedResources): number {
  // Memory by MiB: `%` on a double is a call that boxes its result, a division and `| 0` are not.
  return (Math.imul(req.cpuMillis | 0, 0x9e3779b1) ^ ((req.memoryBytes / 1048576) | 0)) & 0x3fffffff;
}

/**
 * A hash of a constraint's description (its length and last character) computed without building
 * it: constraints that read the same hash the same, and summing them ignores their order.
 */
function descriptionHash(c: SchedConstraint): number {
  let len: number;
  let last: number;
  if (c.op === "EXISTS") {
    len = c.key.length + 7;
    last = 83; // "S"
  } else if (c.op === "IN") {
    const vs = c.values ?? NO_KINDS;
    len = c.key.length + 5;
    for (let i = 0; i < vs.length; i++) len += vs[i].length + (i > 0 ? 2 : 0);
    last = 93; // "]"
  } else {
    const v = c.value ?? "";
    len = c.key.length + c.op.length + 2 + v.length;
    last = v.length > 0 ? v.charCodeAt(v.length - 1) : 32;
  }
  return (Math.imul(len, 31) + last) | 0;
}

/**
 * Demand classes by a small integer hash of cpu, memory and the constraints' descriptions (a Smi:
 * no number boxing, no string building per entry), then compared field by field. The last entry's request and constraints
 * objects are remembered: entries sharing them (as a controller's cached specs do) skip the lookup.
 */
class DemandClasses {
  private readonly byHash = new Map<number, DemandClass[]>();
  private readonly shapes = new Map<number, Shape[]>();
  private nextShape = 0;
  private lastReq: SchedResources | undefined;
  private lastCons: readonly SchedConstraint[] | undefined;
  private lastClass: DemandClass | undefined;

  get shapeCount(): number {
    return this.nextShape;
  }

  of(req: SchedResources, constraints: readonly SchedConstraint[]): DemandClass {
    if (req === this.lastReq && constraints === this.lastCons) return this.lastClass!;
    const hs = shapeHash(req);
    let hc = 0;
    for (let i = 0; i < constraints.length; i++) hc += descriptionHash(constraints[i]);
    const h = (hs ^ Math.imul(hc, 0x85ebca6b)) & 0x3fffffff;
    let list = this.byHash.get(h);
    if (list === undefined) this.byHash.set(h, (list = []));
    let cls: DemandClass | undefined;
    for (let i = 0; i < list.length; i++) {
      const c = list[i];
      const r = c.shape.req;
      if (r.cpuMillis === req.cpuMillis && r.memoryBytes === req.memoryBytes && sameDevices(r.devices, req.devices) && sameConstraints(c.constraints, constraints)) {
        cls = c;
        break;
      }
    }
    if (cls === undefined) {
      cls = {
        shape: this.shapeOf(hs, req),
        constraints,
        capable: undefined,
        noHold: undefined,
        noHoldHeld: undefined,
        singleFailed: undefined,
        singleHeld: undefined,
        gangFailed: undefined,
      };
      list.push(cls);
    }
    this.lastReq = req;
    this.lastCons = constraints;
    this.lastClass = cls;
    return cls;
  }

  private shapeOf(h: number, req: SchedResources): Shape {
    let list = this.shapes.get(h);
    if (list === undefined) this.shapes.set(h, (list = []));
    for (const s of list) if (s.req.cpuMillis === req.cpuMillis && s.req.memoryBytes === req.memoryBytes && sameDevices(s.req.devices, req.devices)) return s;
    const s: Shape = { id: this.nextShape++, req, kinds: kindsOf(req.devices) };
    list.push(s);
    return s;
  }
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * Entry indices by priority (higher first), then age, then input order. Demand read from the
 * controller comes oldest first: then this is a counting sort by priority, O(n), not a sort.
 */
function schedulingOrder(demand: readonly DemandEntry[]): ArrayLike<number> {
  let byAge = true;
  for (let i = 1; i < demand.length && byAge; i++) if (demand[i].submittedAtMs < demand[i - 1].submittedAtMs) byAge = false;
  // The distinct priorities (few): each entry's bucket by a short linear search.
  const prios: number[] = [];
  const bucket = new Int32Array(demand.length);
  let lastP = Number.NaN;
  let lastB = -1;
  for (let i = 0; i < demand.length && byAge; i++) {
    const p = demand[i].priority;
    if (p !== lastP) {
      lastP = p;
      lastB = prios.indexOf(p);
      if (lastB < 0) {
        if (prios.length === 64 || Number.isNaN(p)) byAge = false;
        lastB = prios.length;
        prios.push(p);
      }
    }
    bucket[i] = lastB;
  }
  if (!byAge) {
    return Array.from(demand.keys()).sort((a, b) => {
      const x = demand[a];
      const y = demand[b];
      return y.priority - x.priority || x.submittedAtMs - y.submittedAtMs || a - b;
    });
  }
  const out = new Int32Array(demand.length);
  if (prios.length <= 1) {
    for (let i = 0; i < out.length; i++) out[i] = i;
    return out;
  }
  const counts = new Int32Array(prios.length);
  for (let i = 0; i < bucket.length; i++) counts[bucket[i]]++;
  const start = new Int32Array(prios.length);
  let at = 0;
  for (const b of Array.from(prios.keys()).sort((x, y) => prios[y] - prios[x])) {
    start[b] = at;
    at += counts[b];
  }
  for (let i = 0; i < bucket.length; i++) out[start[bucket[i]]++] = i;
  return out;
}

/**
 * One round of the policy. Pure: the same input always gives the same output.
 *
 * Entries are grouped into demand classes (request shape and constraints): which groups can hold
 * a class, why none can, and whether it already found no room are computed once per class;
 * first-fit cursors are kept per shape; the notes of jobs placed alike are built once and shared.
 * Each entry then costs a class lookup and, when it is placed, a step of first fit.
 *
 * @example
 * const out = decide({ nowMs, groups: [{ config, workers: [], boot: { failedBoots: 0, backoffUntilMs: 0 } }], demand });
 * // out.decisions[0]: { kind: "start", group: "cpu", count: 2, reason: "+2 cpu for /alice/train (gang of 2)" }
 */
export function decide(input: PolicyInput): PolicyOutput {
  const now = input.nowMs;
  const decisions: Decision[] = [];
  const notes: (string | undefined)[] = new Array<string | undefined>(input.demand.length).fill(undefined);
  const runs: GroupRun[] = [];

  // 1. Boot timeouts, and each group's supply.
  for (let i = 0; i < input.groups.length; i++) {
    const g = input.groups[i];
    const c = g.config;
    const run: GroupRun = {
      g,
      index: i,
      slots: [],
      total: 0,
      planned: 0,
      startsFor: [],
      backoffUntilMs: g.boot.backoffUntilMs,
      failedBoots: g.boot.failedBoots,
      usedReady: new Set(),
      routed: { units: 0, tasks: 0 },
      cursors: [],
      placingNotes: [],
      waitingNotes: [],
      attrs: undefined,
    };
    const workers = [...g.workers].sort((a, b) => a.startedAtMs - b.startedAtMs || (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0));
    for (const w of workers) {
      if ((w.state === "pending" || w.state === "booting") && now - w.startedAtMs >= c.bootTimeoutMs) {
        run.failedBoots++;
        run.backoffUntilMs = now + backoffMs(run.failedBoots);
        const detail = w.detail ? ` (${w.detail})` : "";
        decisions.push({
          kind: "cancel",
          group: c.name,
          workerId: w.workerId,
          providerId: w.providerId,
          reason: `${c.name}: ${w.workerId} not registered within ${formatMillis(c.bootTimeoutMs)}${detail}, cancelled; boot failed ${run.failedBoots}×, backing off ${formatMillis(backoffMs(run.failedBoots))}`,
        });
        continue;
      }
      if (w.state === "draining") continue;
      run.total++;
      if (w.state === "pending" || w.state === "booting" || !w.busy) {
        run.slots.push({
          cpu: c.worker.cpuMillis,
          mem: c.worker.memoryBytes,
          dev: { ...c.worker.devices },
          coming: w.state !== "ready",
          workerId: w.state === "ready" ? w.workerId : undefined,
          detail: w.detail,
          note: undefined,
        });
      }
    }
    runs.push(run);
  }

  // Routing order of the groups: priority desc, then config order.
  const ordered = [...runs].sort((a, b) => b.g.config.priority - a.g.config.priority || a.index - b.index);
  const classes = new DemandClasses();
  const holds = new Map<string, Held>();
  const hold = (group: string | undefined, reason: string): Held => {
    let h = holds.get(reason);
    if (h) h.jobs++;
    else holds.set(reason, (h = { group, reason, jobs: 1 }));
    return h;
  };
  const largest = largestGroup(input.groups.map((g) => g.config));
  const largestText = largest
    ? ` (largest worker: ${largest.name}, ${describeShape({ cpuMillis: largest.worker.cpuMillis, memoryBytes: largest.worker.memoryBytes, devices: largest.worker.devices })})`
    : "";
  const noHoldReason = (req: SchedResources, constraints: readonly SchedConstraint[]): string =>
    `no group can hold ${describeShape(req)}${constraints.length > 0 ? ` with ${constraints.map(describeConstraint).join(", ")}` : ""}` + largestText;

  // Why a group takes no more now, or undefined when it may start `n` more (texts built once).
  const backoffText = new Map<GroupRun, string>();
  const maxText = new Map<GroupRun, string>();
  const blocked = (r: GroupRun, n: number): string | undefined => {
    const c = r.g.config;
    if (r.backoffUntilMs > now) {
      let t = backoffText.get(r);
      if (t === undefined) backoffText.set(r, (t = `${c.name}: boot failed ${r.failedBoots}×, backing off ${formatMillis(r.backoffUntilMs - now)}`));
      return t;
    }
    if (r.total + n > c.maxWorkers) {
      let t = maxText.get(r);
      if (t === undefined) maxText.set(r, (t = `${c.name} at max ${c.maxWorkers}`));
      return t;
    }
    return undefined;
  };

  const plan = (r: GroupRun, jobName: string, count: number, gang: number): void => {
    const c = r.g.config;
    for (let i = 0; i < count; i++)
      r.slots.push({ cpu: c.worker.cpuMillis, mem: c.worker.memoryBytes, dev: { ...c.worker.devices }, coming: true, workerId: undefined, detail: undefined, note: undefined });
    r.total += count;
    r.planned += count;
    const last = r.startsFor[r.startsFor.length - 1];
    if (last && last.jobName === jobName && gang === 0 && last.gang === 0) last.count += count;
    else r.startsFor.push({ jobName, count, gang });
  };

  const take = (s: Slot, req: SchedResources, kinds: readonly string[], n: number): void => {
    s.cpu -= req.cpuMillis * n;
    s.mem -= req.memoryBytes * n;
    for (let i = 0; i < kinds.length; i++) s.dev[kinds[i]] = (s.dev[kinds[i]] ?? 0) - req.devices[kinds[i]] * n;
  };

  /** What is done for tasks placed on `coming` slots not registered yet and `ready` idle ones (`detail`: the first coming slot's). */
  const waitingNote = (r: GroupRun, coming: number, ready: number, detail: string | undefined): string => {
    const name = r.g.config.name;
    if (coming === 0) return (r.placingNotes[ready] ??= `placing on ${plural(ready, `idle ${name} worker`)}`);
    if (detail === undefined) return (r.waitingNotes[coming] ??= `waiting for ${plural(coming, `${name} worker`)} to boot`);
    return `waiting for ${plural(coming, `${name} worker`)} to boot (${detail})`;
  };
  /** The note of tasks placed on one slot alone. */
  const slotNote = (r: GroupRun, s: Slot): string => (s.note ??= s.coming ? waitingNote(r, 1, 0, s.detail) : waitingNote(r, 0, 1, undefined));

  // 2. Demand, in scheduling order.
  const order = schedulingOrder(input.demand);
  for (let oi = 0; oi < order.length; oi++) {
    const di = order[oi];
    const d = input.demand[di];
    if (d.tasks <= 0) continue;
    const cls = classes.of(d.request, d.constraints);
    const shape = cls.shape;
    const req = shape.req;
    const kinds = shape.kinds;
    let capable = cls.capable;
    if (capable === undefined) {
      const cons = cls.constraints;
      capable = cls.capable = ordered.filter((r) => holdsWith(r.g.config, (r.attrs ??= groupAttributes(r.g.config)), req, cons));
    }
    if (capable.length === 0) {
      // The reason names the constraints in the entry's own order.
      if (d.constraints.length <= 1) {
        notes[di] = cls.noHold ??= noHoldReason(d.request, d.constraints);
        if (cls.noHoldHeld === undefined) cls.noHoldHeld = hold(undefined, cls.noHold);
        else cls.noHoldHeld.jobs++;
        continue;
      }
      const reason = noHoldReason(d.request, d.constraints);
      notes[di] = reason;
      hold(undefined, reason);
      continue;
    }
    if (!d.gang && cls.singleHeld !== undefined) {
      notes[di] = cls.singleHeld.reason;
      cls.singleHeld.jobs++;
      continue;
    }
    const known = d.gang ? cls.gangFailed : undefined;
    const knownReason = d.gang ? (known !== undefined && d.tasks >= known.n ? known.reason : undefined) : cls.singleFailed;
    if (knownReason !== undefined) {
      notes[di] = knownReason;
      hold(capable[0].g.config.name, knownReason);
      continue;
    }
    let firstBlock: string | undefined;
    let remaining = d.tasks;
    let note: string | undefined;
    const sid = shape.id;
    for (let ci = 0; ci < capable.length; ci++) {
      const r = capable[ci];
      if (remaining === 0) break;
      if (d.gang) {
        // n distinct workers, one member each: free slots first, then new workers, or nothing.
        const n = d.tasks;
        const chosen: Slot[] = [];
        // Slots before the shape's cursor cannot hold one more task of it; the leading slots
        // found full now move it on (free capacity only shrinks).
        let lead = true;
        for (let i = r.cursors[sid] ?? 0; i < r.slots.length && chosen.length < n; i++) {
          const s = r.slots[i];
          if (fitCount(s.cpu, s.mem, s.dev, req, kinds, 1) === 1) {
            chosen.push(s);
            lead = false;
          } else if (lead) r.cursors[sid] = i + 1;
        }
        const need = n - chosen.length;
        const why = need > 0 ? blocked(r, need) : undefined;
        if (why !== undefined) {
          firstBlock ??= why;
          continue;
        }
        let comingChosen = 0;
        let detail: string | undefined;
        for (const s of chosen) {
          take(s, req, kinds, 1);
          if (s.workerId !== undefined) r.usedReady.add(s.workerId);
          if (s.coming) {
            comingChosen++;
            if (detail === undefined) detail = s.detail;
          }
        }
        const before = r.slots.length;
        if (need > 0) plan(r, d.jobName, need, n);
        for (let i = before; i < r.slots.length; i++) take(r.slots[i], req, kinds, 1);
        const part = waitingNote(r, comingChosen + (r.slots.length - before), chosen.length - comingChosen, detail);
        note = note === undefined ? part : `${note}; ${part}`;
        r.routed.units++;
        r.routed.tasks += n;
        remaining = 0;
        break;
      }
      // Single tasks: first fit over the group's free slots, then new workers.
      let cur = r.cursors[sid] ?? 0;
      let usedN = 0;
      let comingN = 0;
      let detail: string | undefined;
      let only: Slot | undefined;
      let took = 0;
      const slots = r.slots;
      while (remaining > 0 && cur < slots.length) {
        const s = slots[cur];
        const k = fitCount(s.cpu, s.mem, s.dev, req, kinds, remaining);
        if (k > 0) {
          take(s, req, kinds, k);
          remaining -= k;
          took += k;
          usedN++;
          only = s;
          if (s.coming) {
            comingN++;
            if (detail === undefined) detail = s.detail;
          }
          if (s.workerId !== undefined) r.usedReady.add(s.workerId);
          if (remaining > 0) cur++;
        } else cur++;
      }
      r.cursors[sid] = cur;
      if (remaining > 0) {
        const c = r.g.config;
        const perWorker = fitCount(c.worker.cpuMillis, c.worker.memoryBytes, c.worker.devices, req, kinds, Number.MAX_SAFE_INTEGER);
        const need = Math.ceil(remaining / Math.max(1, perWorker));
        const room = r.backoffUntilMs > now ? 0 : Math.max(0, c.maxWorkers - r.total);
        const n = Math.min(need, room);
        if (n < need) firstBlock ??= blocked(r, need);
        if (n > 0) {
          const before = slots.length;
          plan(r, d.jobName, n, 0);
          for (let i = before; i < slots.length && remaining > 0; i++) {
            const k = Math.min(remaining, perWorker);
            take(slots[i], req, kinds, k);
            remaining -= k;
            took += k;
            usedN++;
            comingN++;
            only = slots[i];
          }
        }
      }
      if (took > 0) {
        const part = usedN === 1 ? slotNote(r, only!) : waitingNote(r, comingN, usedN - comingN, detail);
        note = note === undefined ? part : `${note}; ${part}`;
        r.routed.units++;
        r.routed.tasks += took;
      }
    }
    if (remaining > 0 && firstBlock !== undefined) {
      const part = remaining === d.tasks ? firstBlock : `${remaining} more: ${firstBlock}`;
      note = note === undefined ? part : `${note}; ${part}`;
      const held = hold(capable[0].g.config.name, firstBlock);
      if (!d.gang) {
        cls.singleFailed = firstBlock;
        cls.singleHeld = held;
      } else if (remaining === d.tasks) {
        const prev = cls.gangFailed;
        if (prev === undefined || d.tasks < prev.n) cls.gangFailed = { n: d.tasks, reason: firstBlock };
      }
    }
    if (note !== undefined) notes[di] = note;
  }
  // 3. minWorkers.
  for (const r of runs) {
    const c = r.g.config;
    const missing = c.minWorkers - r.total;
    if (missing <= 0) continue;
    if (r.backoffUntilMs > now) {
      hold(c.name, `${c.name}: boot failed ${r.failedBoots}×, backing off ${formatMillis(r.backoffUntilMs - now)}`);
      continue;
    }
    plan(r, "", missing, 0);
  }

  // 4. Starts, as decisions (one per job, in order).
  for (const r of runs) {
    const name = r.g.config.name;
    for (const s of r.startsFor) {
      const reason =
        s.jobName === "" ? `+${s.count} ${name} to keep min ${r.g.config.minWorkers}` : `+${s.count} ${name} for ${s.jobName}${s.gang > 0 ? ` (gang of ${s.gang})` : ""}`;
      decisions.push({ kind: "start", group: name, count: s.count, reason });
    }
  }

  // 5. Scale-down: drained workers with nothing left; idle ready workers past idleTimeout.
  for (const r of runs) {
    const c = r.g.config;
    const ws = [...r.g.workers].sort((a, b) => (a.idleSinceMs ?? a.startedAtMs) - (b.idleSinceMs ?? b.startedAtMs) || (a.workerId < b.workerId ? -1 : 1));
    for (const w of ws) {
      if (w.state === "draining" && !w.busy) {
        decisions.push({ kind: "stop", group: c.name, workerId: w.workerId, providerId: w.providerId, reason: `-1 ${c.name}: ${w.workerId} drained` });
      }
    }
    let stoppable = r.total - r.planned - c.minWorkers;
    for (const w of ws) {
      if (stoppable <= 0) break;
      if (w.state !== "ready" || w.busy || r.usedReady.has(w.workerId) || w.idleSinceMs === undefined) continue;
      const idle = now - w.idleSinceMs;
      if (idle < c.idleTimeoutMs) continue;
      decisions.push({ kind: "stop", group: c.name, workerId: w.workerId, providerId: w.providerId, reason: `-1 ${c.name}: ${w.workerId} idle for ${formatMillis(idle)}` });
      stoppable--;
    }
  }

  for (const h of holds.values()) decisions.push({ kind: "hold", group: h.group, reason: h.jobs > 1 ? `${h.reason} (${h.jobs} jobs waiting)` : h.reason });

  const routed = new Map<string, GroupDemand>();
  const boot = new Map<string, GroupBootState>();
  for (const r of runs) {
    routed.set(r.g.config.name, r.routed);
    boot.set(r.g.config.name, { failedBoots: r.failedBoots, backoffUntilMs: r.backoffUntilMs });
  }
  return { decisions, notes, routed, boot };
}
