// Where iris's public objects become wire messages and back: job specs and entrypoints
// (client → controller → worker), job/task statuses, endpoints, workers and logs as the client
// reads them. The controller's rows → wire live beside the rows (../controller/stateWire.ts), the
// worker's observations beside its attempts (../worker/workerTypes.ts). None validates (the
// controller validates a decoded spec once, with zod: normalizeJobSpec).
import { IrisError } from "../errors.ts";
import { LIMITS, jsonDepth } from "../jobSpec.ts";
import type { Endpoint, Entrypoint, JobSpecInput, JobState, JobStatus, LogEntry, MetricPoint, ResourceAmounts, TaskStatus, WorkerSummary } from "../jobSpec.ts";
import type { LogEntry__Output as WireLogEntryOut } from "./generated/iris/v1/LogEntry.ts";
import type { LogLine as WireLogLine } from "./generated/iris/v1/LogLine.ts";
import type { MetricPoint__Output as WireMetricPointOut } from "./generated/iris/v1/MetricPoint.ts";
import type { Resources__Output as WireResourcesOut } from "./generated/iris/v1/Resources.ts";
import type { WorkerInfo__Output as WireWorkerInfoOut } from "./generated/iris/v1/WorkerInfo.ts";
import type { Endpoint__Output as WireEndpoint } from "./generated/iris/v1/Endpoint.ts";
import type { Entrypoint as WireEntrypoint, Entrypoint__Output as WireEntrypointOut } from "./generated/iris/v1/Entrypoint.ts";
import type { JobSpec as WireJobSpec, JobSpec__Output as WireJobSpecOut } from "./generated/iris/v1/JobSpec.ts";
import type { JobStatus__Output as WireJobStatus } from "./generated/iris/v1/JobStatus.ts";
import type { Resources as WireResources } from "./generated/iris/v1/Resources.ts";
import type { TaskStatus__Output as WireTaskStatus } from "./generated/iris/v1/TaskStatus.ts";

// ---- entrypoints -------------------------------------------------------------------------------

/**
 * An entrypoint as its wire message. Total on anything the caller hands in: a value of the wrong
 * shape travels as an absent entrypoint (or its wrong-typed fields as they are), for the
 * controller's validation to name.
 */
export function entrypointToWire(ep: Entrypoint | undefined): WireEntrypoint | null {
  if (typeof ep !== "object" || ep === null) return null;
  if ("command" in ep) return { command: { argv: ep.command, cwd: ep.cwd ?? "" } };
  if ("module" in ep) {
    let argsJson = "";
    if (ep.args !== undefined) {
      try {
        argsJson = JSON.stringify(ep.args) ?? "";
      } catch (e) {
        throw new IrisError("INVALID_ARGUMENT", `invalid job spec: entrypoint.args: expected a JSON value (${(e as Error).message})`);
      }
    }
    return { module: { module: ep.module, exportName: ep.export, argsJson } };
  }
  return null;
}

/**
 * A wire entrypoint back as the {@link Entrypoint} the client sent (JSON args parsed). Absent →
 * undefined; args that are not JSON text → INVALID_ARGUMENT.
 */
export function entrypointFromWire(w: WireEntrypointOut | null | undefined): Entrypoint | undefined {
  if (w?.command) return { command: w.command.argv, ...(w.command.cwd ? { cwd: w.command.cwd } : {}) };
  if (w?.module) {
    const m = w.module;
    if (m.argsJson.length > LIMITS.argsBytes) {
      throw new IrisError("INVALID_ARGUMENT", `invalid job spec: entrypoint.args: expected at most ${LIMITS.argsBytes} bytes of JSON, got ${m.argsJson.length}`);
    }
    if (jsonDepth(m.argsJson) > LIMITS.argsDepth) {
      throw new IrisError("INVALID_ARGUMENT", `invalid job spec: entrypoint.args: expected a value nested at most ${LIMITS.argsDepth} deep`);
    }
    let args: unknown;
    try {
      args = m.argsJson === "" ? undefined : (JSON.parse(m.argsJson) as unknown);
    } catch (e) {
      throw new IrisError("INVALID_ARGUMENT", `invalid job spec: entrypoint.args: expected JSON text (${(e as Error).message})`);
    }
    return { module: m.module, export: m.exportName, ...(args !== undefined ? { args } : {}) };
  }
  return undefined;
}

