// The autoscaler's loop, in the controller process: every few seconds it reads the controller's
// demand and workers, asks each provider what it has (this also adopts, after a restart, the
// workers an earlier controller started), runs the policy (policy.ts) and applies its decisions —
// start workers (a credential minted for each, handed over in a 0600 file), drain and stop idle
// ones, cancel boots that timed out — then tells the scheduler what it is doing for each pending
// job and which worker shapes the groups could start. Every decision goes to a bounded log that
// `iris cluster status` and the dashboard show.
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { SchedStartable } from "../controller/scheduler.ts";
import type { AutoscalerSnapshot } from "../controller/controllerState.ts";
import { formatMillis } from "../controller/scheduler.ts";
import { backoffMs, decide, type Decision, type GroupBootState, type PolicyOutput, type PolicyWorker } from "./policy.ts";
import type { ProvidedWorker, ScaleGroupConfig, WorkerCredentialIssuer, WorkerProvider } from "./provider.ts";

/** What the autoscaler needs of the controller's state (ControllerState has it). */
export interface AutoscalerStateView {
  autoscalerSnapshot(): AutoscalerSnapshot;
  setAutoscalerView(view: { notes: ReadonlyMap<string, string>; startable: SchedStartable[] }): void;
  drainWorker(workerId: string): number;
  deregisterWorker(workerId: string): void;
}

export interface AutoscalerOptions {
  groups: ScaleGroupConfig[];
  /** Providers by kind (the groups' `provider:` values). */
  providers: ReadonlyMap<string, WorkerProvider>;
  state: AutoscalerStateView;
  credentials: WorkerCredentialIssuer;
  /** "host:port" the workers dial. */
  controllerAddress: string;
  /** The cluster's state directory (credential files go under `credentials/`). */
  stateDir: string;
  /** Time between rounds (default 2 s). */
  intervalMs?: number;
  now?: () => number;
  /** Where decisions are logged as they happen (default: nowhere). */
  log?: (line: string) => void;
}

/** One logged decision. */
export interface DecisionRecord {
  atMs: number;
  group: string | undefined;
  kind: Decision["kind"] | "error";
  reason: string;
}

/** A group in `iris cluster status`. */
export interface GroupStatus {
  name: string;
  provider: string;
  minWorkers: number;
  maxWorkers: number;
  /** The capacity and attributes of each worker it starts (what a task must fit to run there). */
  worker: { cpuMillis: number; memoryBytes: number; devices: Record<string, number>; attributes: Record<string, string> };
  /** Started, not yet running in the provider (Slurm PENDING). */
  pending: number;
  /** Running, not registered yet. */
  booting: number;
  /** Registered (idle ones included). */
  ready: number;
  /** Registered and holding no attempt. */
  idle: number;
  draining: number;
  /** The demand routed to it in the last round. */
  demand: { units: number; tasks: number };
  failedBoots: number;
  /** Nothing is started before this (0 = no backoff). */
  backoffUntilMs: number;
  workers: { workerId: string; providerId: string; state: PolicyWorker["state"]; busy: boolean; detail?: string | undefined }[];
  /** Its last decisions, newest last. */
  decisions: DecisionRecord[];
}

/** `iris cluster status --json`. */
export interface ClusterStatus {
  atMs: number;
  /** When the last round started (0 before the first). */
  lastRoundAtMs: number;
  groups: GroupStatus[];
  /** The last decisions of every group, newest last. */
  decisions: DecisionRecord[];
}

const LOG_LIMIT = 200;
/** A started worker the provider does not list yet is kept this long before it is forgotten. */
const LIST_GRACE_MS = 60_000;

interface Known {
  worker: ProvidedWorker;
  /** When this autoscaler started it (a list that does not show it yet keeps it for a while). */
  startedHere: boolean;
}

/** The loop; see the file comment. */
export class Autoscaler {
  readonly groups: ScaleGroupConfig[];
  private readonly opts: AutoscalerOptions;
  private readonly now: () => number;
  private readonly known = new Map<string, Known>();
  private readonly idleSince = new Map<string, number>();
  private readonly everRegistered = new Set<string>();
  private readonly boot = new Map<string, GroupBootState>();
  private readonly log: DecisionRecord[] = [];
  private readonly lastHold = new Map<string, { reason: string; atMs: number }>();
  private last: PolicyOutput | undefined;
  private lastRoundAtMs = 0;
  private lastWorkers = new Map<string, PolicyWorker[]>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(opts: AutoscalerOptions) {
    this.opts = opts;
    this.groups = opts.groups;
    this.now = opts.now ?? Date.now;
    for (const g of opts.groups) {
      if (!opts.providers.has(g.provider)) throw new Error(`scale group ${g.name}: no provider "${g.provider}"`);
      this.boot.set(g.name, { failedBoots: 0, backoffUntilMs: 0 });
    }
    // Before the first round: tasks that some group could hold must not end UNSCHEDULABLE.
    opts.state.setAutoscalerView({ notes: new Map(), startable: this.startable() });
  }

