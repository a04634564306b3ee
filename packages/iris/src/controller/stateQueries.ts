// The controller state's read queries: jobs, tasks and attempts as rows and as wire statuses, a
// worker's desired set, workers, logs, endpoints and metrics. Nothing here writes the database.
import { createHmac } from "node:crypto";
import { IrisError } from "../errors.ts";
import type { JobStatus } from "../internal/generated/iris/v1/JobStatus.ts";
import type { RunAttempt } from "../internal/generated/iris/v1/RunAttempt.ts";
import type { StopAttempt } from "../internal/generated/iris/v1/StopAttempt.ts";
import type { WorkerInfo } from "../internal/generated/iris/v1/WorkerInfo.ts";
import type { Endpoint as WireEndpoint } from "../internal/generated/iris/v1/Endpoint.ts";
import type { LogEntry as WireLogEntry } from "../internal/generated/iris/v1/LogEntry.ts";
import type { MetricPoint as WireMetricPoint } from "../internal/generated/iris/v1/MetricPoint.ts";
import { endpointToWire, jobStatusToWire, logEntryToWire, metricPointToWire, runAttemptToWire, workerInfoToWire } from "./stateWire.ts";
import { isTerminalJobState, TERMINAL_JOB_STATES } from "../jobSpec.ts";
import type { JobSpec, JobState } from "../jobSpec.ts";
import type { SchedResources } from "./scheduler.ts";
import type { StateCore } from "./stateCore.ts";
import {
  addResources,
  LIVE_ATTEMPT_STATES,
  parseTaskId,
  rootJobOf,
  type AttemptRow,
  type EndpointRow,
  type JobRow,
  type LogRow,
  type MetricRow,
  type TaskRow,
  type WorkerRow,
} from "./stateRows.ts";

/** Page sizes of ListJobs: the default (page_size 0) and the largest (bigger ones are clamped). */
export const JOB_PAGE = { default: 100, max: 1000 } as const;
/** Page sizes of a job's tasks (GetJob, WatchJob, ListTasks). */
export const TASK_PAGE = { default: 1000, max: 10_000 } as const;

/** A page request: size 0 means the default; a negative or fractional one is INVALID_ARGUMENT. */
export interface PageRequest {
  pageSize?: number;
  pageToken?: string;
}

function pageSizeOf(n: number | undefined, limits: { default: number; max: number }, field: string): number {
  const v = n ?? 0;
  if (!Number.isInteger(v) || v < 0) throw new IrisError("INVALID_ARGUMENT", `${field}: expected a non-negative integer, got ${v}`);
  return v === 0 ? limits.default : Math.min(v, limits.max);
}

/** The read queries of the controller state (see controllerState.ts for the whole). */
/** The read queries of the controller state, over the core it shares with the transitions. */
export class StateQueries {
  private readonly core: StateCore;

  constructor(core: StateCore) {
    this.core = core;
  }

  // ---- reads ----------------------------------------------------------------------------------

  job(instanceId: string): JobRow {
    const j = this.core.stmt("SELECT * FROM jobs WHERE instance_id = ?").get(instanceId) as JobRow | undefined;
    if (!j) throw new IrisError("NOT_FOUND", `no job instance ${instanceId}`);
    return j;
  }

  /** The latest submission of `name` (or the given instance), NOT_FOUND if none. */
  findJob(name: string, instanceId = ""): JobRow {
    const j = (
      instanceId
        ? this.core.stmt("SELECT * FROM jobs WHERE instance_id = ? AND name = ?").get(instanceId, name)
        : this.core.stmt("SELECT * FROM jobs WHERE name = ? AND latest = 1").get(name)
    ) as JobRow | undefined;
    if (!j) throw new IrisError("NOT_FOUND", `no job named ${name}${instanceId ? ` with instance ${instanceId}` : ""}`);
    return j;
  }

  /** The code bundles that jobs which have not ended run from. */
  bundlesInUse(): Set<string> {
    const ended = TERMINAL_JOB_STATES.map((st) => `'${st}'`).join(", ");
    const rows = this.core
      .stmt(`SELECT DISTINCT json_extract(spec, '$.bundle') AS bundle FROM jobs WHERE state NOT IN (${ended}) AND json_extract(spec, '$.bundle') IS NOT NULL`)
      .all() as { bundle: string }[];
    return new Set(rows.map((r) => r.bundle));
  }

