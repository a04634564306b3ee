// The per-entry policy as it was before demand was grouped into shape classes: kept only as the
// oracle of policy.equivalence.test.ts (the fast decide() in policy.ts must give exactly the same
// decisions, notes, routed demand and boot records). Not used by the autoscaler.
import type { SchedConstraint, SchedResources } from "../controller/scheduler.ts";
import { constraintMatches, describeConstraint, formatBytes, formatMillis } from "../controller/scheduler.ts";
import { backoffMs, type Decision, type DemandEntry, type GroupBootState, type GroupDemand, type PolicyGroup, type PolicyInput, type PolicyOutput } from "./policy.ts";
import type { ScaleGroupConfig } from "./provider.ts";

/** `cpu 64`, `cpu 4, memory 8.0 GiB, 2 gpu`: a request or a shape for people. */
function describeShape(r: SchedResources): string {
  const parts = [`cpu ${Math.round(r.cpuMillis) / 1000}`];
  if (r.memoryBytes > 0) parts.push(`memory ${formatBytes(r.memoryBytes)}`);
  for (const k of Object.keys(r.devices).sort()) if (r.devices[k] > 0) parts.push(`${r.devices[k]} ${k}`);
  return parts.join(", ");
}

/** The group whose worker shape is largest (cpu, then memory; first in config order on ties). */
function largestGroup(groups: readonly ScaleGroupConfig[]): ScaleGroupConfig | undefined {
  let best: ScaleGroupConfig | undefined;
  for (const g of groups) {
    if (!best || g.worker.cpuMillis > best.worker.cpuMillis || (g.worker.cpuMillis === best.worker.cpuMillis && g.worker.memoryBytes > best.worker.memoryBytes)) best = g;
  }
  return best;
}

/** Whether a worker of `shape` (whole) could ever hold one task asking `req` under `constraints`. */
function shapeHolds(g: ScaleGroupConfig, req: SchedResources, constraints: readonly SchedConstraint[]): boolean {
  const w = g.worker;
  if (w.cpuMillis < req.cpuMillis || w.memoryBytes < req.memoryBytes) return false;
  for (const k in req.devices) if (req.devices[k] > 0 && (w.devices[k] ?? 0) < req.devices[k]) return false;
  const attrs = { ...w.attributes, "iris.group": g.name };
  return constraints.every((c) => constraintMatches(c, attrs));
}

const NO_KINDS: string[] = [];

/** The device kinds a request asks for (> 0); computed once per demand entry. */
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
  /** First-fit cursor per request class (free capacity only shrinks within a round). */
  cursors: Map<string, number>;
}

/**
 * The request class of an entry (request and constraints) as a string key, built once per class:
 * entries are looked up by a numeric hash of cpu and memory first (number-to-string conversions
 * would otherwise dominate a round over many entries).
 */
class RequestKeys {
  private readonly buckets = new Map<number, { devKey: string; consKey: string; key: string }[]>();

