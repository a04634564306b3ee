// runGraph: runs a graph's steps under leases, in dependency order, and publishes their outputs atomically.
import { randomBytes } from "node:crypto";
import { createWriteStream, mkdirSync, promises as fs } from "node:fs";
import type { WriteStream } from "node:fs";
import path from "node:path";
import { MarinError } from "../errors.ts";
import type { ResolvedStep, StepGraph } from "../step/graph.ts";
import type { StepContext } from "../step/step.ts";
import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import { defaultOwner, tryAcquireLease } from "./lease.ts";
import type { Lease } from "./lease.ts";
import { planRun } from "./plan.ts";
import { ensurePrefix } from "./prefixCheck.ts";
import { runDirOf, runnerIdentity, writeRunRecord } from "./runRecords.ts";
import type { RunPlan, PlanEntry, PlanOptions } from "./plan.ts";
import { infoOf, writeInfo, writeLastRun } from "./records.ts";
import { journalFile, prepareStaging, publish, recoverPublish } from "./publish.ts";
import { metaDir, readStatus, writeStatus } from "./stepFiles.ts";
import type { StepStatus } from "./stepFiles.ts";

/** How a step ended in a run. */
export type StepOutcome = "ran" | "skipped" | "reused" | "failed" | "dep_failed" | "not_selected" | "cancelled";

/** One step's line in a run summary. */
export interface StepReport {
  name: string;
  id: string;
  outputPath: string;
  outcome: StepOutcome;
  /** Wall time this runner spent on the step (running or waiting). */
  durationMs: number;
  error?: string;
  /** What the step's `fn` returned (also for a skipped step: read from its status). */
  result?: unknown;
}

/** What a run did. */
export interface RunSummary {
  runId: string;
  prefix: string;
  ok: boolean;
  steps: StepReport[];
  /** Time from the start of planning to the end, in ms. */
  wallMs: number;
  /** When the run started (ms since the epoch). */
  startedAt: number;
  /** The folder of the steps' log files (`<prefix>/.marin/runs/<run-id>/logs`), when a step ran. */
  logDir?: string;
}

/** A state change the runner reports while it works (the live view draws these). */
export type RunEvent =
  | { type: "plan"; plan: RunPlan }
  | { type: "step"; name: string; state: "waiting" | "running" | "publishing"; detail?: string }
  | { type: "step-done"; report: StepReport }
  | { type: "log"; name: string; line: string }
  /** A running step's progress text (training: step/total, loss, tokens/s, ETA). */
  | { type: "progress"; name: string; text: string };

/** What a launcher gets to run one step's body somewhere. */
export interface LaunchArgs {
  /** Where the body writes (the staging folder). */
  stagingPath: string;
  signal: AbortSignal;
  log(line: string): void;
  /** Reports the step's progress text (from the job's status reports). */
  progress(text: string): void;
  /** The lease's fencing token (an iris launcher names the job after it: each holder submits its own). */
  token: number;
  runId: string;
}

/** Runs the body of steps that have `resources` somewhere else (an iris cluster). */
export interface StepLauncher {
  run(step: ResolvedStep, args: LaunchArgs): Promise<unknown>;
  close(): Promise<void>;
}

/** How to run. */
export interface RunGraphOptions extends PlanOptions {
  /** Steps running at once (default 4). */
  maxConcurrent?: number;
  /** Lease lifetime without renewal (default 30 s, or MARIN_LEASE_TTL_MS). */
  leaseTtlMs?: number;
  /** How often to look again at a step another runner holds (default 500 ms). */
  pollMs?: number;
  /** Lease owner name (default `host:pid`). */
  owner?: string;
  /** Cancels the run: running steps are aborted and recorded CANCELLED, as are the steps that depend on them. */
  signal?: AbortSignal;
  onEvent?: (e: RunEvent) => void;
  /** Makes the launcher for steps with `resources`; called at most once, only when such a step runs. */
  remoteLauncher?: (runId: string) => Promise<StepLauncher>;
  /** The run's id (default: a new one, {@link newRunId}); the CLI picks it first to name its dashboard run. */
  runId?: string;
}

/** A new run id: the start time (sortable), then 6 random hex digits. */
export function newRunId(startedAt: number): string {
  const stamp = new Date(startedAt).toISOString().replace(/[:.]/g, "-");
  return `${stamp}-${randomBytes(3).toString("hex")}`;
}