  specOf(instanceId: string): JobSpec {
    let s = this.core.specCache.get(instanceId);
    if (!s) {
      const j = this.job(instanceId);
      s = JSON.parse(j.spec) as JobSpec;
      // An ended job's spec is read rarely (its stops): not worth a place in the cache.
      if (!isTerminalJobState(j.state)) this.core.specCache.set(instanceId, s, j.spec.length);
    }
    return s;
  }

  tasksOf(instanceId: string): TaskRow[] {
    return this.core.stmt("SELECT * FROM tasks WHERE instance_id = ? ORDER BY idx").all(instanceId) as TaskRow[];
  }

  task(instanceId: string, idx: number): TaskRow {
    const t = this.core.stmt("SELECT * FROM tasks WHERE instance_id = ? AND idx = ?").get(instanceId, idx) as TaskRow | undefined;
    if (!t) throw new IrisError("NOT_FOUND", `no task ${idx} in job instance ${instanceId}`);
    return t;
  }

  attemptByUid(uid: string): AttemptRow | undefined {
    return this.core.stmt("SELECT * FROM attempts WHERE uid = ?").get(uid) as AttemptRow | undefined;
  }

  attemptOf(instanceId: string, idx: number, attempt: number): AttemptRow | undefined {
    return this.core.stmt("SELECT * FROM attempts WHERE instance_id = ? AND idx = ? AND attempt = ?").get(instanceId, idx, attempt) as AttemptRow | undefined;
  }

  /** A job's tasks counted by state. */
  taskCounts(instanceId: string): Record<string, number> {
    const rows = this.core.stmt("SELECT state, COUNT(*) AS n FROM tasks WHERE instance_id = ? GROUP BY state").all(instanceId) as { state: string; n: number }[];
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }

  /**
   * The wire status of one job instance with one page of its tasks (the first
   * {@link TASK_PAGE}.default by default) and every task counted by state.
   */
  jobStatus(instanceId: string, page: PageRequest = {}): JobStatus & { state: JobState } {
    const j = this.job(instanceId);
    const size = pageSizeOf(page.pageSize, TASK_PAGE, "task_page_size");
    const token = page.pageToken ?? "";
    const from = token === "" ? 0 : /^t\d+$/.test(token) ? Number(token.slice(1)) : NaN;
    if (!Number.isSafeInteger(from)) throw new IrisError("INVALID_ARGUMENT", `task_page_token: "${token}" is not a token this controller gave`);
    const tasks = this.core.stmt("SELECT * FROM tasks WHERE instance_id = ? AND idx >= ? ORDER BY idx LIMIT ?").all(instanceId, from, size + 1) as TaskRow[];
    const next = tasks.length > size ? `t${tasks.pop()!.idx}` : "";
    const last = tasks.at(-1)?.idx ?? -1;
    const attempts = this.core.stmt("SELECT * FROM attempts WHERE instance_id = ? AND idx >= ? AND idx <= ? ORDER BY idx, attempt").all(instanceId, from, last) as AttemptRow[];
    return jobStatusToWire(j, tasks, attempts, { taskCounts: this.taskCounts(instanceId), nextTaskPageToken: next });
  }

  /** The wire status of one job instance as a summary: tasks counted by state, none listed. */
  jobSummary(instanceId: string): JobStatus & { state: JobState } {
    return jobStatusToWire(this.job(instanceId), [], [], { taskCounts: this.taskCounts(instanceId), nextTaskPageToken: "" });
  }

  /**
   * One page of the latest submissions of every job named `prefix` or below it, oldest first
   * (at most {@link JOB_PAGE}.max), and the token of the next page ("" after the last).
   */
  listJobs(prefix: string, page: PageRequest = {}): { instanceIds: string[]; nextPageToken: string } {
    const p = prefix.replace(/\/+$/, "");
    const size = pageSizeOf(page.pageSize, JOB_PAGE, "page_size");
    const token = page.pageToken ?? "";
    const m = token === "" ? ["", "-1", ""] : /^j(\d+):(.*)$/.exec(token);
    if (!m) throw new IrisError("INVALID_ARGUMENT", `page_token: "${token}" is not a token this controller gave`);
    const after = Number(m[1]);
    const afterId = m[2]!;
    const rows = this.core
      .stmt(
        `SELECT instance_id, submitted_at_ms FROM jobs WHERE latest = 1 AND (? = '' OR name = ? OR substr(name, 1, ?) = ?)
       AND (submitted_at_ms > ? OR (submitted_at_ms = ? AND instance_id > ?)) ORDER BY submitted_at_ms, instance_id LIMIT ?`,
      )
      .all(p, p, p.length + 1, `${p}/`, after, after, afterId, size + 1) as { instance_id: string; submitted_at_ms: number }[];
    let nextPageToken = "";
    if (rows.length > size) {
      rows.pop();
      const lastRow = rows.at(-1)!;
      nextPageToken = `j${lastRow.submitted_at_ms}:${lastRow.instance_id}`;
    }
    return { instanceIds: rows.map((r) => r.instance_id), nextPageToken };
  }