// ---- job specs ---------------------------------------------------------------------------------

/** A spec as the client wrote it, under its full name, as a wire JobSpec (absent fields stay absent). */
export function jobSpecToWire(spec: JobSpecInput, name: string): WireJobSpec {
  const r = spec.resources;
  return {
    name,
    entrypoint: entrypointToWire(spec.entrypoint),
    ...(spec.replicas !== undefined ? { replicas: spec.replicas } : {}),
    gang: spec.gang ?? false,
    resources: r ? resourcesToWire(r) : null,
    constraints: (spec.constraints ?? []).map((c) => ({ key: c.key, op: c.op, value: c.value ?? "", values: c.values ?? [] })),
    env: spec.env ?? {},
    ports: spec.ports ?? [],
    timeoutMs: spec.timeoutMs ?? 0,
    ...(spec.maxRetriesFailure !== undefined ? { maxRetriesFailure: spec.maxRetriesFailure } : {}),
    ...(spec.maxRetriesPreemption !== undefined ? { maxRetriesPreemption: spec.maxRetriesPreemption } : {}),
    ...(spec.maxTaskFailures !== undefined ? { maxTaskFailures: spec.maxTaskFailures } : {}),
    priority: spec.priority ?? 0,
    ...(spec.schedulingTimeoutMs !== undefined ? { schedulingTimeoutMs: spec.schedulingTimeoutMs } : {}),
    bundleId: spec.bundle ?? "",
  };
}

export function resourcesToWire(r: { cpuMillis?: number; memoryBytes?: number; devices?: { kind: string; count: number }[] }): WireResources {
  return {
    ...(r.cpuMillis !== undefined ? { cpuMillis: r.cpuMillis } : {}),
    ...(r.memoryBytes !== undefined ? { memoryBytes: r.memoryBytes } : {}),
    devices: r.devices ?? [],
  };
}

/**
 * A wire JobSpec back in the input shape, unvalidated: what the controller hands to
 * `normalizeJobSpec` (zod). Proto3 zero values of non-optional scalars are the defaults anyway.
 */
export function jobSpecFromWire(w: WireJobSpecOut): unknown {
  const r = w.resources;
  return {
    entrypoint: entrypointFromWire(w.entrypoint),
    ...(w.replicas !== undefined ? { replicas: w.replicas } : {}),
    gang: w.gang,
    ...(r
      ? {
          resources: {
            ...(r.cpuMillis !== undefined ? { cpuMillis: r.cpuMillis } : {}),
            ...(r.memoryBytes !== undefined ? { memoryBytes: r.memoryBytes } : {}),
            devices: r.devices.map((d) => ({ kind: d.kind, count: d.count })),
          },
        }
      : {}),
    constraints: w.constraints.map((c) => ({
      key: c.key,
      op: c.op,
      ...(c.value !== "" ? { value: c.value } : {}),
      ...(c.values.length ? { values: c.values } : {}),
    })),
    env: w.env,
    ports: w.ports,
    timeoutMs: w.timeoutMs,
    ...(w.maxRetriesFailure !== undefined ? { maxRetriesFailure: w.maxRetriesFailure } : {}),
    ...(w.maxRetriesPreemption !== undefined ? { maxRetriesPreemption: w.maxRetriesPreemption } : {}),
    ...(w.maxTaskFailures !== undefined ? { maxTaskFailures: w.maxTaskFailures } : {}),
    priority: w.priority,
    ...(w.schedulingTimeoutMs !== undefined ? { schedulingTimeoutMs: Number(w.schedulingTimeoutMs) } : {}),
    ...(w.bundleId !== "" ? { bundle: w.bundleId } : {}),
  };
}

// ---- statuses ----------------------------------------------------------------------------------

function parseResult(json: string, what: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch (e) {
    throw new IrisError("DATA_LOSS", `${what}: the recorded result is not JSON (${(e as Error).message})`);
  }
}