  /** The worker shapes the groups could start (for the scheduler's UNSCHEDULABLE rule). */
  startable(): SchedStartable[] {
    return this.groups.map((g) => ({
      name: g.name,
      capacity: { cpuMillis: g.worker.cpuMillis, memoryBytes: g.worker.memoryBytes, devices: { ...g.worker.devices } },
      attributes: { ...g.worker.attributes, "iris.group": g.name },
      count: g.maxWorkers,
    }));
  }

  /** Runs a round now, then every `intervalMs` until {@link stop}. */
  start(): void {
    const tick = (): void => {
      if (this.stopped) return;
      this.timer = undefined;
      this.tickStartedAtMs = Date.now();
      void this.runOnce()
        .catch((e: unknown) => this.record({ atMs: this.now(), group: undefined, kind: "error", reason: `autoscaler round failed: ${(e as Error).message}` }))
        .finally(() => {
          if (this.stopped) return;
          const interval = this.opts.intervalMs ?? 2000;
          this.nextAtMs = Date.now() + interval;
          this.timer = setTimeout(tick, interval);
        });
    };
    this.tick = tick;
    tick();
  }

  private tick: (() => void) | undefined;
  private tickStartedAtMs = 0;
  /** When the timer set after the last round fires. */
  private nextAtMs = 0;

  /**
   * Something changed (a job was submitted): run the next round now rather than at the end of the
   * interval — at most one round a second, so a busy controller does not run squeue in a loop.
   */
  nudge(): void {
    if (this.stopped || this.timer === undefined || this.tick === undefined) return;
    const at = Math.max(this.tickStartedAtMs + 1000, Date.now());
    // Only ever brings the round forward (never past the interval's own timer).
    if (at >= this.nextAtMs) return;
    clearTimeout(this.timer);
    this.nextAtMs = at;
    this.timer = setTimeout(this.tick, at - Date.now());
  }

  /** One round (rounds never overlap: a call during one waits for it, then runs its own). */
  async runOnce(): Promise<PolicyOutput> {
    while (this.running) await this.running;
    let done!: () => void;
    this.running = new Promise((r) => (done = r));
    try {
      return await this.round();
    } finally {
      this.running = undefined;
      done();
    }
  }

  private async round(): Promise<PolicyOutput> {
    const provided = await this.listAll();
    const now = this.now();
    this.lastRoundAtMs = now;
    const snap = this.opts.state.autoscalerSnapshot();
    const registered = new Map(snap.workers.map((w) => [w.id, w]));
    const byGroup = new Map<string, PolicyWorker[]>(this.groups.map((g) => [g.name, []]));
    for (const p of provided) {
      const list = byGroup.get(p.group);
      if (p.state === "ended") {
        await this.reapEnded(p);
        continue;
      }
      if (!list) continue;
      const r = registered.get(p.workerId);
      let state: PolicyWorker["state"];
      let busy = false;
      if (r && r.state === "ALIVE") {
        state = "ready";
        busy = r.busy;
        if (!this.everRegistered.has(p.workerId)) {
          this.everRegistered.add(p.workerId);
          // A registration ends a run of failed boots.
          this.boot.set(p.group, { failedBoots: 0, backoffUntilMs: 0 });
        }
      } else if (r) {
        state = "draining";
        busy = r.busy && r.state === "DRAINING";
      } else if (this.everRegistered.has(p.workerId)) {
        // It registered and left (its process ended): give it back.
        state = "draining";
      } else state = p.state === "pending" ? "pending" : "booting";
      if (state === "ready" && busy) this.idleSince.delete(p.workerId);
      else if (state === "ready" && !this.idleSince.has(p.workerId)) this.idleSince.set(p.workerId, now);
      list.push({ workerId: p.workerId, providerId: p.providerId, state, busy, startedAtMs: p.startedAtMs, idleSinceMs: this.idleSince.get(p.workerId), detail: p.detail });
    }
    const out = decide({
      nowMs: now,
      groups: this.groups.map((g) => ({ config: g, workers: byGroup.get(g.name)!, boot: this.boot.get(g.name)! })),
      demand: snap.demand,
    });
    for (const [name, b] of out.boot) this.boot.set(name, b);
    this.last = out;
    this.lastWorkers = byGroup;
    await this.apply(out.decisions, now);
    // Status shows what is left after this round's stops and cancels.
    for (const [name, ws] of byGroup)
      byGroup.set(
        name,
        ws.filter((w) => this.known.has(w.workerId)),
      );
    const notes = new Map<string, string>();
    snap.demand.forEach((d, i) => {
      const note = out.notes[i];
      if (note !== undefined) notes.set(d.jobId, note);
    });
    this.opts.state.setAutoscalerView({ notes, startable: this.startable() });
    return out;
  }