  /** Whether a worker is registered and alive. */
  isWorkerAlive(workerId: string): boolean {
    const w = this.core.stmt("SELECT state FROM workers WHERE id = ?").get(workerId) as { state: string } | undefined;
    return w?.state === "ALIVE" || w?.state === "DRAINING";
  }

  /** Whether worker `workerId` has a live attempt of a job that runs from bundle `bundleId`. */
  workerRunsBundle(workerId: string, bundleId: string): boolean {
    const rows = this.core.stmt("SELECT DISTINCT instance_id FROM attempts WHERE worker_id = ? AND state IN ('ASSIGNED','BUILDING','RUNNING')").all(workerId) as {
      instance_id: string;
    }[];
    return rows.some((r) => this.specOf(r.instance_id).bundle === bundleId);
  }

  /** The complete desired set of a worker: live attempts with their specs, attempts to stop. */
  desiredSet(workerId: string, extraStops: StopAttempt[] = []): { run: RunAttempt[]; stop: StopAttempt[] } {
    const rows = this.core.db.prepare("SELECT * FROM attempts WHERE worker_id = ? AND (state IN ('ASSIGNED','BUILDING','RUNNING') OR stopping = 1)").all(workerId) as AttemptRow[];
    const run: RunAttempt[] = [];
    const stop: StopAttempt[] = [...extraStops];
    for (const a of rows) {
      if (a.stopping) {
        stop.push({ attemptUid: a.uid, reason: a.stop_reason || "KILLED" });
        continue;
      }
      const spec = this.specOf(a.instance_id);
      const wire = runAttemptToWire(this.job(a.instance_id), spec, a);
      // A gang's members authenticate each other with a secret only this round of the gang gets:
      // the same for every member of one attempt round, new for each retry (see taskEnv.ts).
      if (spec.gang && spec.replicas > 1)
        wire.env = { ...wire.env, IRIS_GANG_SECRET: createHmac("sha256", this.core.gangKey).update(`${a.instance_id}:${a.attempt}`).digest("hex") };
      run.push(wire);
    }
    return { run, stop };
  }

  /** Every registered worker with its load. */
  listWorkers(): WorkerInfo[] {
    const rows = this.core.stmt("SELECT * FROM workers ORDER BY registered_at_ms").all() as WorkerRow[];
    return rows.map((w) => {
      const held = this.core.db.prepare("SELECT resources, state FROM attempts WHERE worker_id = ? AND (state IN ('ASSIGNED','BUILDING','RUNNING') OR stopping = 1)").all(w.id) as {
        resources: string;
        state: string;
      }[];
      let usedR: SchedResources = { cpuMillis: 0, memoryBytes: 0, devices: {} };
      for (const h of held) usedR = addResources(usedR, JSON.parse(h.resources) as SchedResources);
      return workerInfoToWire(w, usedR, held.filter((h) => LIVE_ATTEMPT_STATES.includes(h.state)).length);
    });
  }

  /**
   * Log entries of a job instance after `afterSeq`: at most `limit` lines and about `maxBytes`
   * of text (at least one line), so that one StreamLogs message stays far below gRPC's limit.
   */
  readLogs(instanceId: string, afterSeq: number, taskIndex: number | undefined, limit = 1000, maxBytes = 1024 * 1024): WireLogEntry[] {
    const j = this.job(instanceId);
    const rows =
      taskIndex === undefined
        ? this.core.stmt("SELECT * FROM logs WHERE instance_id = ? AND seq > ? ORDER BY seq LIMIT ?").iterate(instanceId, afterSeq, limit)
        : this.core.stmt("SELECT * FROM logs WHERE instance_id = ? AND seq > ? AND idx = ? ORDER BY seq LIMIT ?").iterate(instanceId, afterSeq, taskIndex, limit);
    const out: WireLogEntry[] = [];
    let bytes = 0;
    for (const r of rows as IterableIterator<LogRow>) {
      out.push(logEntryToWire(j.name, r));
      bytes += r.line.length * 3;
      if (bytes >= maxBytes) break;
    }
    return out;
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
    const pending = this.core.db
      .prepare(
        "SELECT COUNT(*) AS n FROM attempts WHERE instance_id = ? AND (log_lines_received < log_lines_expected OR state IN ('ASSIGNED','BUILDING','RUNNING') OR stopping = 1)",
      )
      .get(instanceId) as { n: number };
    return pending.n === 0;
  }