function errorText(e: unknown): string {
  if (e instanceof Error) return e.stack && !(e instanceof MarinError) ? e.stack : e.message;
  return String(e);
}

function toJsonResult(v: unknown): unknown {
  if (v === undefined) return undefined;
  try {
    return JSON.parse(JSON.stringify(v));
  } catch {
    return undefined;
  }
}

/**
 * A step's log file. Lines that arrive after `close()` (from a body abandoned after a lost lease or a
 * cancel, or remote log lines that trail the job's end) are dropped: the step's record is final.
 */
class StepLog {
  private stream: WriteStream | undefined;
  private closed = false;
  private readonly file: string;
  private readonly onLine: (line: string) => void;

  constructor(file: string, onLine: (line: string) => void) {
    this.file = file;
    this.onLine = onLine;
  }

  write(line: string): void {
    if (this.closed) return;
    if (!this.stream) {
      // Created on first use only, so a run that runs nothing creates no log folder.
      mkdirSync(path.dirname(this.file), { recursive: true });
      this.stream = createWriteStream(this.file, { flags: "a" });
      // A log that cannot be written must not bring the runner down; the step's status still decides.
      this.stream.on("error", () => undefined);
    }
    this.stream.write(`${new Date().toISOString()} ${line}\n`);
    this.onLine(line);
  }

  async close(): Promise<void> {
    this.closed = true;
    const s = this.stream;
    if (s) await new Promise<void>((r) => s.end(r));
  }
}

/** The run-wide state shared by step executions. */
class Run {
  readonly runId: string;
  readonly graph: StepGraph;
  readonly opts: RunGraphOptions;
  readonly clock: Clock;
  readonly owner: string;
  readonly ttlMs: number;
  readonly startedAt: number;
  private launcher: Promise<StepLauncher> | undefined;

  constructor(graph: StepGraph, opts: RunGraphOptions) {
    this.graph = graph;
    this.opts = opts;
    this.clock = opts.clock ?? systemClock;
    this.owner = opts.owner ?? defaultOwner();
    const envTtl = Number(process.env.MARIN_LEASE_TTL_MS);
    this.ttlMs = opts.leaseTtlMs ?? (Number.isFinite(envTtl) && envTtl > 0 ? envTtl : 30_000);
    this.startedAt = this.clock.now();
    this.runId = opts.runId ?? newRunId(this.startedAt);
  }

  emit(e: RunEvent): void {
    this.opts.onEvent?.(e);
  }

  runDir(): string {
    return runDirOf(this.graph.prefix, this.runId);
  }

  getLauncher(): Promise<StepLauncher> {
    if (!this.launcher) {
      const make = this.opts.remoteLauncher;
      if (!make) {
        return Promise.reject(new MarinError("INVALID_CONFIG", "this step has resources but no launcher for remote steps was configured"));
      }
      this.launcher = make(this.runId);
    }
    return this.launcher;
  }

  async close(): Promise<void> {
    if (!this.launcher) return;
    const launcher = await this.launcher.catch(() => undefined);
    await launcher?.close();
  }