  private async listAll(): Promise<ProvidedWorker[]> {
    const now = this.now();
    const seen = new Set<string>();
    for (const provider of new Set(this.opts.providers.values())) {
      for (const w of await provider.list()) {
        seen.add(w.workerId);
        this.known.set(w.workerId, { worker: w, startedHere: this.known.get(w.workerId)?.startedHere ?? false });
      }
    }
    const vanished: ProvidedWorker[] = [];
    for (const [id, k] of this.known) {
      if (seen.has(id)) continue;
      if (k.startedHere && now - k.worker.startedAtMs < LIST_GRACE_MS && k.worker.state !== "ended") continue;
      // Gone from the engine's list altogether: it ended (reaped below like one listed "ended").
      vanished.push({ ...k.worker, state: "ended" });
    }
    return [...[...this.known.values()].map((k) => k.worker).filter((w) => !vanished.some((v) => v.workerId === w.workerId)), ...vanished];
  }

  /**
   * A provided worker whose engine says it ended (a Slurm job cancelled, past its time limit,
   * preempted, its node failed): attempts still live on it end PREEMPTED (the preemption budget,
   * never the failure budget) rather than waiting for the worker timeout, the worker leaves the
   * cluster, and its credential is revoked.
   */
  private async reapEnded(p: ProvidedWorker): Promise<void> {
    try {
      this.opts.state.drainWorker(p.workerId);
    } catch {
      // Not registered (any more): nothing to hand back.
    }
    try {
      this.opts.state.deregisterWorker(p.workerId);
    } catch {
      // Already gone.
    }
    this.known.delete(p.workerId);
    this.idleSince.delete(p.workerId);
    this.everRegistered.delete(p.workerId);
    await this.forget(p.workerId);
  }

  private group(name: string): ScaleGroupConfig {
    return this.groups.find((g) => g.name === name)!;
  }

  private providerOf(group: string): WorkerProvider {
    return this.opts.providers.get(this.group(group).provider)!;
  }

  private async apply(decisions: Decision[], now: number): Promise<void> {
    for (const d of decisions) {
      if (d.kind === "hold") {
        const key = d.group ?? "";
        const prev = this.lastHold.get(key);
        // The same hold is logged once a minute, not every round.
        const stem = d.reason.replace(/[\d.]+/g, "#");
        if (prev && prev.reason === stem && now - prev.atMs < 60_000) continue;
        this.lastHold.set(key, { reason: stem, atMs: now });
        this.record({ atMs: now, group: d.group, kind: "hold", reason: d.reason });
        continue;
      }
      this.record({ atMs: now, group: d.group, kind: d.kind, reason: d.reason });
      try {
        if (d.kind === "start") {
          for (let i = 0; i < d.count; i++) await this.startOne(d.group);
        } else if (d.kind === "stop") {
          try {
            this.opts.state.drainWorker(d.workerId);
          } catch {
            // Not registered (any more): nothing to drain.
          }
          await this.stopOne(d.group, d.workerId, d.providerId);
          try {
            this.opts.state.deregisterWorker(d.workerId);
          } catch {
            // Already gone.
          }
        } else {
          await this.stopOne(d.group, d.workerId, d.providerId);
        }
      } catch (e) {
        this.record({ atMs: this.now(), group: d.group, kind: "error", reason: `${d.reason}: failed: ${(e as Error).message.trim()}` });
      }
    }
  }

  private credentialFile(workerId: string): string {
    return path.join(this.opts.stateDir, "credentials", workerId);
  }

