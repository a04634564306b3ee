// The controller's state machine over its SQLite database: jobs → tasks → attempts, workers,
// endpoints, logs and metrics. Everything here is synchronous (better-sqlite3), and every public
// transition runs in one transaction, so a snapshot read and the commit of its decisions can never
// interleave with another change. The gRPC layer (controller.ts) only translates and subscribes.
import { randomBytes, randomUUID } from "node:crypto";
import { IrisError } from "../errors.ts";
import type { AttemptObservation__Output } from "../internal/generated/iris/v1/AttemptObservation.ts";
import type { JobStatus } from "../internal/generated/iris/v1/JobStatus.ts";
import type { RunAttempt } from "../internal/generated/iris/v1/RunAttempt.ts";
import type { StopAttempt } from "../internal/generated/iris/v1/StopAttempt.ts";
import type { TaskStatus } from "../internal/generated/iris/v1/TaskStatus.ts";
import type { WorkerInfo } from "../internal/generated/iris/v1/WorkerInfo.ts";
import type { Endpoint as WireEndpoint } from "../internal/generated/iris/v1/Endpoint.ts";
import type { LogEntry as WireLogEntry } from "../internal/generated/iris/v1/LogEntry.ts";
import type { MetricPoint as WireMetricPoint } from "../internal/generated/iris/v1/MetricPoint.ts";
import { entrypointToWire, specResourcesToWire } from "../internal/codec.ts";
import { isTerminalJobState } from "../jobSpec.ts";
import { checkResultSize } from "../taskResult.ts";
import type { JobSpec, JobState, TaskState } from "../jobSpec.ts";
import type { Db } from "./db.ts";
import type BetterSqlite3 from "better-sqlite3";

type Statement = BetterSqlite3.Statement<unknown[]>;
import { schedule } from "./scheduler.ts";
import type { SchedResources, SchedTask, SchedWorker } from "./scheduler.ts";

/** Source of time; tests pass a fake. */
export interface Clock {
  now(): number;
}

/** Notifications the gRPC layer subscribes to; fired after the transaction commits. */
export interface StateListener {
  jobChanged?(instanceId: string): void;
  workerChanged?(workerId: string): void;
  logsAppended?(instanceId: string): void;
}

/** Options of {@link ControllerState}. */
export interface ControllerStateOptions {
  clock?: Clock;
  /** A worker silent for this long is lost (default 30 s). */
  workerTimeoutMs?: number;
  /** Points kept per attempt's metrics series (default 10,000; oldest dropped first). */
  metricsLimit?: number;
  /** Log lines stored per attempt (default 1,000,000); later lines are dropped, with a notice. */
  logLinesLimit?: number;
  listener?: StateListener;
}

interface JobRow {
  instance_id: string;
  name: string;
  latest: number;
  parent_instance_id: string | null;
  spec: string;
  state: JobState;
  error: string;
  submitted_at_ms: number;
  finished_at_ms: number;
  version: number;
}

interface TaskRow {
  instance_id: string;
  idx: number;
  state: TaskState;
  attempt: number;
  failures: number;
  preemptions: number;
  exit_code: number | null;
  failure_kind: string;
  error: string;
  pending_reason: string;
  error_code: string;
}

interface AttemptRow {
  uid: string;
  instance_id: string;
  idx: number;
  attempt: number;
  worker_id: string;
  state: string;
  exit_code: number | null;
  failure_kind: string;
  error: string;
  resources: string;
  assigned_at_ms: number;
  started_at_ms: number;
  finished_at_ms: number;
  stopping: number;
  stop_reason: string;
  status_text: string;
  log_lines_expected: number;
  log_lines_received: number;
  metric_count: number;
  last_step: number | null;
  result_json: string | null;
  error_code: string;
}

interface WorkerRow {
  id: string;
  host: string;
  attributes: string;
  capacity: string;
  state: "ALIVE" | "LOST";
  healthy: number;
  last_seen_ms: number;
  registered_at_ms: number;
}

const LIVE_ATTEMPT_STATES = ["ASSIGNED", "BUILDING", "RUNNING"];
const TERMINAL_TASK_STATES: ReadonlySet<string> = new Set(["SUCCEEDED", "FAILED", "KILLED", "WORKER_LOST", "PREEMPTED", "UNSCHEDULABLE"]);
const FAILED_TASK_STATES: ReadonlySet<string> = new Set(["FAILED", "WORKER_LOST", "PREEMPTED"]);

/** Whether a task state is final. */
export function isTerminalTaskState(s: string): boolean {
  return TERMINAL_TASK_STATES.has(s);
}

/**
 * A job's state from its tasks', first match wins: FAILED when more tasks failed for good than
 * `maxTaskFailures`; UNSCHEDULABLE / KILLED if any task is; SUCCEEDED when all are final;
 * RUNNING when any holds an attempt; else PENDING.
 */
export function deriveJobState(taskStates: readonly string[], maxTaskFailures: number): JobState {
  let failed = 0;
  let terminal = 0;
  let active = 0;
  let killed = false;
  let unschedulable = false;
  for (const s of taskStates) {
    if (FAILED_TASK_STATES.has(s)) failed++;
    if (TERMINAL_TASK_STATES.has(s)) terminal++;
    if (s === "ASSIGNED" || s === "BUILDING" || s === "RUNNING") active++;
    if (s === "KILLED") killed = true;
    if (s === "UNSCHEDULABLE") unschedulable = true;
  }
  if (failed > maxTaskFailures) return "FAILED";
  if (unschedulable) return "UNSCHEDULABLE";
  if (killed && terminal === taskStates.length) return "KILLED";
  if (terminal === taskStates.length) return "SUCCEEDED";
  if (active > 0 || terminal > 0) return "RUNNING";
  return "PENDING";
}

/** The job name and index of a task id `/user/job/<index>`. */
export function parseTaskId(taskId: string): { jobName: string; index: number } {
  const m = /^(\/.+)\/(\d+)$/.exec(taskId);
  if (!m) throw new IrisError("INVALID_ARGUMENT", `not a task id: "${taskId}" (expected /user/job/<index>)`);
  return { jobName: m[1]!, index: Number(m[2]) };
}

/** The task id, job name, index and attempt number of an attempt id `/user/job/<index>:<attempt>`. */
export function parseAttemptId(attemptId: string): { jobName: string; index: number; attempt: number } {
  const m = /^(\/.+)\/(\d+):(\d+)$/.exec(attemptId);
  if (!m) throw new IrisError("INVALID_ARGUMENT", `not an attempt id: "${attemptId}" (expected /user/job/<index>:<attempt>)`);
  return { jobName: m[1]!, index: Number(m[2]), attempt: Number(m[3]) };
}