  /** The job name, attempt id and liveness of an attempt (what a task token stands for). */
  attemptForToken(uid: string): { jobName: string; attemptId: string; live: boolean } | undefined {
    const a = this.attemptByUid(uid);
    if (!a) return undefined;
    const j = this.job(a.instance_id);
    return { jobName: j.name, attemptId: `${j.name}/${a.idx}:${a.attempt}`, live: LIVE_ATTEMPT_STATES.includes(a.state) };
  }

  // ---- endpoints ------------------------------------------------------------------------------

  /** The full name of an endpoint: as given when it starts with "/", else under the root job. */
  endpointName(name: string, scopeJob: string): string {
    if (name.startsWith("/")) return name;
    if (!scopeJob) throw new IrisError("INVALID_ARGUMENT", `endpoint name "${name}" is relative but no job scopes it (use a name starting with "/")`);
    return `${rootJobOf(scopeJob)}/${name}`;
  }

  /** Who owns an endpoint row (rows from before ownership: the leasing job, else the root job). */
  endpointOwner(r: EndpointRow): string {
    if (r.owner_job) return r.owner_job;
    return r.instance_id ? this.job(r.instance_id).name : rootJobOf(r.name);
  }

  /** The owner job of the newest endpoint of a full name; NOT_FOUND if none. */
  endpointOwnerOf(fullName: string): string {
    const r = this.core
      .stmt("SELECT * FROM endpoints WHERE name = ? AND (expires_at_ms IS NULL OR expires_at_ms > ?) ORDER BY created_at_ms DESC LIMIT 1")
      .get(fullName, this.core.clock.now()) as EndpointRow | undefined;
    if (!r) throw new IrisError("NOT_FOUND", `no endpoint named ${fullName}`);
    return this.endpointOwner(r);
  }

  endpointRows(where: string, ...args: unknown[]): WireEndpoint[] {
    const rows = this.core
      .stmt(`SELECT * FROM endpoints WHERE (${where}) AND (expires_at_ms IS NULL OR expires_at_ms > ?) ORDER BY created_at_ms DESC`)
      .all(...args, this.core.clock.now()) as EndpointRow[];
    return rows.map((r) => endpointToWire(r, r.instance_id ? `${this.job(r.instance_id).name}/${r.idx}:${r.attempt}` : ""));
  }

  /** The newest endpoint of that name; NOT_FOUND if none. */
  resolveEndpoint(name: string, scopeJob: string): WireEndpoint {
    const full = this.endpointName(name, scopeJob);
    const e = this.endpointRows("name = ?", full)[0];
    if (!e) throw new IrisError("NOT_FOUND", `no endpoint named ${full}`);
    return e;
  }

  /** Every live endpoint of that name, newest first (replicas of one service share a name). */
  resolveEndpoints(name: string, scopeJob: string): WireEndpoint[] {
    return this.endpointRows("name = ?", this.endpointName(name, scopeJob));
  }

  /** Endpoints whose full name starts with the (scoped) prefix. */
  listEndpoints(prefix: string, scopeJob: string): WireEndpoint[] {
    const full = prefix === "" ? (scopeJob ? `${rootJobOf(scopeJob)}/` : "") : this.endpointName(prefix, scopeJob);
    return this.endpointRows("substr(name, 1, ?) = ?", full.length, full).sort((a, b) => String(a.name).localeCompare(String(b.name)));
  }

  // ---- status reports and metrics -------------------------------------------------------------

  attemptForReport(taskId: string, attempt: number): AttemptRow {
    const { jobName, index } = parseTaskId(taskId);
    const j = this.findJob(jobName);
    const t = this.task(j.instance_id, index);
    const n = attempt || t.attempt;
    const a = this.attemptOf(j.instance_id, index, n);
    if (!a) throw new IrisError("NOT_FOUND", `task ${taskId} has no attempt ${n}`);
    return a;
  }

  /** The status text and metrics series of an attempt (0 = the task's current one). */
  taskMetrics(taskId: string, attempt: number): { statusText: string; points: WireMetricPoint[]; attempt: number } {
    const a = this.attemptForReport(taskId, attempt);
    const rows = this.core.stmt("SELECT step, time_ms, metrics FROM metrics WHERE attempt_uid = ? ORDER BY id").all(a.uid) as MetricRow[];
    return { statusText: a.status_text, attempt: a.attempt, points: rows.map(metricPointToWire) };
  }
}
