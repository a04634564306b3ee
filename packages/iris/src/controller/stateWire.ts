// Controller rows → wire messages: the controller's side of statuses, desired sets, logs, endpoints,
// metrics and workers, beside the rows they read (stateRows.ts). The client's and the worker's
// sides stay in ../internal/codec.ts.
import type { JobSpec, JobState } from "../jobSpec.ts";
import { entrypointToWire, resourcesToWire } from "../internal/codec.ts";
import type { Endpoint as WireEndpointIn } from "../internal/generated/iris/v1/Endpoint.ts";
import type { JobStatus as WireJobStatusIn } from "../internal/generated/iris/v1/JobStatus.ts";
import type { LogEntry as WireLogEntry } from "../internal/generated/iris/v1/LogEntry.ts";
import type { MetricPoint as WireMetricPoint } from "../internal/generated/iris/v1/MetricPoint.ts";
import type { Resources as WireResources } from "../internal/generated/iris/v1/Resources.ts";
import type { RunAttempt as WireRunAttempt } from "../internal/generated/iris/v1/RunAttempt.ts";
import type { TaskStatus as WireTaskStatusIn } from "../internal/generated/iris/v1/TaskStatus.ts";
import type { WorkerInfo as WireWorkerInfo } from "../internal/generated/iris/v1/WorkerInfo.ts";
import type { SchedResources } from "./scheduler.ts";
import type { AttemptRow, EndpointRow, JobRow, LogRow, MetricRow, TaskRow, WorkerRow } from "./stateRows.ts";

/** A job instance's rows as its wire JobStatus (results only for SUCCEEDED tasks/attempts). */
export function jobStatusToWire(
  j: JobRow,
  taskRows: readonly TaskRow[],
  attempts: readonly AttemptRow[],
  page: { taskCounts: Record<string, number>; nextTaskPageToken: string } = { taskCounts: countStates(taskRows), nextTaskPageToken: "" },
): WireJobStatusIn & { state: JobState } {
  const byTask = new Map<number, AttemptRow[]>();
  for (const a of attempts) {
    const l = byTask.get(a.idx) ?? [];
    l.push(a);
    byTask.set(a.idx, l);
  }
  const tasks: WireTaskStatusIn[] = taskRows.map((t) => {
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
    taskCounts: page.taskCounts,
    numTasks: Object.values(page.taskCounts).reduce((a, b) => a + b, 0),
    nextTaskPageToken: page.nextTaskPageToken,
    spec: undefined,
  } as WireJobStatusIn & { state: JobState };
}

function countStates(rows: readonly { state: string }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows) out[r.state] = (out[r.state] ?? 0) + 1;
  return out;
}

/** The RunAttempt of one attempt: everything its worker needs to start it (the controller adds `taskToken`). */
export function runAttemptToWire(j: JobRow, spec: JobSpec, a: AttemptRow): WireRunAttempt {
  return {
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
    resources: resourcesToWire(spec.resources),
    timeoutMs: spec.timeoutMs,
    bundleId: spec.bundle ?? "",
  };
}

function schedResourcesToWire(r: SchedResources): WireResources {
  return { cpuMillis: r.cpuMillis, memoryBytes: r.memoryBytes, devices: Object.entries(r.devices).map(([kind, count]) => ({ kind, count })) };
}

/** A worker row and its load as the wire WorkerInfo. */
export function workerInfoToWire(w: WorkerRow, used: SchedResources, runningAttempts: number): WireWorkerInfo {
  return {
    workerId: w.id,
    host: w.host,
    attributes: JSON.parse(w.attributes) as Record<string, string>,
    capacity: schedResourcesToWire(JSON.parse(w.capacity) as SchedResources),
    used: schedResourcesToWire(used),
    state: w.state,
    lastSeenMs: w.last_seen_ms,
    runningAttempts,
  };
}

/** A stored log line of job `jobName` as its wire LogEntry. */
export function logEntryToWire(jobName: string, r: LogRow): WireLogEntry {
  return { seq: r.seq, taskIndex: r.idx, attempt: r.attempt, stream: r.stream, line: r.line, timeMs: r.time_ms, taskId: `${jobName}/${r.idx}` };
}

/** A stored endpoint as its wire Endpoint (`attemptId` "" when not leased). */
export function endpointToWire(r: EndpointRow, attemptId: string): WireEndpointIn {
  return { endpointId: r.id, name: r.name, address: r.address, metadata: JSON.parse(r.metadata) as Record<string, string>, attemptId };
}

/** A just-registered endpoint (id and full name assigned) as its wire Endpoint. */
export function registeredEndpointToWire(endpointId: string, fullName: string, req: { address: string; metadata: Record<string, string>; attemptId: string }): WireEndpointIn {
  return { endpointId, name: fullName, address: req.address, metadata: req.metadata, attemptId: req.attemptId };
}

/** A stored metrics point as its wire MetricPoint. */
export function metricPointToWire(r: MetricRow): WireMetricPoint {
  return { step: r.step, timeMs: r.time_ms, metrics: JSON.parse(r.metrics) as Record<string, number> };
}