/** The root job (`/user/job`) of any job name. */
export function rootJobOf(name: string): string {
  return name.split("/").slice(0, 3).join("/");
}

function newInstanceId(now: number): string {
  return `${now.toString(36).padStart(9, "0")}${randomBytes(5).toString("hex")}`;
}

function addResources(a: SchedResources, b: SchedResources): SchedResources {
  const devices = { ...a.devices };
  for (const [k, v] of Object.entries(b.devices)) devices[k] = (devices[k] ?? 0) + v;
  return { cpuMillis: a.cpuMillis + b.cpuMillis, memoryBytes: a.memoryBytes + b.memoryBytes, devices };
}

function requestOf(spec: JobSpec): SchedResources {
  const devices: Record<string, number> = {};
  for (const d of spec.resources.devices) devices[d.kind] = (devices[d.kind] ?? 0) + d.count;
  return { cpuMillis: spec.resources.cpuMillis, memoryBytes: spec.resources.memoryBytes, devices };
}

/** What ended an attempt, as decided by the worker or the controller. */
interface AttemptOutcome {
  state: "SUCCEEDED" | "FAILED" | "KILLED" | "WORKER_LOST";
  failureKind: string;
  exitCode?: number | undefined;
  error?: string | undefined;
  /** For APP_ERROR: the application's error code. */
  errorCode?: string | undefined;
  /** For SUCCEEDED: the JSON text of the return value. */
  resultJson?: string | undefined;
}

/** The end of an attempt as its worker reported it; a result over the limit becomes APP_ERROR. */
function observedOutcome(o: AttemptObservation__Output): AttemptOutcome {
  if (o.state === "SUCCEEDED") {
    if (o.resultJson === "") return { state: "SUCCEEDED", failureKind: "", exitCode: o.exitCode ?? 0 };
    const checked = checkResultSize(o.resultJson);
    if ("resultJson" in checked) return { state: "SUCCEEDED", failureKind: "", exitCode: o.exitCode ?? 0, resultJson: checked.resultJson };
    return { state: "FAILED", failureKind: "APP_ERROR", exitCode: o.exitCode, error: checked.appError.message, errorCode: checked.appError.code };
  }
  return {
    state: o.failureKind === "WORKER_LOST" ? "WORKER_LOST" : o.state === "KILLED" ? "KILLED" : "FAILED",
    failureKind: o.failureKind || (o.state === "KILLED" ? "KILLED" : "APP_EXIT"),
    exitCode: o.exitCode,
    error: o.error,
    ...(o.failureKind === "APP_ERROR" ? { errorCode: o.errorCode } : {}),
  };
}

/**
 * All controller state and its transitions. One instance per database; not thread-safe (Node
 * has one thread), and every public method is one transaction.
 */
export class ControllerState {
  readonly db: Db;
  readonly workerTimeoutMs: number;
  private readonly clock: Clock;
  private readonly metricsLimit: number;
  private readonly logLinesLimit: number;
  private readonly listener: StateListener;
  private readonly specCache = new Map<string, JobSpec>();
  private dirtyJobs = new Set<string>();
  private dirtyWorkers = new Set<string>();
  private dirtyLogs = new Set<string>();
  private depth = 0;
  private readonly statements = new Map<string, Statement>();
  private readonly inTransaction: (fn: () => unknown) => unknown;
  // Placement can only change when tasks become pending, capacity frees up or workers come and
  // go; passes in between are skipped (a pass over many pending tasks is not free).
  private needsSchedule = true;

  constructor(db: Db, opts: ControllerStateOptions = {}) {
    this.db = db;
    this.clock = opts.clock ?? { now: () => Date.now() };
    this.workerTimeoutMs = opts.workerTimeoutMs ?? 30_000;
    this.metricsLimit = opts.metricsLimit ?? 10_000;
    this.logLinesLimit = opts.logLinesLimit ?? 1_000_000;
    this.listener = opts.listener ?? {};
    this.inTransaction = db.transaction((fn: () => unknown) => fn());
    // A restarted controller gives every known-alive worker two timeouts to reconcile again
    // before declaring it lost (the database's last_seen is from before the restart, and the
    // workers are still backing off their reconnects): adopt, don't restart.
    this.tx(() => {
      this.stmt("UPDATE workers SET last_seen_ms = ? WHERE state = 'ALIVE'").run(this.clock.now() + this.workerTimeoutMs);
    });
  }

  // ---- transactions and notifications -------------------------------------------------------

