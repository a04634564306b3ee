// Conversions between the public/normalized types and the generated wire messages.
import type { JobSpec as WireJobSpec, JobSpec__Output as WireJobSpecOut } from "./generated/iris/v1/JobSpec.ts";
import type { JobStatus__Output as WireJobStatus } from "./generated/iris/v1/JobStatus.ts";
import type { TaskStatus__Output as WireTaskStatus } from "./generated/iris/v1/TaskStatus.ts";
import type { Endpoint__Output as WireEndpoint } from "./generated/iris/v1/Endpoint.ts";
import { IrisError } from "../errors.ts";
import type { Endpoint, JobSpecInput, JobState, JobStatus, TaskStatus } from "../jobSpec.ts";

/** A validated spec (normalized or input-shaped) as a wire JobSpec. */
export function specToWire(spec: JobSpecInput & { name: string }): WireJobSpec {
  const ep = spec.entrypoint;
  return {
    name: spec.name,
    entrypoint:
      "command" in ep
        ? { command: { argv: ep.command, cwd: ep.cwd ?? "" } }
        : { module: { module: ep.module, exportName: ep.export, argsJson: ep.args === undefined ? "" : JSON.stringify(ep.args) } },
    replicas: spec.replicas ?? 0,
    gang: spec.gang ?? false,
    resources: spec.resources
      ? { cpuMillis: spec.resources.cpuMillis ?? -1, memoryBytes: spec.resources.memoryBytes ?? -1, devices: spec.resources.devices ?? [] }
      : null,
    constraints: (spec.constraints ?? []).map((c) => ({ key: c.key, op: c.op, value: c.value ?? "", values: c.values ?? [] })),
    env: spec.env ?? {},
    ports: spec.ports ?? [],
    timeoutMs: spec.timeoutMs ?? 0,
    ...(spec.maxRetriesFailure !== undefined ? { maxRetriesFailure: spec.maxRetriesFailure } : {}),
    ...(spec.maxRetriesPreemption !== undefined ? { maxRetriesPreemption: spec.maxRetriesPreemption } : {}),
    ...(spec.maxTaskFailures !== undefined ? { maxTaskFailures: spec.maxTaskFailures } : {}),
    priority: spec.priority ?? 0,
  };
}

/**
 * A wire JobSpec back in the input shape, for validation at the controller. Zero values of
 * proto3 scalars mean "unset" (replicas 0 → default); -1 marks an unset resource field.
 */
export function wireToSpecInput(w: WireJobSpecOut): unknown {
  let entrypoint: unknown;
  if (w.entrypoint?.command) entrypoint = { command: w.entrypoint.command.argv, ...(w.entrypoint.command.cwd ? { cwd: w.entrypoint.command.cwd } : {}) };
  else if (w.entrypoint?.module) {
    const m = w.entrypoint.module;
    let args: unknown;
    try {
      args = m.argsJson === "" ? undefined : JSON.parse(m.argsJson);
    } catch (e) {
      throw new IrisError("INVALID_ARGUMENT", `invalid job spec: entrypoint.args: expected JSON text (${(e as Error).message})`);
    }
    entrypoint = { module: m.module, export: m.exportName, ...(args !== undefined ? { args } : {}) };
  }
  const r = w.resources;
  return {
    entrypoint,
    ...(w.replicas !== 0 ? { replicas: w.replicas } : {}),
    gang: w.gang,
    ...(r
      ? {
          resources: {
            ...(r.cpuMillis !== -1 ? { cpuMillis: r.cpuMillis } : {}),
            ...(r.memoryBytes !== -1 ? { memoryBytes: r.memoryBytes } : {}),
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
  };
}

function opt<T>(v: T, empty: T): T | undefined {
  return v === empty ? undefined : v;
}

/** A wire TaskStatus as the public TaskStatus (empty strings dropped). */
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
      if (a.resultJson) r.result = JSON.parse(a.resultJson) as unknown;
      if (a.startedAtMs) r.startedAtMs = a.startedAtMs;
      if (a.finishedAtMs) r.finishedAtMs = a.finishedAtMs;
      return r;
    }),
  };
  if (t.exitCode !== undefined) out.exitCode = t.exitCode;
  const fk = opt(t.failureKind, "");
  if (fk) out.failureKind = fk;
  const pr = opt(t.pendingReason, "");
  if (pr) out.pendingReason = pr;
  const st = opt(t.statusText, "");
  if (st) out.statusText = st;
  const er = opt(t.error, "");
  if (er) out.error = er;
  if (t.errorCode) out.errorCode = t.errorCode;
  if (t.resultJson) out.result = JSON.parse(t.resultJson) as unknown;
  const w = opt(t.workerId, "");
  if (w) out.workerId = w;
  return out;
}

/** A wire JobStatus as the public JobStatus. */
export function jobStatusFromWire(j: WireJobStatus): JobStatus {
  const out: JobStatus = {
    name: j.name,
    instanceId: j.instanceId,
    state: j.state as JobState,
    tasks: j.tasks.map(taskStatusFromWire),
    submittedAtMs: j.submittedAtMs,
  };
  if (j.error) out.error = j.error;
  if (j.finishedAtMs) out.finishedAtMs = j.finishedAtMs;
  return out;
}

/** A wire Endpoint as the public Endpoint. */
export function endpointFromWire(e: WireEndpoint): Endpoint {
  return { name: e.name, address: e.address, metadata: { ...e.metadata } };
}