  private async startOne(groupName: string): Promise<void> {
    const group = this.group(groupName);
    const workerId = `${group.name}-${randomBytes(4).toString("hex")}`;
    const file = this.credentialFile(workerId);
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    chmodSync(path.dirname(file), 0o700);
    const credential = await this.opts.credentials.mint(workerId);
    writeFileSync(file, credential, { mode: 0o600 });
    chmodSync(file, 0o600);
    try {
      const w = await this.providerOf(groupName).start({ group, workerId, controllerAddress: this.opts.controllerAddress, credentialFile: file, stateDir: this.opts.stateDir });
      this.known.set(workerId, { worker: w, startedHere: true });
    } catch (e) {
      await this.forget(workerId);
      // A start the engine refuses is a failed boot too: retrying at once would only repeat it.
      const b = this.boot.get(groupName)!;
      const failedBoots = b.failedBoots + 1;
      this.boot.set(groupName, { failedBoots, backoffUntilMs: this.now() + backoffMs(failedBoots) });
      throw new Error(`${(e as Error).message.trim()} (boot failed ${failedBoots}×, backing off ${formatMillis(backoffMs(failedBoots))})`, { cause: e });
    }
  }

  private async stopOne(group: string, workerId: string, providerId: string): Promise<void> {
    await this.providerOf(group).stop(providerId);
    this.known.delete(workerId);
    this.idleSince.delete(workerId);
    this.everRegistered.delete(workerId);
    await this.forget(workerId);
  }

  private async forget(workerId: string): Promise<void> {
    await this.opts.credentials.revoke(workerId);
    rmSync(this.credentialFile(workerId), { force: true });
  }

  private record(r: DecisionRecord): void {
    this.log.push(r);
    if (this.log.length > LOG_LIMIT) this.log.splice(0, this.log.length - LOG_LIMIT);
    this.opts.log?.(`iris autoscaler: ${r.kind === "error" ? "error: " : ""}${r.reason}`);
  }

  /** Per group: its workers by state, the demand routed to it, its backoff and last decisions. */
  status(): ClusterStatus {
    const groups = this.groups.map((g): GroupStatus => {
      const ws = this.lastWorkers.get(g.name) ?? [];
      const boot = this.boot.get(g.name)!;
      return {
        name: g.name,
        provider: g.provider,
        minWorkers: g.minWorkers,
        maxWorkers: g.maxWorkers,
        worker: { cpuMillis: g.worker.cpuMillis, memoryBytes: g.worker.memoryBytes, devices: { ...g.worker.devices }, attributes: { ...g.worker.attributes } },
        pending: ws.filter((w) => w.state === "pending").length,
        booting: ws.filter((w) => w.state === "booting").length,
        ready: ws.filter((w) => w.state === "ready").length,
        idle: ws.filter((w) => w.state === "ready" && !w.busy).length,
        draining: ws.filter((w) => w.state === "draining").length,
        demand: this.last?.routed.get(g.name) ?? { units: 0, tasks: 0 },
        failedBoots: boot.failedBoots,
        backoffUntilMs: boot.backoffUntilMs,
        workers: ws.map((w) => ({ workerId: w.workerId, providerId: w.providerId, state: w.state, busy: w.busy, ...(w.detail !== undefined ? { detail: w.detail } : {}) })),
        decisions: this.log.filter((r) => r.group === g.name).slice(-10),
      };
    });
    return { atMs: this.now(), lastRoundAtMs: this.lastRoundAtMs, groups, decisions: this.log.slice(-50) };
  }

  /**
   * Drains and stops every worker the providers list for this cluster's groups (`iris cluster
   * down`, and shutdown without --keep-workers). Returns how many were stopped.
   */
  async drainAndStopAll(): Promise<number> {
    while (this.running) await this.running;
    let done!: () => void;
    this.running = new Promise((r) => (done = r));
    try {
      const provided = await this.listAll();
      let n = 0;
      for (const w of provided) {
        if (w.state === "ended" || !this.groups.some((g) => g.name === w.group)) continue;
        try {
          this.opts.state.drainWorker(w.workerId);
        } catch {
          // Not registered.
        }
        await this.stopOne(w.group, w.workerId, w.providerId);
        try {
          this.opts.state.deregisterWorker(w.workerId);
        } catch {
          // Already gone.
        }
        n++;
      }
      this.record({ atMs: this.now(), group: undefined, kind: "stop", reason: `down: drained and stopped ${n} ${n === 1 ? "worker" : "workers"}` });
      return n;
    } finally {
      this.running = undefined;
      done();
    }
  }

  /** Ends the loop; with `keepWorkers` false, drains and stops every worker first. Closes the providers. */
  async stop(opts: { keepWorkers?: boolean } = {}): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (!opts.keepWorkers) await this.drainAndStopAll();
    else while (this.running) await this.running;
    for (const p of new Set(this.opts.providers.values())) await p.close?.();
  }
}