  /** Runs `fn` in one transaction; listeners are told about changes after it commits. */
  tx<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    this.depth++;
    let result: T;
    try {
      result = this.inTransaction(() => {
        const r = fn();
        const bump = this.stmt("UPDATE jobs SET version = version + 1 WHERE instance_id = ?");
        for (const id of this.dirtyJobs) bump.run(id);
        return r;
      }) as T;
    } catch (e) {
      this.dirtyJobs.clear();
      this.dirtyWorkers.clear();
      this.dirtyLogs.clear();
      throw e;
    } finally {
      this.depth--;
    }
    const jobs = this.dirtyJobs;
    const workers = this.dirtyWorkers;
    const logs = this.dirtyLogs;
    this.dirtyJobs = new Set();
    this.dirtyWorkers = new Set();
    this.dirtyLogs = new Set();
    for (const id of jobs) this.listener.jobChanged?.(id);
    for (const id of workers) this.listener.workerChanged?.(id);
    for (const id of logs) this.listener.logsAppended?.(id);
    return result;
  }

  // Prepared statements are reused: preparing is a large share of a small transaction's cost.
  private stmt(sql: string): Statement {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  private touchJob(instanceId: string): void {
    this.dirtyJobs.add(instanceId);
  }

  // ---- reads ----------------------------------------------------------------------------------

  private job(instanceId: string): JobRow {
    const j = this.stmt("SELECT * FROM jobs WHERE instance_id = ?").get(instanceId) as JobRow | undefined;
    if (!j) throw new IrisError("NOT_FOUND", `no job instance ${instanceId}`);
    return j;
  }

  /** The latest submission of `name` (or the given instance), NOT_FOUND if none. */
  findJob(name: string, instanceId = ""): JobRow {
    const j = (
      instanceId
        ? this.stmt("SELECT * FROM jobs WHERE instance_id = ? AND name = ?").get(instanceId, name)
        : this.stmt("SELECT * FROM jobs WHERE name = ? AND latest = 1").get(name)
    ) as JobRow | undefined;
    if (!j) throw new IrisError("NOT_FOUND", `no job named ${name}${instanceId ? ` with instance ${instanceId}` : ""}`);
    return j;
  }

  specOf(instanceId: string): JobSpec {
    let s = this.specCache.get(instanceId);
    if (!s) {
      s = JSON.parse(this.job(instanceId).spec) as JobSpec;
      this.specCache.set(instanceId, s);
    }
    return s;
  }

  private tasksOf(instanceId: string): TaskRow[] {
    return this.stmt("SELECT * FROM tasks WHERE instance_id = ? ORDER BY idx").all(instanceId) as TaskRow[];
  }

  private task(instanceId: string, idx: number): TaskRow {
    const t = this.stmt("SELECT * FROM tasks WHERE instance_id = ? AND idx = ?").get(instanceId, idx) as TaskRow | undefined;
    if (!t) throw new IrisError("NOT_FOUND", `no task ${idx} in job instance ${instanceId}`);
    return t;
  }

  private attemptByUid(uid: string): AttemptRow | undefined {
    return this.stmt("SELECT * FROM attempts WHERE uid = ?").get(uid) as AttemptRow | undefined;
  }

  private attemptOf(instanceId: string, idx: number, attempt: number): AttemptRow | undefined {
    return this.db
      .prepare("SELECT * FROM attempts WHERE instance_id = ? AND idx = ? AND attempt = ?")
      .get(instanceId, idx, attempt) as AttemptRow | undefined;
  }

  /** The wire status of one job instance. */
  jobStatus(instanceId: string): JobStatus & { state: JobState } {
    const j = this.job(instanceId);
    const attempts = this.db
      .prepare("SELECT * FROM attempts WHERE instance_id = ? ORDER BY idx, attempt")
      .all(instanceId) as AttemptRow[];
    const byTask = new Map<number, AttemptRow[]>();
    for (const a of attempts) {
      const l = byTask.get(a.idx) ?? [];
      l.push(a);
      byTask.set(a.idx, l);
    }
    const tasks: TaskStatus[] = this.tasksOf(instanceId).map((t) => {
      const list = byTask.get(t.idx) ?? [];
      const current = list.find((a) => a.attempt === t.attempt);
      return {
        taskId: `${j.name}/${t.idx}`,
        index: t.idx,
        state: t.state,
        attempt: t.attempt,
        ...(t.exit_code !== null ? { exitCode: t.exit_code } : {}),
        failureKind: t.failure_kind,
        pendingReason: t.state === "PENDING" ? t.pending_reason : "",
        statusText: current?.status_text ?? "",
        error: t.error,
        errorCode: t.error_code,
        resultJson: t.state === "SUCCEEDED" && current?.state === "SUCCEEDED" ? (current.result_json ?? "") : "",
        workerId: current?.worker_id ?? "",
        failures: t.failures,
        preemptions: t.preemptions,
        attempts: list.map((a) => ({
          attempt: a.attempt,
          attemptUid: a.uid,
          workerId: a.worker_id,
          state: a.state,
          ...(a.exit_code !== null ? { exitCode: a.exit_code } : {}),
          failureKind: a.failure_kind,
          error: a.error,
          errorCode: a.error_code,
          resultJson: a.state === "SUCCEEDED" ? (a.result_json ?? "") : "",
          assignedAtMs: a.assigned_at_ms,
          startedAtMs: a.started_at_ms,
          finishedAtMs: a.finished_at_ms,
        })),
      };
    });
    return {
      name: j.name,
      instanceId: j.instance_id,
      state: j.state,
      error: j.error,
      tasks,
      submittedAtMs: j.submitted_at_ms,
      finishedAtMs: j.finished_at_ms,
      version: j.version,
      spec: undefined,
    } as JobStatus & { state: JobState };
  }

  /** Latest submissions of every job named `prefix` or below it. */
  listJobs(prefix: string): string[] {
    const p = prefix.replace(/\/+$/, "");
    const rows = (
      p === ""
        ? this.stmt("SELECT instance_id FROM jobs WHERE latest = 1 ORDER BY submitted_at_ms").all()
        : this.db
            .prepare("SELECT instance_id FROM jobs WHERE latest = 1 AND (name = ? OR substr(name, 1, ?) = ?) ORDER BY submitted_at_ms")
            .all(p, p.length + 1, `${p}/`)
    ) as { instance_id: string }[];
    return rows.map((r) => r.instance_id);
  }

  // ---- jobs -----------------------------------------------------------------------------------

  /** Submits a validated spec (full name). ALREADY_EXISTS while that name is unfinished. */
  launchJob(spec: JobSpec): { name: string; instanceId: string } {
    return this.tx(() => {
      const now = this.clock.now();
      const existing = this.stmt("SELECT * FROM jobs WHERE name = ? AND latest = 1").get(spec.name) as JobRow | undefined;
      if (existing && !isTerminalJobState(existing.state)) {
        throw new IrisError("ALREADY_EXISTS", `job ${spec.name} is still ${existing.state} (instance ${existing.instance_id})`);
      }
      let parent: JobRow | undefined;
      const segs = spec.name.split("/");
      if (segs.length > 3) {
        const parentName = segs.slice(0, -1).join("/");
        parent = this.stmt("SELECT * FROM jobs WHERE name = ? AND latest = 1").get(parentName) as JobRow | undefined;
        if (!parent) throw new IrisError("NOT_FOUND", `parent job ${parentName} of ${spec.name} does not exist`);
        if (isTerminalJobState(parent.state)) {
          throw new IrisError("FAILED_PRECONDITION", `parent job ${parentName} of ${spec.name} already ended (${parent.state})`);
        }
      }
      const instanceId = newInstanceId(now);
      this.stmt("UPDATE jobs SET latest = 0 WHERE name = ?").run(spec.name);
      this.db
        .prepare(
          "INSERT INTO jobs (instance_id, name, latest, parent_instance_id, spec, state, submitted_at_ms) VALUES (?, ?, 1, ?, ?, 'PENDING', ?)",
        )
        .run(instanceId, spec.name, parent?.instance_id ?? null, JSON.stringify(spec), now);
      const ins = this.stmt("INSERT INTO tasks (instance_id, idx, state) VALUES (?, ?, 'PENDING')");
      for (let i = 0; i < spec.replicas; i++) ins.run(instanceId, i);
      this.specCache.set(instanceId, spec);
      this.touchJob(instanceId);
      this.needsSchedule = true;
      return { name: spec.name, instanceId };
    });
  }

  /** Kills a job's tasks and, recursively, its children. No-op on a finished job. */
  terminateJob(name: string): void {
    this.tx(() => {
      const j = this.findJob(name);
      if (!isTerminalJobState(j.state)) this.endJob(j.instance_id, "KILLED", "terminated by request");
    });
  }

  // Ends a job in `state`: live tasks KILLED (their attempts asked to stop), children ended too.
  private endJob(instanceId: string, state: JobState, error: string): void {
    const now = this.clock.now();
    for (const t of this.tasksOf(instanceId)) {
      if (isTerminalTaskState(t.state)) continue;
      this.stopCurrentAttempt(t, { state: "KILLED", failureKind: "KILLED", error }, state === "KILLED" ? "KILLED" : "FAILED");
      this.db
        .prepare("UPDATE tasks SET state = 'KILLED', failure_kind = CASE WHEN failure_kind = '' THEN 'KILLED' ELSE failure_kind END, error = CASE WHEN error = '' THEN ? ELSE error END WHERE instance_id = ? AND idx = ?")
        .run(error, instanceId, t.idx);
    }
    this.stmt("UPDATE jobs SET state = ?, error = ?, finished_at_ms = ? WHERE instance_id = ?").run(state, error, now, instanceId);
    this.touchJob(instanceId);
    this.endChildren(instanceId);
  }

  private endChildren(instanceId: string): void {
    const j = this.job(instanceId);
    const children = this.db
      .prepare("SELECT instance_id, state FROM jobs WHERE parent_instance_id = ?")
      .all(instanceId) as { instance_id: string; state: string }[];
    for (const c of children) {
      if (!isTerminalJobState(c.state)) this.endJob(c.instance_id, "KILLED", `parent job ${j.name} ended (${j.state})`);
    }
  }

  // Marks a task's live attempt as ended by the controller and asks its worker to stop it.
  private stopCurrentAttempt(t: TaskRow, outcome: AttemptOutcome, reason: string): void {
    const a = this.attemptOf(t.instance_id, t.idx, t.attempt);
    if (!a || !LIVE_ATTEMPT_STATES.includes(a.state)) return;
    this.finishAttemptRow(a, outcome, reason);
  }

  private finishAttemptRow(a: AttemptRow, outcome: AttemptOutcome, stopReason: string | undefined): void {
    this.db
      .prepare(
        "UPDATE attempts SET state = ?, failure_kind = ?, exit_code = ?, error = ?, error_code = ?, result_json = ?, finished_at_ms = ?, stopping = ?, stop_reason = ? WHERE uid = ?",
      )
      .run(
        outcome.state,
        outcome.failureKind,
        outcome.exitCode ?? null,
        outcome.error ?? "",
        outcome.errorCode ?? "",
        outcome.resultJson ?? null,
        this.clock.now(),
        stopReason ? 1 : 0,
        stopReason ?? "",
        a.uid,
      );
    this.stmt("DELETE FROM endpoints WHERE attempt_uid = ?").run(a.uid);
    if (stopReason) this.dirtyWorkers.add(a.worker_id);
    this.needsSchedule = true;
  }

  // Re-derives a job's state after task changes; a job that just ended ends its leftovers.
  private recomputeJob(instanceId: string): void {
    const j = this.job(instanceId);
    if (isTerminalJobState(j.state)) return;
    const spec = this.specOf(instanceId);
    const tasks = this.tasksOf(instanceId);
    const state = deriveJobState(
      tasks.map((t) => t.state),
      spec.maxTaskFailures,
    );
    if (state === j.state) return;
    this.touchJob(instanceId);
    if (isTerminalJobState(state)) {
      const failed = tasks.find((t) => FAILED_TASK_STATES.has(t.state));
      const error =
        state === "FAILED" && failed
          ? `task ${j.name}/${failed.idx} failed: ${failed.failure_kind}${failed.failure_kind === "APP_ERROR" ? `(${failed.error_code})` : failed.exit_code !== null ? `(${failed.exit_code})` : ""}${failed.error ? `: ${failed.error}` : ""}`
          : "";
      this.endJob(instanceId, state, error);
    } else {
      this.stmt("UPDATE jobs SET state = ? WHERE instance_id = ?").run(state, instanceId);
    }
  }

  // ---- attempts ending ------------------------------------------------------------------------

  // An attempt of the task's current round ended (reported by its worker or decided here).
  private attemptEnded(a: AttemptRow, outcome: AttemptOutcome, stopReason?: string): void {
    this.finishAttemptRow(a, outcome, stopReason);
    const t = this.task(a.instance_id, a.idx);
    this.touchJob(a.instance_id);
    if (t.attempt !== a.attempt || isTerminalTaskState(t.state)) return;
    const spec = this.specOf(a.instance_id);
    if (outcome.state === "SUCCEEDED") {
      this.db
        .prepare("UPDATE tasks SET state = 'SUCCEEDED', exit_code = ?, failure_kind = '', error = '', error_code = '' WHERE instance_id = ? AND idx = ?")
        .run(outcome.exitCode ?? 0, t.instance_id, t.idx);
      this.recomputeJob(a.instance_id);
      return;
    }
    const preemption = outcome.failureKind === "WORKER_LOST" || outcome.state === "WORKER_LOST";
    const failures = t.failures + (preemption ? 0 : 1);
    const preemptions = t.preemptions + (preemption ? 1 : 0);
    // An APP_ERROR is the application saying that retrying cannot help: no budget retries it.
    const exhausted =
      outcome.failureKind === "APP_ERROR" || (preemption ? preemptions > spec.maxRetriesPreemption : failures > spec.maxRetriesFailure);
    const finalState: TaskState = exhausted ? (preemption ? "WORKER_LOST" : "FAILED") : "PENDING";
    this.db
      .prepare(
        "UPDATE tasks SET state = ?, failures = ?, preemptions = ?, exit_code = ?, failure_kind = ?, error = ?, error_code = ?, pending_reason = '' WHERE instance_id = ? AND idx = ?",
      )
      .run(finalState, failures, preemptions, outcome.exitCode ?? null, outcome.failureKind, outcome.error ?? "", outcome.errorCode ?? "", t.instance_id, t.idx);
    if (spec.gang && spec.replicas > 1) this.failGangPeers(a.instance_id, a.idx, exhausted);
    this.recomputeJob(a.instance_id);
  }

  // One gang member failed: every other member's attempt of this round ends PEER_FAILED (charged
  // to no budget) and the whole gang goes back to PENDING, or to KILLED when the failure
  // exhausted its budget (the job then fails).
  private failGangPeers(instanceId: string, failedIdx: number, exhausted: boolean): void {
    for (const t of this.tasksOf(instanceId)) {
      if (t.idx === failedIdx) continue;
      const a = this.attemptOf(instanceId, t.idx, t.attempt);
      const peerOutcome: AttemptOutcome = { state: "FAILED", failureKind: "PEER_FAILED", error: `gang member ${failedIdx} failed` };
      if (a && LIVE_ATTEMPT_STATES.includes(a.state)) this.finishAttemptRow(a, peerOutcome, "PEER_FAILED");
      else if (a && a.state === "SUCCEEDED") {
        this.stmt("UPDATE attempts SET state = 'FAILED', failure_kind = 'PEER_FAILED', error = ? WHERE uid = ?").run(peerOutcome.error, a.uid);
      }
      if (t.state === "KILLED" || t.state === "FAILED" || t.state === "WORKER_LOST") continue;
      this.db
        .prepare("UPDATE tasks SET state = ?, failure_kind = 'PEER_FAILED', error_code = '', exit_code = NULL, error = ?, pending_reason = '' WHERE instance_id = ? AND idx = ?")
        .run(exhausted ? "KILLED" : "PENDING", peerOutcome.error, instanceId, t.idx);
    }
  }

  // ---- scheduling -----------------------------------------------------------------------------

  /** One scheduling pass: place what fits, record a reason for the rest. Returns placements. */
  schedulePass(): number {
    if (!this.needsSchedule) return 0;
    this.needsSchedule = false;
    try {
      return this.schedulePassTx();
    } catch (e) {
      this.needsSchedule = true;
      throw e;
    }
  }

  private schedulePassTx(): number {
    return this.tx(() => {
      const now = this.clock.now();
      const workerRows = this.stmt("SELECT * FROM workers WHERE state = 'ALIVE' AND healthy = 1").all() as WorkerRow[];
      const pendingRows = this.db
        .prepare(
          "SELECT t.instance_id, t.idx, t.pending_reason, j.submitted_at_ms FROM tasks t JOIN jobs j ON j.instance_id = t.instance_id WHERE t.state = 'PENDING' AND j.state IN ('PENDING', 'RUNNING') ORDER BY j.submitted_at_ms, t.idx",
        )
        .all() as { instance_id: string; idx: number; pending_reason: string; submitted_at_ms: number }[];
      if (pendingRows.length === 0) return 0;
      const used = new Map<string, SchedResources>();
      const held = this.db
        .prepare(`SELECT worker_id, resources FROM attempts WHERE state IN ('ASSIGNED','BUILDING','RUNNING') OR stopping = 1`)
        .all() as { worker_id: string; resources: string }[];
      for (const h of held) {
        used.set(h.worker_id, addResources(used.get(h.worker_id) ?? { cpuMillis: 0, memoryBytes: 0, devices: {} }, JSON.parse(h.resources) as SchedResources));
      }
      const workers: SchedWorker[] = workerRows.map((w) => ({
        id: w.id,
        capacity: JSON.parse(w.capacity) as SchedResources,
        used: used.get(w.id) ?? { cpuMillis: 0, memoryBytes: 0, devices: {} },
        attributes: JSON.parse(w.attributes) as Record<string, string>,
      }));
      const byKey = new Map<string, (typeof pendingRows)[number]>();
      const pending: SchedTask[] = pendingRows.map((r) => {
        const spec = this.specOf(r.instance_id);
        const taskId = `${r.instance_id}/${r.idx}`;
        byKey.set(taskId, r);
        return {
          taskId,
          jobId: r.instance_id,
          priority: spec.priority,
          submittedAtMs: r.submitted_at_ms,
          request: requestOf(spec),
          constraints: spec.constraints,
          ...(spec.gang && spec.replicas > 1 ? { gangId: r.instance_id } : {}),
        };
      });
      const result = schedule({ workers, pending });
      for (const { taskId, workerId } of result.assignments) {
        const r = byKey.get(taskId)!;
        this.assign(r.instance_id, r.idx, workerId, now);
      }
      const setReason = this.stmt("UPDATE tasks SET pending_reason = ? WHERE instance_id = ? AND idx = ?");
      for (const { taskId, reason } of result.unplaced) {
        const r = byKey.get(taskId)!;
        if (r.pending_reason !== reason) {
          setReason.run(reason, r.instance_id, r.idx);
          this.touchJob(r.instance_id);
        }
      }
      return result.assignments.length;
    });
  }

  private assign(instanceId: string, idx: number, workerId: string, now: number): void {
    const t = this.task(instanceId, idx);
    const attempt = t.attempt + 1;
    const spec = this.specOf(instanceId);
    this.db
      .prepare(
        "INSERT INTO attempts (uid, instance_id, idx, attempt, worker_id, state, resources, assigned_at_ms) VALUES (?, ?, ?, ?, ?, 'ASSIGNED', ?, ?)",
      )
      .run(randomUUID().replace(/-/g, "").slice(0, 16), instanceId, idx, attempt, workerId, JSON.stringify(requestOf(spec)), now);
    this.db
      .prepare("UPDATE tasks SET state = 'ASSIGNED', attempt = ?, pending_reason = '' WHERE instance_id = ? AND idx = ?")
      .run(attempt, instanceId, idx);
    this.touchJob(instanceId);
    this.dirtyWorkers.add(workerId);
    this.recomputeJob(instanceId);
  }

  // ---- workers --------------------------------------------------------------------------------

  /** Registers a worker (again); a lost worker becomes alive. Returns its id. */
  registerWorker(req: { workerId: string; host: string; attributes: Record<string, string>; capacity: SchedResources }): string {
    return this.tx(() => {
      const now = this.clock.now();
      const id = req.workerId || `w-${randomBytes(6).toString("hex")}`;
      this.db
        .prepare(
          `INSERT INTO workers (id, host, attributes, capacity, state, healthy, last_seen_ms, registered_at_ms) VALUES (?, ?, ?, ?, 'ALIVE', 1, ?, ?)
           ON CONFLICT (id) DO UPDATE SET host = excluded.host, attributes = excluded.attributes, capacity = excluded.capacity, state = 'ALIVE', healthy = 1, last_seen_ms = excluded.last_seen_ms`,
        )
        .run(id, req.host, JSON.stringify(req.attributes), JSON.stringify(req.capacity), now, now);
      this.needsSchedule = true;
      return id;
    });
  }

  /** Whether a worker is registered and alive. */
  isWorkerAlive(workerId: string): boolean {
    const w = this.stmt("SELECT state FROM workers WHERE id = ?").get(workerId) as { state: string } | undefined;
    return w?.state === "ALIVE";
  }

  /**
   * One reconcile exchange: folds the worker's observations into the state and returns its full
   * desired set. NOT_FOUND for an unknown or lost worker.
   */
  reconcile(
    workerId: string,
    observed: AttemptObservation__Output[],
    health: { healthy: boolean },
  ): { run: RunAttempt[]; stop: StopAttempt[]; logLinesReceived: Record<string, number> } {
    return this.tx(() => {
      const now = this.clock.now();
      if (!this.isWorkerAlive(workerId)) throw new IrisError("NOT_FOUND", `worker ${workerId} is not registered (or was declared lost): register again`);
      const wasHealthy = (this.stmt("SELECT healthy FROM workers WHERE id = ?").get(workerId) as { healthy: number }).healthy === 1;
      if (wasHealthy !== health.healthy) this.needsSchedule = true;
      this.stmt("UPDATE workers SET last_seen_ms = ?, healthy = ? WHERE id = ?").run(now, health.healthy ? 1 : 0, workerId);
      const extraStops: StopAttempt[] = [];
      const seen = new Set<string>();
      for (const o of observed) {
        seen.add(o.attemptUid);
        const a = this.attemptByUid(o.attemptUid);
        const obsTerminal = o.state === "SUCCEEDED" || o.state === "FAILED" || o.state === "KILLED";
        if (!a || a.worker_id !== workerId) {
          if (!obsTerminal) extraStops.push({ attemptUid: o.attemptUid, reason: "SUPERSEDED" });
          continue;
        }
        if (o.logLines > a.log_lines_expected) {
          this.stmt("UPDATE attempts SET log_lines_expected = ? WHERE uid = ?").run(o.logLines, a.uid);
        }
        if (!LIVE_ATTEMPT_STATES.includes(a.state)) {
          // Already decided here (killed, lost, peer-failed): the worker's report only tells us
          // whether it still has to stop the process.
          if (obsTerminal) {
            this.db
              .prepare("UPDATE attempts SET stopping = 0, exit_code = COALESCE(exit_code, ?) WHERE uid = ?")
              .run(o.exitCode ?? null, a.uid);
            if (a.stopping) {
              this.touchJob(a.instance_id);
              this.needsSchedule = true;
            }
          } else if (!a.stopping) extraStops.push({ attemptUid: a.uid, reason: "SUPERSEDED" });
          continue;
        }
        if (o.state === "BUILDING" && a.state === "ASSIGNED") {
          this.setLiveState(a, "BUILDING", o);
        } else if (o.state === "RUNNING" && a.state !== "RUNNING") {
          this.setLiveState(a, "RUNNING", o);
        } else if (obsTerminal) {
          const outcome = observedOutcome(o);
          if (o.startedAtMs && !a.started_at_ms) this.stmt("UPDATE attempts SET started_at_ms = ? WHERE uid = ?").run(o.startedAtMs, a.uid);
          this.attemptEnded(a, outcome);
        }
      }
      // Attempts we asked to stop that the worker no longer has are stopped.
      const stopping = this.stmt("SELECT uid, instance_id FROM attempts WHERE worker_id = ? AND stopping = 1").all(workerId) as { uid: string; instance_id: string }[];
      for (const s of stopping) {
        if (!seen.has(s.uid)) {
          this.stmt("UPDATE attempts SET stopping = 0 WHERE uid = ?").run(s.uid);
          this.touchJob(s.instance_id);
          this.needsSchedule = true;
        }
      }
      const desired = this.desiredSet(workerId, extraStops);
      const logLinesReceived: Record<string, number> = {};
      const count = this.stmt("SELECT log_lines_received AS n FROM attempts WHERE uid = ?");
      for (const uid of seen) {
        const r = count.get(uid) as { n: number } | undefined;
        if (r) logLinesReceived[uid] = r.n;
      }
      return { ...desired, logLinesReceived };
    });
  }

  private setLiveState(a: AttemptRow, state: "BUILDING" | "RUNNING", o: AttemptObservation__Output): void {
    this.db
      .prepare("UPDATE attempts SET state = ?, started_at_ms = CASE WHEN ? = 'RUNNING' AND started_at_ms = 0 THEN ? ELSE started_at_ms END WHERE uid = ?")
      .run(state, state, o.startedAtMs || this.clock.now(), a.uid);
    const t = this.task(a.instance_id, a.idx);
    if (t.attempt === a.attempt && !isTerminalTaskState(t.state)) {
      this.stmt("UPDATE tasks SET state = ? WHERE instance_id = ? AND idx = ?").run(state, a.instance_id, a.idx);
    }
    this.touchJob(a.instance_id);
    this.recomputeJob(a.instance_id);
  }

  /** The complete desired set of a worker: live attempts with their specs, attempts to stop. */
  desiredSet(workerId: string, extraStops: StopAttempt[] = []): { run: RunAttempt[]; stop: StopAttempt[] } {
    const rows = this.db
      .prepare("SELECT * FROM attempts WHERE worker_id = ? AND (state IN ('ASSIGNED','BUILDING','RUNNING') OR stopping = 1)")
      .all(workerId) as AttemptRow[];
    const run: RunAttempt[] = [];
    const stop: StopAttempt[] = [...extraStops];
    for (const a of rows) {
      if (a.stopping) {
        stop.push({ attemptUid: a.uid, reason: a.stop_reason || "KILLED" });
        continue;
      }
      const j = this.job(a.instance_id);
      const spec = this.specOf(a.instance_id);
      run.push({
        attemptUid: a.uid,
        jobId: j.name,
        jobInstanceId: j.instance_id,
        taskId: `${j.name}/${a.idx}`,
        taskIndex: a.idx,
        numTasks: spec.replicas,
        attempt: a.attempt,
        entrypoint: entrypointToWire(spec.entrypoint),
        env: spec.env,
        ports: spec.ports,
        resources: specResourcesToWire(spec),
        timeoutMs: spec.timeoutMs,
      });
    }
    return { run, stop };
  }

  /** Declares workers silent for longer than the timeout lost; their attempts become WORKER_LOST. */
  checkWorkers(): string[] {
    return this.tx(() => {
      const deadline = this.clock.now() - this.workerTimeoutMs;
      const lost = this.stmt("SELECT id FROM workers WHERE state = 'ALIVE' AND last_seen_ms < ?").all(deadline) as { id: string }[];
      for (const { id } of lost) {
        this.stmt("UPDATE workers SET state = 'LOST' WHERE id = ?").run(id);
        this.needsSchedule = true;
        const live = this.db
          .prepare("SELECT * FROM attempts WHERE worker_id = ? AND state IN ('ASSIGNED','BUILDING','RUNNING')")
          .all(id) as AttemptRow[];
        for (const stale of live) {
          // Re-read: ending one gang member may already have ended its peers on this worker.
          const a = this.attemptByUid(stale.uid)!;
          if (!LIVE_ATTEMPT_STATES.includes(a.state)) continue;
          this.attemptEnded(
            a,
            { state: "WORKER_LOST", failureKind: "WORKER_LOST", error: `worker ${id} stopped reconciling for ${this.workerTimeoutMs} ms` },
            "SUPERSEDED",
          );
        }
      }
      return lost.map((l) => l.id);
    });
  }

  /** Every registered worker with its load. */
  listWorkers(): WorkerInfo[] {
    const rows = this.stmt("SELECT * FROM workers ORDER BY registered_at_ms").all() as WorkerRow[];
    return rows.map((w) => {
      const held = this.db
        .prepare("SELECT resources, state FROM attempts WHERE worker_id = ? AND (state IN ('ASSIGNED','BUILDING','RUNNING') OR stopping = 1)")
        .all(w.id) as { resources: string; state: string }[];
      let usedR: SchedResources = { cpuMillis: 0, memoryBytes: 0, devices: {} };
      for (const h of held) usedR = addResources(usedR, JSON.parse(h.resources) as SchedResources);
      const cap = JSON.parse(w.capacity) as SchedResources;
      const toWire = (r: SchedResources) => ({
        cpuMillis: r.cpuMillis,
        memoryBytes: r.memoryBytes,
        devices: Object.entries(r.devices).map(([kind, count]) => ({ kind, count })),
      });
      return {
        workerId: w.id,
        host: w.host,
        attributes: JSON.parse(w.attributes) as Record<string, string>,
        capacity: toWire(cap),
        used: toWire(usedR),
        state: w.state,
        lastSeenMs: w.last_seen_ms,
        runningAttempts: held.filter((h) => LIVE_ATTEMPT_STATES.includes(h.state)).length,
      };
    });
  }

  // ---- logs -----------------------------------------------------------------------------------

  private logTarget = new Map<string, { instanceId: string; idx: number; attempt: number } | null>();

  /** Appends log lines pushed by a worker (lines of unknown attempts are dropped). */
  appendLogs(lines: { attemptUid: string; stream: string; line: string; timeMs: number; index?: number | undefined }[]): void {
    if (lines.length === 0) return;
    this.tx(() => {
      const ins = this.stmt("INSERT INTO logs (instance_id, idx, attempt, stream, line, time_ms) VALUES (?, ?, ?, ?, ?, ?)");
      const counts = new Map<string, number>();
      const received = new Map<string, number>();
      const receivedOf = (uid: string): number => {
        let n = received.get(uid);
        if (n === undefined) {
          n = (this.stmt("SELECT log_lines_received AS n FROM attempts WHERE uid = ?").get(uid) as { n: number } | undefined)?.n ?? 0;
          received.set(uid, n);
        }
        return n;
      };
      for (const l of lines) {
        let target = this.logTarget.get(l.attemptUid);
        if (target === undefined) {
          const a = this.attemptByUid(l.attemptUid);
          target = a ? { instanceId: a.instance_id, idx: a.idx, attempt: a.attempt } : null;
          if (this.logTarget.size > 10_000) this.logTarget.clear();
          this.logTarget.set(l.attemptUid, target);
        }
        if (!target) continue;
        // A resent line the controller already has (see LogLine.index) is dropped.
        const stored = receivedOf(l.attemptUid) + (counts.get(l.attemptUid) ?? 0);
        if (l.index !== undefined && l.index !== null && l.index < stored) continue;
        // Bounded per attempt (a runaway printer must not bloat the database); the line at the
        // limit becomes a notice, later ones only count.
        const line =
          stored < this.logLinesLimit
            ? l.line
            : stored === this.logLinesLimit
              ? `[iris] log truncated: this attempt printed more than ${this.logLinesLimit} lines`
              : undefined;
        if (line !== undefined) {
          ins.run(target.instanceId, target.idx, target.attempt, l.stream === "stderr" ? "stderr" : "stdout", line, l.timeMs || this.clock.now());
        }
        counts.set(l.attemptUid, (counts.get(l.attemptUid) ?? 0) + 1);
        this.dirtyLogs.add(target.instanceId);
      }
      const upd = this.stmt("UPDATE attempts SET log_lines_received = log_lines_received + ? WHERE uid = ?");
      for (const [uid, n] of counts) upd.run(n, uid);
    });
  }

  /** Log entries of a job instance after `afterSeq` (at most `limit`). */
  readLogs(instanceId: string, afterSeq: number, taskIndex: number | undefined, limit = 1000): WireLogEntry[] {
    const j = this.job(instanceId);
    const rows = (
      taskIndex === undefined
        ? this.stmt("SELECT * FROM logs WHERE instance_id = ? AND seq > ? ORDER BY seq LIMIT ?").all(instanceId, afterSeq, limit)
        : this.db
            .prepare("SELECT * FROM logs WHERE instance_id = ? AND seq > ? AND idx = ? ORDER BY seq LIMIT ?")
            .all(instanceId, afterSeq, taskIndex, limit)
    ) as { seq: number; idx: number; attempt: number; stream: string; line: string; time_ms: number }[];
    return rows.map((r) => ({
      seq: r.seq,
      taskIndex: r.idx,
      attempt: r.attempt,
      stream: r.stream,
      line: r.line,
      timeMs: r.time_ms,
      taskId: `${j.name}/${r.idx}`,
    }));
  }

  /** Whether a job instance has ended, and when (ms; 0 while running). */
  jobEnd(instanceId: string): { terminal: boolean; finishedAtMs: number } {
    const j = this.job(instanceId);
    return { terminal: isTerminalJobState(j.state), finishedAtMs: j.finished_at_ms };
  }

  /** Whether a job is finished and every attempt's log lines have arrived. */
  logsComplete(instanceId: string): boolean {
    const j = this.job(instanceId);
    if (!isTerminalJobState(j.state)) return false;
    const pending = this.db
      .prepare("SELECT COUNT(*) AS n FROM attempts WHERE instance_id = ? AND (log_lines_received < log_lines_expected OR state IN ('ASSIGNED','BUILDING','RUNNING') OR stopping = 1)")
      .get(instanceId) as { n: number };
    return pending.n === 0;
  }

  // ---- endpoints ------------------------------------------------------------------------------

  /** The full name of an endpoint: as given when it starts with "/", else under the root job. */
  endpointName(name: string, scopeJob: string): string {
    if (name.startsWith("/")) return name;
    if (!scopeJob) throw new IrisError("INVALID_ARGUMENT", `endpoint name "${name}" is relative but no job scopes it (use a name starting with "/")`);
    return `${rootJobOf(scopeJob)}/${name}`;
  }

  /** Registers an endpoint, leased to `attemptId` when given (stale attempts are refused). */
  registerEndpoint(req: { name: string; address: string; metadata: Record<string, string>; attemptId: string; scopeJob: string }): WireEndpoint {
    return this.tx(() => {
      if (!req.name) throw new IrisError("INVALID_ARGUMENT", "endpoint name: expected a non-empty name");
      if (!req.address) throw new IrisError("INVALID_ARGUMENT", "endpoint address: expected a non-empty address");
      let lease: AttemptRow | undefined;
      let scope = req.scopeJob;
      if (req.attemptId) {
        const p = parseAttemptId(req.attemptId);
        const j = this.findJob(p.jobName);
        lease = this.attemptOf(j.instance_id, p.index, p.attempt);
        if (!lease) throw new IrisError("NOT_FOUND", `no attempt ${req.attemptId}`);
        if (!LIVE_ATTEMPT_STATES.includes(lease.state)) {
          throw new IrisError("FAILED_PRECONDITION", `attempt ${req.attemptId} already ended (${lease.state})`);
        }
        scope = scope || p.jobName;
      }
      const full = this.endpointName(req.name, scope);
      if (lease) {
        // A newer attempt of the same task replaces older registrations of the name; so does a
        // re-registration by the same attempt.
        this.db
          .prepare("DELETE FROM endpoints WHERE name = ? AND instance_id = ? AND idx = ? AND attempt <= ?")
          .run(full, lease.instance_id, lease.idx, lease.attempt);
      }
      const id = randomUUID();
      this.db
        .prepare("INSERT INTO endpoints (id, name, address, metadata, attempt_uid, instance_id, idx, attempt, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .run(id, full, req.address, JSON.stringify(req.metadata), lease?.uid ?? null, lease?.instance_id ?? null, lease?.idx ?? null, lease?.attempt ?? null, this.clock.now());
      return { endpointId: id, name: full, address: req.address, metadata: req.metadata, attemptId: req.attemptId };
    });
  }

  /** Removes an endpoint (no-op when already gone). */
  unregisterEndpoint(endpointId: string): void {
    this.tx(() => {
      this.stmt("DELETE FROM endpoints WHERE id = ?").run(endpointId);
    });
  }

  private endpointRows(where: string, ...args: unknown[]): WireEndpoint[] {
    const rows = this.stmt(`SELECT * FROM endpoints WHERE ${where} ORDER BY created_at_ms DESC`).all(...args) as {
      id: string;
      name: string;
      address: string;
      metadata: string;
      attempt_uid: string | null;
      instance_id: string | null;
      idx: number | null;
      attempt: number | null;
    }[];
    return rows.map((r) => ({
      endpointId: r.id,
      name: r.name,
      address: r.address,
      metadata: JSON.parse(r.metadata) as Record<string, string>,
      attemptId: r.instance_id ? `${this.job(r.instance_id).name}/${r.idx}:${r.attempt}` : "",
    }));
  }

  /** The newest endpoint of that name; NOT_FOUND if none. */
  resolveEndpoint(name: string, scopeJob: string): WireEndpoint {
    const full = this.endpointName(name, scopeJob);
    const e = this.endpointRows("name = ?", full)[0];
    if (!e) throw new IrisError("NOT_FOUND", `no endpoint named ${full}`);
    return e;
  }

  /** Endpoints whose full name starts with the (scoped) prefix. */
  listEndpoints(prefix: string, scopeJob: string): WireEndpoint[] {
    const full = prefix === "" ? (scopeJob ? `${rootJobOf(scopeJob)}/` : "") : this.endpointName(prefix, scopeJob);
    return this.endpointRows("substr(name, 1, ?) = ?", full.length, full).sort((a, b) => String(a.name).localeCompare(String(b.name)));
  }

  // ---- status reports and metrics -------------------------------------------------------------

  private attemptForReport(taskId: string, attempt: number): AttemptRow {
    const { jobName, index } = parseTaskId(taskId);
    const j = this.findJob(jobName);
    const t = this.task(j.instance_id, index);
    const n = attempt || t.attempt;
    const a = this.attemptOf(j.instance_id, index, n);
    if (!a) throw new IrisError("NOT_FOUND", `task ${taskId} has no attempt ${n}`);
    return a;
  }

  /** Records a status text and (when given) one metrics point for an attempt. */
  reportTaskStatus(taskId: string, attempt: number, statusText: string, metrics: Record<string, number>): void {
    this.tx(() => {
      const a = this.attemptForReport(taskId, attempt);
      this.stmt("UPDATE attempts SET status_text = ? WHERE uid = ?").run(statusText, a.uid);
      if (Object.keys(metrics).length > 0) {
        const step = Number.isFinite(metrics.step) ? metrics.step! : (a.last_step ?? -1) + 1;
        this.db
          .prepare("INSERT INTO metrics (attempt_uid, step, time_ms, metrics) VALUES (?, ?, ?, ?)")
          .run(a.uid, step, this.clock.now(), JSON.stringify(metrics));
        let count = a.metric_count + 1;
        if (count > this.metricsLimit) {
          this.db
            .prepare("DELETE FROM metrics WHERE id IN (SELECT id FROM metrics WHERE attempt_uid = ? ORDER BY id LIMIT ?)")
            .run(a.uid, count - this.metricsLimit);
          count = this.metricsLimit;
        }
        this.stmt("UPDATE attempts SET metric_count = ?, last_step = ? WHERE uid = ?").run(count, step, a.uid);
      }
      if (a.status_text !== statusText) this.touchJob(a.instance_id);
    });
  }

  /** The status text and metrics series of an attempt (0 = the task's current one). */
  taskMetrics(taskId: string, attempt: number): { statusText: string; points: WireMetricPoint[]; attempt: number } {
    const a = this.attemptForReport(taskId, attempt);
    const rows = this.stmt("SELECT step, time_ms, metrics FROM metrics WHERE attempt_uid = ? ORDER BY id").all(a.uid) as {
      step: number;
      time_ms: number;
      metrics: string;
    }[];
    return {
      statusText: a.status_text,
      attempt: a.attempt,
      points: rows.map((r) => ({ step: r.step, timeMs: r.time_ms, metrics: JSON.parse(r.metrics) as Record<string, number> })),
    };
  }
}
