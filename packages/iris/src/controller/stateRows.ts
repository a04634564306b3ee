// The controller database's rows as TypeScript sees them, and the pure rules over them: job state
// from task states, names and ids, resource arithmetic, how a reported attempt ended.
import { randomBytes } from "node:crypto";
import { IrisError } from "../errors.ts";
import type { AttemptObservation__Output } from "../internal/generated/iris/v1/AttemptObservation.ts";
import type { JobSpec, JobState, TaskState } from "../jobSpec.ts";
import { checkResultSize } from "../taskResult.ts";
import type { SchedResources } from "./scheduler.ts";

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
  /**
   * With no worker registered, a task waits this long before it is UNSCHEDULABLE (default 5 min;
   * 0 = forever); a job's own `schedulingTimeoutMs` wins.
   */
  schedulingTimeoutMs?: number;
  /** Points kept per attempt's metrics series (default 10,000; oldest dropped first). */
  metricsLimit?: number;
  /** Log lines stored per attempt (default 1,000,000); later lines are dropped, with a notice. */
  logLinesLimit?: number;
  /** How long an endpoint registered outside any attempt lives (default 10 min; registering again renews). */
  endpointTtlMs?: number;
  /** Bounds of the parsed-spec cache (default 1,000 specs and 64 MiB of their JSON). */
  specCacheLimits?: { entries?: number; bytes?: number };
  listener?: StateListener;
}

/** A row of `jobs`: one submission of a job name. */
export interface JobRow {
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

/** A row of `tasks`. */
export interface TaskRow {
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

/** A row of `attempts`. */
export interface AttemptRow {
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

/** A row of `workers`. */
export interface WorkerRow {
  id: string;
  host: string;
  attributes: string;
  capacity: string;
  state: "ALIVE" | "LOST";
  healthy: number;
  last_seen_ms: number;
  registered_at_ms: number;
}

/** A row of `endpoints`. */
export interface EndpointRow {
  id: string;
  name: string;
  address: string;
  metadata: string;
  attempt_uid: string | null;
  instance_id: string | null;
  idx: number | null;
  attempt: number | null;
  /**
   * Who owns the name: the full name of the registering job (a task's registration), or
   * `/<user>` (a user's registration outside any job). NULL only on rows from before ownership.
   * Changing it takes `mayControlJob(principal, owner_job)`.
   */
  owner_job: string | null;
  /** When an unleased registration expires (ms since the epoch); NULL for leased ones. */
  expires_at_ms: number | null;
}

/** A row of `logs`. */
export interface LogRow {
  seq: number;
  idx: number;
  attempt: number;
  stream: string;
  line: string;
  time_ms: number;
}

/** A row of `metrics` (the columns a series reads). */
export interface MetricRow {
  step: number;
  time_ms: number;
  metrics: string;
}

/** Attempt states that hold resources on a worker. */
export const LIVE_ATTEMPT_STATES = ["ASSIGNED", "BUILDING", "RUNNING"];
const TERMINAL_TASK_STATES: ReadonlySet<string> = new Set(["SUCCEEDED", "FAILED", "KILLED", "WORKER_LOST", "PREEMPTED", "UNSCHEDULABLE"]);
/** Task states that count as a task failed for good (against maxTaskFailures). */
export const FAILED_TASK_STATES: ReadonlySet<string> = new Set(["FAILED", "WORKER_LOST", "PREEMPTED"]);

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

/** A new job instance id: time-ordered, then random. */
export function newInstanceId(now: number): string {
  return `${now.toString(36).padStart(9, "0")}${randomBytes(5).toString("hex")}`;
}

/** The sum of two resource amounts. */
export function addResources(a: SchedResources, b: SchedResources): SchedResources {
  const devices = { ...a.devices };
  for (const [k, v] of Object.entries(b.devices)) devices[k] = (devices[k] ?? 0) + v;
  return { cpuMillis: a.cpuMillis + b.cpuMillis, memoryBytes: a.memoryBytes + b.memoryBytes, devices };
}

/** What one task of a job requests from a worker. */
export function requestOf(spec: JobSpec): SchedResources {
  const devices: Record<string, number> = {};
  for (const d of spec.resources.devices) devices[d.kind] = (devices[d.kind] ?? 0) + d.count;
  return { cpuMillis: spec.resources.cpuMillis, memoryBytes: spec.resources.memoryBytes, devices };
}

/** What ended an attempt, as decided by the worker or the controller. */
export interface AttemptOutcome {
  state: "SUCCEEDED" | "FAILED" | "KILLED" | "WORKER_LOST" | "PREEMPTED";
  failureKind: string;
  exitCode?: number | undefined;
  error?: string | undefined;
  /** For APP_ERROR: the application's error code. */
  errorCode?: string | undefined;
  /** For SUCCEEDED: the JSON text of the return value. */
  resultJson?: string | undefined;
}

/** The end of an attempt as its worker reported it; a result over the limit becomes APP_ERROR. */
export function observedOutcome(o: AttemptObservation__Output): AttemptOutcome {
  if (o.state === "SUCCEEDED") {
    if (o.resultJson === "") return { state: "SUCCEEDED", failureKind: "", exitCode: o.exitCode ?? 0 };
    const checked = checkResultSize(o.resultJson);
    if ("resultJson" in checked) return { state: "SUCCEEDED", failureKind: "", exitCode: o.exitCode ?? 0, resultJson: checked.resultJson };
    return { state: "FAILED", failureKind: "APP_ERROR", exitCode: o.exitCode, error: checked.appError.message, errorCode: checked.appError.code };
  }
  return {
    // PREEMPTED: the worker handed it back because its host is being taken away (a Slurm job
    // cancelled or at its time limit): charged to the preemption budget like a drain.
    state: o.failureKind === "WORKER_LOST" ? "WORKER_LOST" : o.failureKind === "PREEMPTED" ? "PREEMPTED" : o.state === "KILLED" ? "KILLED" : "FAILED",
    failureKind: o.failureKind || (o.state === "KILLED" ? "KILLED" : "APP_EXIT"),
    exitCode: o.exitCode,
    error: o.error,
    ...(o.failureKind === "APP_ERROR" ? { errorCode: o.errorCode } : {}),
  };
}