  /** Runs one step under its lease; resolves with its report (never throws for a step failure). */
  async execute(entry: PlanEntry): Promise<StepReport> {
    const rs = entry.step;
    const t0 = this.clock.now();
    const base = { name: rs.name, id: rs.id, outputPath: rs.outputPath };
    const dir = metaDir(rs.outputPath);
    const signal = this.opts.signal;
    let announcedWait = false;
    for (;;) {
      if (signal?.aborted) return { ...base, outcome: "cancelled", durationMs: this.clock.now() - t0 };
      const status = await readStatus(rs.outputPath);
      const doneBySomeone = status?.state === "SUCCESS" && (!entry.forced || (status.finishedAt ?? 0) >= this.startedAt);
      if (doneBySomeone) {
        return { ...base, outcome: announcedWait ? "reused" : "skipped", durationMs: this.clock.now() - t0, result: status.result };
      }
      const failed = this.failedElsewhere(status);
      if (failed) return { ...base, outcome: "failed", durationMs: this.clock.now() - t0, error: failed };
      const got = await tryAcquireLease(dir, this.owner, { clock: this.clock, ttlMs: this.ttlMs });
      if (!got.acquired) {
        if (!announcedWait) {
          this.emit({ type: "step", name: rs.name, state: "waiting", detail: `held by ${got.holder.owner}` });
          announcedWait = true;
        }
        try {
          await this.clock.sleep(this.opts.pollMs ?? 500, signal);
        } catch {
          return { ...base, outcome: "cancelled", durationMs: this.clock.now() - t0 };
        }
        continue;
      }
      const lease = got.lease;
      // Double-check under the lease: another runner may have finished it since we looked.
      const again = await readStatus(rs.outputPath);
      if (again?.state === "SUCCESS" && (!entry.forced || (again.finishedAt ?? 0) >= this.startedAt)) {
        await lease.release();
        return { ...base, outcome: announcedWait ? "reused" : "skipped", durationMs: this.clock.now() - t0, result: again.result };
      }
      const failedAgain = this.failedElsewhere(again);
      if (failedAgain) {
        await lease.release();
        return { ...base, outcome: "failed", durationMs: this.clock.now() - t0, error: failedAgain };
      }
      return this.runHeld(entry, lease, t0);
    }
  }

  /**
   * A step that failed under another runner since this run started is final for this run: running
   * it again at once would only repeat the failure (a later run retries it). Returns the error text.
   */
  private failedElsewhere(status: StepStatus | undefined): string | undefined {
    if (status?.state !== "FAILED" || status.runId === this.runId || (status.finishedAt ?? 0) < this.startedAt) return undefined;
    return `failed under another runner${status.owner ? ` (${status.owner})` : ""} during this run: ${status.error ?? "no error recorded"}`;
  }

  private async runHeld(entry: PlanEntry, lease: Lease, t0: number): Promise<StepReport> {
    const rs = entry.step;
    const base = { name: rs.name, id: rs.id, outputPath: rs.outputPath };
    const startedAt = this.clock.now();
    const log = new StepLog(path.join(this.runDir(), "logs", `${rs.name}.log`), (line) => this.emit({ type: "log", name: rs.name, line }));
    lease.start();
    const abort = new AbortController();
    const onLost = () => abort.abort(lease.signal.reason);
    const onCancel = () => abort.abort(new MarinError("STEP_FAILED", "run cancelled"));
    lease.signal.addEventListener("abort", onLost, { once: true });
    this.opts.signal?.addEventListener("abort", onCancel, { once: true });
    const common = { owner: lease.owner, token: lease.token, runId: this.runId };
    try {
      let json: unknown;
      const recovered = await recoverPublish(rs.outputPath, (l) => log.write(l));
      if (recovered) {
        this.emit({ type: "step", name: rs.name, state: "publishing", detail: "completing an interrupted publish" });
        json = recovered.result;
      } else {
        const info = infoOf(rs, startedAt, this.runId);
        await writeInfo(info);
        await writeLastRun(this.graph.prefix, info);
        await writeStatus(rs.outputPath, { state: "RUNNING", updatedAt: startedAt, startedAt, ...common });
        this.emit({ type: "step", name: rs.name, state: "running" });
        const staging = await prepareStaging(rs.outputPath, lease, rs.step.resumable, this.clock.now());
        let result: unknown;
        const aborted = new Promise<never>((_, reject) => {
          if (abort.signal.aborted) reject(abort.signal.reason);
          abort.signal.addEventListener("abort", () => reject(abort.signal.reason), { once: true });
        });
        aborted.catch(() => undefined);
        if (rs.step.resources) {
          const launcher = await this.getLauncher();
          result = await Promise.race([
            launcher.run(rs, {
              stagingPath: staging,
              signal: abort.signal,
              log: (l) => log.write(l),
              progress: (text) => this.emit({ type: "progress", name: rs.name, text }),
              token: lease.token,
              runId: this.runId,
            }),
            aborted,
          ]);
        } else {
          const ctx: StepContext<unknown> = {
            name: rs.name,
            id: rs.id,
            config: rs.config,
            outputPath: staging,
            finalPath: rs.outputPath,
            prefix: this.graph.prefix,
            signal: abort.signal,
            log: (l) => log.write(l),
            reportStatus: (text) => this.emit({ type: "progress", name: rs.name, text }),
          };
          result = await Promise.race([Promise.resolve().then(() => rs.step.fn(ctx)), aborted]);
        }
        this.emit({ type: "step", name: rs.name, state: "publishing" });
        json = toJsonResult(result);
        await publish(rs.outputPath, staging, lease, json);
      }
      const finishedAt = this.clock.now();
      await lease.assertHeld();
      await writeStatus(rs.outputPath, {
        state: "SUCCESS",
        updatedAt: finishedAt,
        startedAt,
        finishedAt,
        ...common,
        codeHash: rs.codeHash,
        ...(json === undefined ? {} : { result: json }),
      });
      await fs.rm(journalFile(rs.outputPath), { force: true });
      await lease.release();
      return { ...base, outcome: "ran", durationMs: finishedAt - t0, ...(json === undefined ? {} : { result: json }) };
    } catch (e) {
      const error = errorText(e);
      log.write(`step failed: ${error}`);
      const finishedAt = this.clock.now();
      const lost = lease.signal.aborted;
      const cancelled = this.opts.signal?.aborted === true;
      if (!lost) {
        // Only the holder writes the status; a runner that lost the lease leaves it to the new holder.
        const state = cancelled ? "CANCELLED" : "FAILED";
        await writeStatus(rs.outputPath, { state, updatedAt: finishedAt, startedAt, finishedAt, error, ...common }).catch(() => undefined);
        await lease.release().catch(() => undefined);
      } else {
        await lease.stop();
      }
      return { ...base, outcome: cancelled ? "cancelled" : "failed", durationMs: finishedAt - t0, error };
    } finally {
      lease.signal.removeEventListener("abort", onLost);
      this.opts.signal?.removeEventListener("abort", onCancel);
      await log.close();
    }
  }