/** A wire TaskStatus as the public TaskStatus (empty strings dropped, results parsed). */
export function taskStatusFromWire(t: WireTaskStatus): TaskStatus {
  const out: TaskStatus = {
    taskId: t.taskId,
    index: t.index,
    state: t.state,
    attempt: t.attempt,
    attempts: t.attempts.map((a) => {
      const r: TaskStatus["attempts"][number] = { attempt: a.attempt, workerId: a.workerId, state: a.state };
      if (a.exitCode !== undefined) r.exitCode = a.exitCode;
      if (a.failureKind) r.failureKind = a.failureKind;
      if (a.error) r.error = a.error;
      if (a.errorCode) r.errorCode = a.errorCode;
      if (a.resultJson) r.result = parseResult(a.resultJson, `${t.taskId}:${a.attempt}`);
      if (a.startedAtMs) r.startedAtMs = a.startedAtMs;
      if (a.finishedAtMs) r.finishedAtMs = a.finishedAtMs;
      return r;
    }),
  };
  if (t.exitCode !== undefined) out.exitCode = t.exitCode;
  if (t.failureKind) out.failureKind = t.failureKind;
  if (t.pendingReason) out.pendingReason = t.pendingReason;
  if (t.statusText) out.statusText = t.statusText;
  if (t.error) out.error = t.error;
  if (t.errorCode) out.errorCode = t.errorCode;
  if (t.resultJson) out.result = parseResult(t.resultJson, t.taskId);
  if (t.workerId) out.workerId = t.workerId;
  return out;
}

/** A wire JobStatus as the public JobStatus. */
export function jobStatusFromWire(j: WireJobStatus): JobStatus {
  const out: JobStatus = {
    name: j.name,
    instanceId: j.instanceId,
    state: j.state as JobState,
    tasks: j.tasks.map(taskStatusFromWire),
    taskCounts: { ...j.taskCounts },
    numTasks: j.numTasks,
    submittedAtMs: j.submittedAtMs,
  };
  if (j.error) out.error = j.error;
  if (j.finishedAtMs) out.finishedAtMs = j.finishedAtMs;
  return out;
}

// ---- endpoints ---------------------------------------------------------------------------------

/** A wire Endpoint as the public Endpoint. */
export function endpointFromWire(e: WireEndpoint): Endpoint {
  return { name: e.name, address: e.address, metadata: { ...e.metadata } };
}

/** A worker's announced capacity (RegisterWorker) as the scheduler's resources; absent → 0. */
export function capacityFromWire(cap: WireResourcesOut | null | undefined): ResourceAmounts {
  const devices: Record<string, number> = {};
  for (const d of cap?.devices ?? []) devices[d.kind] = (devices[d.kind] ?? 0) + d.count;
  return { cpuMillis: Number(cap?.cpuMillis ?? 0), memoryBytes: Number(cap?.memoryBytes ?? 0), devices };
}

// ---- the client's side of logs, metrics and workers ---------------------------------------------

/** A wire LogEntry as the public LogEntry. */
export function logEntryFromWire(e: WireLogEntryOut): LogEntry {
  return { taskIndex: e.taskIndex, attempt: e.attempt, stream: e.stream === "stderr" ? "stderr" : "stdout", line: e.line, timeMs: e.timeMs };
}

/** A wire MetricPoint as the public MetricPoint. */
export function metricPointFromWire(p: WireMetricPointOut): MetricPoint {
  return { step: p.step, timeMs: p.timeMs, metrics: { ...p.metrics } };
}

/** A wire WorkerInfo as the public WorkerSummary. */
export function workerSummaryFromWire(w: WireWorkerInfoOut): WorkerSummary {
  return {
    workerId: w.workerId,
    host: w.host,
    state: w.state,
    attributes: { ...w.attributes },
    runningAttempts: w.runningAttempts,
    lastSeenMs: w.lastSeenMs,
    capacity: capacityFromWire(w.capacity),
    used: capacityFromWire(w.used),
  };
}

/** One line of an attempt's output as the wire LogLine a worker pushes. */
export function logLineToWire(attemptUid: string, line: { stream: string; line: string; timeMs: number }): WireLogLine {
  return { attemptUid, stream: line.stream, line: line.line, timeMs: line.timeMs };
}