  of(r: SchedResources, kinds: readonly string[], constraints: readonly SchedConstraint[]): string {
    const devKey =
      kinds.length === 0
        ? ""
        : [...kinds]
            .sort()
            .map((k) => `${k}=${r.devices[k]}`)
            .join(",");
    const consKey = constraints.length === 0 ? "" : constraints.map(describeConstraint).sort().join(";");
    const h = r.cpuMillis * 2 ** 40 + r.memoryBytes;
    let bucket = this.buckets.get(h);
    if (bucket === undefined) this.buckets.set(h, (bucket = []));
    for (const b of bucket) if (b.devKey === devKey && b.consKey === consKey) return b.key;
    const key = `${r.cpuMillis}|${r.memoryBytes}|${devKey}#${consKey}`;
    bucket.push({ devKey, consKey, key });
    return key;
  }
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * Entry indices by priority (higher first), then age, then input order. Demand read from the
 * controller comes oldest first: then this is a bucketing by priority, O(n), not a sort.
 */
function schedulingOrder(demand: readonly DemandEntry[]): number[] {
  let byAge = true;
  for (let i = 1; i < demand.length && byAge; i++) if (demand[i].submittedAtMs < demand[i - 1].submittedAtMs) byAge = false;
  if (!byAge) {
    return Array.from(demand.keys()).sort((a, b) => {
      const x = demand[a];
      const y = demand[b];
      return y.priority - x.priority || x.submittedAtMs - y.submittedAtMs || a - b;
    });
  }
  const buckets = new Map<number, number[]>();
  let lastP = Number.NaN;
  let last: number[] = [];
  for (let i = 0; i < demand.length; i++) {
    const p = demand[i].priority;
    if (p !== lastP) {
      let b = buckets.get(p);
      if (b === undefined) buckets.set(p, (b = []));
      last = b;
      lastP = p;
    }
    last.push(i);
  }
  if (buckets.size === 1) return buckets.values().next().value!;
  return [...buckets.keys()].sort((a, b) => b - a).flatMap((p) => buckets.get(p)!);
}

/**
 * One round of the policy. Pure: the same input always gives the same output.
 *
 * @example
 * const out = decide({ nowMs, groups: [{ config, workers: [], boot: { failedBoots: 0, backoffUntilMs: 0 } }], demand });
 * // out.decisions[0]: { kind: "start", group: "cpu", count: 2, reason: "+2 cpu for /alice/train (gang of 2)" }
 */
export function decideReference(input: PolicyInput): PolicyOutput {
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
      cursors: new Map(),
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
        });
      }
    }
    runs.push(run);
  }

  // Routing order of the groups: priority desc, then config order.
  const ordered = [...runs].sort((a, b) => b.g.config.priority - a.g.config.priority || a.index - b.index);
  const capableCache = new Map<string, GroupRun[]>();
  const keys = new RequestKeys();
  const holds = new Map<string, { group: string | undefined; reason: string; jobs: number }>();
  const hold = (group: string | undefined, reason: string): void => {
    const h = holds.get(reason);
    if (h) h.jobs++;
    else holds.set(reason, { group, reason, jobs: 1 });
  };
  const largest = largestGroup(input.groups.map((g) => g.config));

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
  // Free capacity only shrinks and groups only fill up during a round: a request class that found
  // no room anywhere finds none for any later entry (singles), or for any gang at least as large.
  const singleFailed = new Map<string, string>();
  const gangFailed = new Map<string, { n: number; reason: string }>();

  const plan = (r: GroupRun, jobName: string, count: number, gang: number): void => {
    const c = r.g.config;
    for (let i = 0; i < count; i++)
      r.slots.push({ cpu: c.worker.cpuMillis, mem: c.worker.memoryBytes, dev: { ...c.worker.devices }, coming: true, workerId: undefined, detail: undefined });
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

  const waitingNote = (r: GroupRun, coming: Slot[], ready: number): string => {
    const name = r.g.config.name;
    if (coming.length === 0) return `placing on ${plural(ready, `idle ${name} worker`)}`;
    const detail = coming.find((s) => s.detail !== undefined)?.detail;
    return `waiting for ${plural(coming.length, `${name} worker`)} to boot${detail !== undefined ? ` (${detail})` : ""}`;
  };

  // 2. Demand, in scheduling order.
  const order = schedulingOrder(input.demand);
  for (const di of order) {
    const d = input.demand[di];
    if (d.tasks <= 0) continue;
    const kinds = kindsOf(d.request.devices);
    const key = keys.of(d.request, kinds, d.constraints);
    let capable = capableCache.get(key);
    if (capable === undefined) {
      capable = ordered.filter((r) => shapeHolds(r.g.config, d.request, d.constraints));
      capableCache.set(key, capable);
    }
    if (capable.length === 0) {
      const reason =
        `no group can hold ${describeShape(d.request)}${d.constraints.length > 0 ? ` with ${d.constraints.map(describeConstraint).join(", ")}` : ""}` +
        (largest
          ? ` (largest worker: ${largest.name}, ${describeShape({ cpuMillis: largest.worker.cpuMillis, memoryBytes: largest.worker.memoryBytes, devices: largest.worker.devices })})`
          : "");
      notes[di] = reason;
      hold(undefined, reason);
      continue;
    }
    const known = d.gang ? gangFailed.get(key) : undefined;
    const knownReason = d.gang ? (known !== undefined && d.tasks >= known.n ? known.reason : undefined) : singleFailed.get(key);
    if (knownReason !== undefined) {
      notes[di] = knownReason;
      hold(capable[0].g.config.name, knownReason);
      continue;
    }
    let firstBlock: string | undefined;
    let remaining = d.tasks;
    const noteParts: string[] = [];
    for (const r of capable) {
      if (remaining === 0) break;
      if (d.gang) {
        // n distinct workers, one member each: free slots first, then new workers, or nothing.
        const n = d.tasks;
        const chosen: Slot[] = [];
        // Slots before the class's cursor cannot hold one more task of it.
        for (let i = r.cursors.get(key) ?? 0; i < r.slots.length && chosen.length < n; i++) {
          const s = r.slots[i];
          if (fitCount(s.cpu, s.mem, s.dev, d.request, kinds, 1) === 1) chosen.push(s);
        }
        const need = n - chosen.length;
        const why = need > 0 ? blocked(r, need) : undefined;
        if (why !== undefined) {
          firstBlock ??= why;
          continue;
        }
        for (const s of chosen) {
          take(s, d.request, kinds, 1);
          if (s.workerId !== undefined) r.usedReady.add(s.workerId);
        }
        const before = r.slots.length;
        if (need > 0) plan(r, d.jobName, need, n);
        for (let i = before; i < r.slots.length; i++) take(r.slots[i], d.request, kinds, 1);
        const coming = [...chosen.filter((s) => s.coming), ...r.slots.slice(before)];
        noteParts.push(waitingNote(r, coming, chosen.length - chosen.filter((s) => s.coming).length));
        r.routed.units++;
        r.routed.tasks += n;
        remaining = 0;
        break;
      }
      // Single tasks: first fit over the group's free slots, then new workers.
      const cursorKey = key;
      let cur = r.cursors.get(cursorKey) ?? 0;
      const used: Slot[] = [];
      let took = 0;
      while (remaining > 0 && cur < r.slots.length) {
        const s = r.slots[cur];
        const k = fitCount(s.cpu, s.mem, s.dev, d.request, kinds, remaining);
        if (k > 0) {
          take(s, d.request, kinds, k);
          remaining -= k;
          took += k;
          used.push(s);
          if (s.workerId !== undefined) r.usedReady.add(s.workerId);
          if (remaining > 0) cur++;
        } else cur++;
      }
      r.cursors.set(cursorKey, cur);
      if (remaining > 0) {
        const c = r.g.config;
        const perWorker = fitCount(c.worker.cpuMillis, c.worker.memoryBytes, c.worker.devices, d.request, kinds, Number.MAX_SAFE_INTEGER);
        const need = Math.ceil(remaining / Math.max(1, perWorker));
        const room = r.backoffUntilMs > now ? 0 : Math.max(0, c.maxWorkers - r.total);
        const n = Math.min(need, room);
        if (n < need) firstBlock ??= blocked(r, need);
        if (n > 0) {
          const before = r.slots.length;
          plan(r, d.jobName, n, 0);
          for (let i = before; i < r.slots.length && remaining > 0; i++) {
            const k = Math.min(remaining, perWorker);
            take(r.slots[i], d.request, kinds, k);
            remaining -= k;
            took += k;
            used.push(r.slots[i]);
          }
        }
      }
      if (took > 0) {
        const coming = used.filter((s) => s.coming);
        noteParts.push(waitingNote(r, coming, used.length - coming.length));
        r.routed.units++;
        r.routed.tasks += took;
      }
    }
    if (remaining > 0 && firstBlock !== undefined) {
      noteParts.push(remaining === d.tasks ? firstBlock : `${remaining} more: ${firstBlock}`);
      hold(capable[0].g.config.name, firstBlock);
      if (!d.gang) singleFailed.set(key, firstBlock);
      else if (remaining === d.tasks) {
        const prev = gangFailed.get(key);
        if (prev === undefined || d.tasks < prev.n) gangFailed.set(key, { n: d.tasks, reason: firstBlock });
      }
    }
    if (noteParts.length > 0) notes[di] = noteParts.join("; ");
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