  /** Records DEP_FAILED (or CANCELLED) for a step whose dependency failed (was cancelled), unless someone else holds or finished it. */
  async markDepFailed(rs: ResolvedStep, failedDep: string, cancelled: boolean): Promise<void> {
    const got = await tryAcquireLease(metaDir(rs.outputPath), this.owner, { clock: this.clock, ttlMs: this.ttlMs });
    if (!got.acquired) return;
    try {
      const status = await readStatus(rs.outputPath);
      if (status?.state !== "SUCCESS") {
        const now = this.clock.now();
        const error = `dependency ${failedDep} ${cancelled ? "was cancelled" : "failed"}`;
        await writeStatus(rs.outputPath, { state: cancelled ? "CANCELLED" : "DEP_FAILED", updatedAt: now, finishedAt: now, error, runId: this.runId });
      }
    } finally {
      await got.lease.release();
    }
  }
}

/**
 * Runs a planned graph: steps in topological order, independent ones in parallel, finished ones
 * skipped; a failed step marks its dependants DEP_FAILED while the others continue.
 */
export async function runGraph(graph: StepGraph, opts: RunGraphOptions = {}): Promise<RunSummary> {
  const clock = opts.clock ?? systemClock;
  const t0 = clock.now();
  await ensurePrefix(graph.prefix);
  const plan = await planRun(graph, opts);
  const run = new Run(graph, opts);
  run.emit({ type: "plan", plan });
  if (plan.entries.some((e) => e.action !== "skip")) {
    // A record from the start, so that `marin runs` and `marin logs -f` see a run in progress (or one killed outright).
    await writeRunRecord({
      runId: run.runId,
      prefix: graph.prefix,
      state: "running",
      startedAt: run.startedAt,
      ...runnerIdentity(),
      steps: plan.entries.map((e) => ({ name: e.step.name, id: e.step.id, outputPath: e.step.outputPath })),
    });
  }
  const maxConcurrent = Math.max(1, opts.maxConcurrent ?? 4);
  const reports = new Map<string, StepReport>();
  const dependants = new Map<string, PlanEntry[]>();
  for (const e of plan.entries) for (const d of e.step.deps) dependants.set(d.id, [...(dependants.get(d.id) ?? []), e]);

  const finish = (r: StepReport) => {
    reports.set(r.id, r);
    run.emit({ type: "step-done", report: r });
  };
  // Steps the plan skips are final now (a skipped step's result comes from its status).
  const pending: PlanEntry[] = [];
  for (const e of plan.entries) {
    if (e.action === "skip") {
      finish({
        name: e.step.name,
        id: e.step.id,
        outputPath: e.step.outputPath,
        outcome: e.selected ? "skipped" : "not_selected",
        durationMs: 0,
        ...(e.selected && e.status?.result !== undefined ? { result: e.status.result } : {}),
      });
    } else {
      pending.push(e);
    }
  }
  /**
   * Takes every (transitive) dependant of a failed step out of `pending` and reports it DEP_FAILED,
   * synchronously: the scheduling loop must never see them still pending once the failed step has
   * left `running`. Returns them so their status files can be written afterwards.
   */
  const takeDependants = (id: string, name: string, cancelled: boolean): PlanEntry[] => {
    const taken: PlanEntry[] = [];
    const queue = [...(dependants.get(id) ?? [])];
    while (queue.length) {
      const d = queue.shift()!;
      if (reports.has(d.step.id) || d.action === "skip") continue;
      const idx = pending.indexOf(d);
      if (idx >= 0) pending.splice(idx, 1);
      finish({
        name: d.step.name,
        id: d.step.id,
        outputPath: d.step.outputPath,
        outcome: cancelled ? "cancelled" : "dep_failed",
        durationMs: 0,
        error: `dependency ${name} ${cancelled ? "was cancelled" : "failed"}`,
      });
      taken.push(d);
      queue.push(...(dependants.get(d.step.id) ?? []));
    }
    return taken;
  };

  const running = new Map<string, Promise<void>>();
  try {
    while (pending.length || running.size) {
      if (opts.signal?.aborted && running.size === 0) break;
      for (let i = 0; i < pending.length && running.size < maxConcurrent && !opts.signal?.aborted;) {
        const e = pending[i];
        const ready = e.step.deps.every((d) => {
          const r = reports.get(d.id);
          return r !== undefined && (r.outcome === "ran" || r.outcome === "skipped" || r.outcome === "reused");
        });
        if (!ready) {
          i++;
          continue;
        }
        pending.splice(i, 1);
        const p = run
          .execute(e)
          .catch((err: unknown): StepReport => ({ name: e.step.name, id: e.step.id, outputPath: e.step.outputPath, outcome: "failed", durationMs: 0, error: errorText(err) }))
          .then(async (r) => {
            finish(r);
            if (r.outcome === "failed" || r.outcome === "cancelled") {
              const cancelled = r.outcome === "cancelled";
              const taken = takeDependants(r.id, r.name, cancelled);
              await Promise.all(taken.map((d) => run.markDepFailed(d.step, r.name, cancelled).catch(() => undefined)));
            }
            // Only now: until the dependants are settled the loop must still see this step as running.
            running.delete(e.step.id);
          });
        running.set(e.step.id, p);
      }
      if (running.size === 0) {
        if (pending.length && !opts.signal?.aborted) {
          throw new MarinError("INTERNAL", `no step can start: ${pending.map((e) => e.step.name).join(", ")}`);
        }
        break;
      }
      await Promise.race(running.values());
    }
  } finally {
    await run.close();
  }
  for (const e of pending) {
    if (!reports.has(e.step.id)) finish({ name: e.step.name, id: e.step.id, outputPath: e.step.outputPath, outcome: "cancelled", durationMs: 0 });
  }
  const steps = plan.entries.map((e) => reports.get(e.step.id)!);
  const executed = steps.some((s) => s.outcome !== "skipped" && s.outcome !== "not_selected");
  const summary: RunSummary = {
    runId: run.runId,
    prefix: graph.prefix,
    ok: steps.every((s) => s.outcome !== "failed" && s.outcome !== "dep_failed" && s.outcome !== "cancelled"),
    steps,
    wallMs: clock.now() - t0,
    startedAt: run.startedAt,
    ...(executed ? { logDir: path.join(run.runDir(), "logs") } : {}),
  };
  if (executed) {
    await writeRunRecord({
      runId: run.runId,
      prefix: graph.prefix,
      state: "finished",
      startedAt: run.startedAt,
      finishedAt: clock.now(),
      ...runnerIdentity(),
      ok: summary.ok,
      steps: steps.map((s) => ({ name: s.name, id: s.id, outputPath: s.outputPath, outcome: s.outcome, ...(s.error ? { error: s.error.split("\n")[0] } : {}) })),
    });
  }
  return summary;
}
