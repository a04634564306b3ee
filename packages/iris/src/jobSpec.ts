// The job spec as users write it (JobSpecInput), its validation (zod, once, at the controller:
// normalizeJobSpec), and the public status types. Inside the package everything passes the
// normalized JobSpec.
import { z } from "zod";
import { IrisError } from "./errors.ts";
import { formatZodIssues } from "./toolkit/zodIssues.ts";

const PORT_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const nonNegInt = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/**
 * The documented bounds of what the controller accepts (see the iris README's security section).
 * Over a bound: INVALID_ARGUMENT naming the field, or RESOURCE_EXHAUSTED for whole-message sizes
 * and quotas.
 */
export const LIMITS = {
  /** Bytes of a job spec's JSON (RESOURCE_EXHAUSTED above). */
  specBytes: 1024 * 1024,
  /** Tasks of one job. */
  replicas: 100_000,
  /** Named ports of one job. */
  portsPerJob: 64,
  /** Variables of a job's env, and their bytes (names + values). */
  envEntries: 1000,
  envBytes: 256 * 1024,
  /** Entries of a command's argv, and their bytes. */
  argvEntries: 10_000,
  argvBytes: 256 * 1024,
  /** Bytes of a module entrypoint's args JSON, and its nesting depth (arrays and objects). */
  argsBytes: 512 * 1024,
  argsDepth: 64,
  /** Characters of a full job or endpoint name, and of one segment. */
  nameChars: 512,
  segmentChars: 128,
  /** Constraints of a job, and values of an IN constraint; device kinds per job. */
  constraints: 100,
  constraintValues: 1000,
  devices: 16,
  /** Characters of other strings in a spec (constraint keys/values, module paths, cwd, …). */
  stringChars: 4096,
  /** Live endpoints one owner (a job, or a user outside any job) may hold (RESOURCE_EXHAUSTED). */
  endpointsPerOwner: 1000,
  /** Endpoint metadata entries and bytes; characters of an endpoint address. */
  metadataEntries: 64,
  metadataBytes: 16 * 1024,
  addressChars: 1024,
  /** A status text's characters and a status report's metrics. */
  statusTextChars: 64 * 1024,
  metricsPerReport: 1000,
  /** Bytes of an HTTP API request body (RESOURCE_EXHAUSTED / 413 above; read only after auth). */
  httpBodyBytes: 2 * 1024 * 1024,
  /** Bytes of one gRPC message the controller receives. */
  rpcMessageBytes: 16 * 1024 * 1024,
} as const;

const boundedString = z.string().max(LIMITS.stringChars);

function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

/**
 * The nesting depth of JSON text (arrays and objects), counted without parsing it, so that a
 * value nested millions deep is refused before anything recurses over it.
 */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max) max = depth;
    } else if (c === 93 || c === 125) depth--;
  }
  return max;
}

/** The depth of a JS value (arrays and objects), giving up once past `limit`. */
function valueDepthOver(v: unknown, limit: number, depth = 0): boolean {
  if (typeof v !== "object" || v === null) return false;
  if (depth + 1 > limit) return true;
  for (const x of Array.isArray(v) ? v : Object.values(v)) if (valueDepthOver(x, limit, depth + 1)) return true;
  return false;
}

/** The id of a code bundle: `sha256:` and the hex SHA-256 of its bytes. */
export const BUNDLE_ID = /^sha256:[0-9a-f]{64}$/;

/**
 * The message of LaunchJob's FAILED_PRECONDITION for a spec whose bundle the controller does not
 * hold (never uploaded, or removed as unused since); the client knows it by the id it names.
 */
export function bundleMissingMessage(id: string): string {
  return `bundle ${id} is not stored on this controller (never uploaded, or removed as unused since): upload it again`;
}

/** Whether `e` is LaunchJob refusing a spec because the controller does not hold bundle `id`. */
export function isBundleMissing(e: unknown, id: string): boolean {
  return e instanceof IrisError && e.code === "FAILED_PRECONDITION" && e.message.includes(bundleMissingMessage(id));
}

/** A relative path that stays inside its root (no `..` segment, no leading `/`). */
export function isBundlePath(p: string): boolean {
  return p !== "" && !p.startsWith("/") && !p.startsWith("file:") && !p.split(/[\\/]/).includes("..");
}

const constraintSchema = z
  .strictObject({
    key: boundedString.min(1),
    op: z.enum(["EQ", "NE", "EXISTS", "IN", "GT", "LT"]),
    value: boundedString.optional(),
    values: z.array(boundedString).max(LIMITS.constraintValues).optional(),
  })
  .superRefine((c, ctx) => {
    if ((c.op === "EQ" || c.op === "NE" || c.op === "GT" || c.op === "LT") && c.value === undefined) {
      ctx.addIssue({ code: "custom", path: ["value"], message: `expected a value for op ${c.op}` });
    }
    if ((c.op === "GT" || c.op === "LT") && c.value !== undefined && !Number.isFinite(Number(c.value))) {
      ctx.addIssue({ code: "custom", path: ["value"], message: `expected a number for op ${c.op}, got "${c.value}"` });
    }
    if (c.op === "IN" && (!c.values || c.values.length === 0)) {
      ctx.addIssue({ code: "custom", path: ["values"], message: "expected at least one value for op IN" });
    }
  });

const entrypointSchema = z.union([
  z.strictObject({
    command: z
      .array(z.string())
      .min(1, "expected a non-empty argv")
      .max(LIMITS.argvEntries, `expected at most ${LIMITS.argvEntries} arguments`)
      .refine((a) => a.reduce((n, x) => n + utf8Bytes(x), 0) <= LIMITS.argvBytes, `expected at most ${LIMITS.argvBytes} bytes of arguments`),
    cwd: boundedString.optional(),
  }),
  z.strictObject({
    module: boundedString.refine(
      (m) => m.startsWith("file:") || m.startsWith("/") || isBundlePath(m),
      "expected a file: URL, an absolute path, or (with a bundle) a path relative to the bundle's root",
    ),
    export: boundedString.min(1),
    args: z
      .unknown()
      .refine((v) => !valueDepthOver(v, LIMITS.argsDepth), `expected a value nested at most ${LIMITS.argsDepth} deep`)
      .optional(),
  }),
]);

/** The zod schema of {@link JobSpecInput}. */
export const jobSpecInputSchema = z.strictObject({
  name: z.string().min(1).max(LIMITS.nameChars).optional(),
  entrypoint: entrypointSchema,
  replicas: z.number().int().min(1).max(100_000).optional(),
  gang: z.boolean().optional(),
  resources: z
    .strictObject({
      cpuMillis: nonNegInt.optional(),
      memoryBytes: nonNegInt.optional(),
      devices: z
        .array(z.strictObject({ kind: boundedString.min(1), count: z.number().int().positive().max(1_000_000) }))
        .max(LIMITS.devices)
        .optional(),
    })
    .optional(),
  constraints: z.array(constraintSchema).max(LIMITS.constraints).optional(),
  env: z
    .record(z.string().max(LIMITS.stringChars).regex(ENV_NAME, "expected an environment variable name"), z.string())
    .refine((e) => Object.keys(e).length <= LIMITS.envEntries, `expected at most ${LIMITS.envEntries} variables`)
    .refine(
      (e) => Object.entries(e).reduce((n, [k, v]) => n + utf8Bytes(k) + utf8Bytes(v), 0) <= LIMITS.envBytes,
      `expected at most ${LIMITS.envBytes} bytes of names and values`,
    )
    .optional(),
  ports: z
    .array(z.string().max(64).regex(PORT_NAME, "expected a port name (letters, digits, _)"))
    .max(LIMITS.portsPerJob, `expected at most ${LIMITS.portsPerJob} ports`)
    .refine((p) => new Set(p.map((n) => n.toUpperCase())).size === p.length, "expected distinct port names")
    .optional(),
  timeoutMs: nonNegInt.optional(),
  maxRetriesFailure: nonNegInt.optional(),
  maxRetriesPreemption: nonNegInt.optional(),
  maxTaskFailures: nonNegInt.optional(),
  priority: z.number().int().min(-1_000_000).max(1_000_000).optional(),
  schedulingTimeoutMs: nonNegInt.optional(),
  /**
   * The code bundle the tasks run from (`sha256:<hex>`, from `IrisClient.uploadBundle` or
   * `submit(spec, { bundle })`): module paths and command cwds may then be relative to its root.
   */
  bundle: z.string().regex(BUNDLE_ID, "expected sha256:<64 hex digits>").optional(),
});

/**
 * What a client submits. `name`: bare `NAME` → `/<user>/NAME`; a name starting with `/` is used
 * as given; omitted → a generated unique name.
 */
export type JobSpecInput = z.input<typeof jobSpecInputSchema>;

/**
 * How a task starts: any program, or an exported function of a module run by iris's task runner.
 * The one entrypoint type: the client sends it, the controller validates it, the worker hands it
 * to the task runner.
 */
export type Entrypoint = z.output<typeof entrypointSchema>;

/** A constraint on worker attributes. */
export interface Constraint {
  key: string;
  op: "EQ" | "NE" | "EXISTS" | "IN" | "GT" | "LT";
  value?: string;
  values?: string[];
}

/** A job spec with every default applied and the full name resolved. */
export interface JobSpec {
  name: string;
  entrypoint: Entrypoint;
  replicas: number;
  gang: boolean;
  resources: { cpuMillis: number; memoryBytes: number; devices: { kind: string; count: number }[] };
  constraints: Constraint[];
  env: Record<string, string>;
  ports: string[];
  timeoutMs: number;
  maxRetriesFailure: number;
  maxRetriesPreemption: number;
  maxTaskFailures: number;
  priority: number;
  /**
   * How long a task may wait while no live worker could ever hold it (none registered) before it
   * becomes UNSCHEDULABLE; 0 = forever; absent = the controller's default (5 minutes).
   */
  schedulingTimeoutMs?: number;
  /** The code bundle the tasks run from (`sha256:<hex>`); absent = none. */
  bundle?: string;
}

/** Default cpu request of a task (millicores). */
export const DEFAULT_CPU_MILLIS = 1000;

/** Job states; a job's state is derived from its tasks. */
export type JobState = "PENDING" | "RUNNING" | "SUCCEEDED" | "FAILED" | "KILLED" | "UNSCHEDULABLE";

/** Task states. */
export type TaskState =
  | "PENDING"
  | "ASSIGNED"
  | "BUILDING"
  | "RUNNING"
  | "SUCCEEDED"
  | "FAILED"
  | "KILLED"
  | "WORKER_LOST"
  | "PREEMPTED"
  | "UNSCHEDULABLE";

/**
 * Why an attempt ended (set by the worker or, for WORKER_LOST/PEER_FAILED/KILLED, the controller).
 * `APP_ERROR`: the task threw a non-retryable error (or returned a value that is not JSON or too
 * large); no budget retries it.
 */
export type FailureKind =
  | "APP_EXIT"
  | "APP_ERROR"
  | "SIGNAL"
  | "OOM"
  | "TIMEOUT"
  | "WORKER_LOST"
  | "LAUNCH_FAILED"
  | "PEER_FAILED"
  | "KILLED"
  /** The job's code bundle could not be fetched, unpacked or installed on the worker (the error has the build log's tail). */
  | "BUILD_FAILED"
  /** Moved off a draining worker (`iris worker drain`); charged to the preemption budget. */
  | "PREEMPTED";

/** The state of one task and its latest attempt. */
export interface TaskStatus {
  taskId: string;
  index: number;
  state: string;
  attempt: number;
  exitCode?: number;
  failureKind?: string;
  pendingReason?: string;
  statusText?: string;
  error?: string;
  /** For a task that failed with APP_ERROR: the application's error code. */
  errorCode?: string;
  /** For a SUCCEEDED task: its module entrypoint's return value, parsed JSON (absent when none). */
  result?: unknown;
  workerId?: string;
  attempts: AttemptStatus[];
}

/** One attempt of a task. */
export interface AttemptStatus {
  attempt: number;
  workerId: string;
  state: string;
  exitCode?: number;
  failureKind?: string;
  error?: string;
  /** For an APP_ERROR attempt: the application's error code. */
  errorCode?: string;
  /** For a SUCCEEDED attempt: the return value, parsed JSON (absent when none). */
  result?: unknown;
  startedAtMs?: number;
  finishedAtMs?: number;
}

/** The state of one submission of a job. */
export interface JobStatus {
  name: string;
  instanceId: string;
  state: JobState;
  error?: string;
  /**
   * The tasks: all of them from `Job.status()`/`Job.wait()` (the client follows the pages), none
   * from `IrisClient.list()` (summaries: see `taskCounts`).
   */
  tasks: TaskStatus[];
  /** The job's tasks counted by state (always all of them; set on every status the client returns). */
  taskCounts?: Partial<Record<TaskState, number>>;
  /** Number of tasks of the job (set on every status the client returns). */
  numTasks?: number;
  submittedAtMs: number;
  finishedAtMs?: number;
}

/** One line of a task's output. */
export interface LogEntry {
  taskIndex: number;
  attempt: number;
  stream: "stdout" | "stderr";
  line: string;
  timeMs: number;
}

/** One point of a task's reported metrics. */
export interface MetricPoint {
  step: number;
  timeMs: number;
  metrics: Record<string, number>;
}

/** A registered endpoint. */
export interface Endpoint {
  name: string;
  address: string;
  metadata: Record<string, string>;
}

/** A capability URL for one endpoint (`IrisClient.mintEndpointToken`, the MintEndpointToken RPC). */
export interface EndpointCapability {
  /** The endpoint's full name the token is bound to. */
  name: string;
  token: string;
  /** `http://<controller http>/cap/<token>`: append the service's path (`/v1/models`). */
  url: string;
  /** `/cap/<token>`: the same, relative to the controller's HTTP address. */
  path: string;
  expiresAtMs: number;
}

/** A worker as `IrisClient.listWorkers()` shows it. */
export interface WorkerSummary {
  workerId: string;
  host: string;
  /** ALIVE | LOST */
  state: string;
  attributes: Record<string, string>;
  runningAttempts: number;
  lastSeenMs: number;
  /** What the worker offers: cpu in millicores, memory in bytes, devices by kind. */
  capacity: ResourceAmounts;
  /** What its unfinished attempts hold now. */
  used: ResourceAmounts;
}

/** An amount of worker resources: cpu in millicores, memory in bytes, devices by kind. */
export interface ResourceAmounts {
  cpuMillis: number;
  memoryBytes: number;
  devices: Record<string, number>;
}

/** The final job states. */
export const TERMINAL_JOB_STATES: readonly JobState[] = ["SUCCEEDED", "FAILED", "KILLED", "UNSCHEDULABLE"];

/** Whether a job state is final. */
export function isTerminalJobState(state: string): boolean {
  return (TERMINAL_JOB_STATES as readonly string[]).includes(state);
}

/**
 * Checks a full job name: `/user/job[/child…]`, segments of letters, digits, `.`, `_`, `-`, and
 * no purely numeric segment after the user (those name tasks).
 */
export function checkJobName(name: string): string | undefined {
  if (name.length > LIMITS.nameChars) return `name: expected at most ${LIMITS.nameChars} characters, got ${name.length}`;
  if (!name.startsWith("/")) return `name: expected a full name starting with "/", got "${name}"`;
  const segs = name.slice(1).split("/");
  if (segs.length < 2) return `name: expected /<user>/<job>, got "${name}"`;
  for (const [i, s] of segs.entries()) {
    if (s.length > LIMITS.segmentChars) return `name: segment "${s.slice(0, 20)}…" is longer than ${LIMITS.segmentChars} characters`;
    if (!SEGMENT.test(s)) return `name: invalid segment "${s}" in "${name}" (letters, digits, . _ -)`;
    if (i > 0 && /^\d+$/.test(s)) return `name: segment "${s}" in "${name}" may not be a number (numbers name tasks)`;
  }
  return undefined;
}

/**
 * Checks a full endpoint name (`/user/root/name…`): at most {@link LIMITS.nameChars} characters,
 * segments of letters, digits, `.`, `_`, `-` (and `:`); an error text or undefined.
 */
export function checkEndpointName(name: string): string | undefined {
  if (name.length > LIMITS.nameChars) return `endpoint name: expected at most ${LIMITS.nameChars} characters, got ${name.length}`;
  const segs = name.slice(1).split("/");
  if (!name.startsWith("/") || segs.length < 2) return `endpoint name: expected /<user>/<job>/<name>, got "${name}"`;
  for (const s of segs) {
    if (s.length > LIMITS.segmentChars || !ENDPOINT_SEGMENT.test(s)) return `endpoint name: invalid segment "${s.slice(0, 40)}" (letters, digits, . _ - :, at most ${LIMITS.segmentChars})`;
  }
  return undefined;
}

const ENDPOINT_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** Checks the sizes of an endpoint registration (name, address, metadata): INVALID_ARGUMENT. */
export function checkEndpointRequest(req: { name: string; address: string; metadata: Record<string, string> }): void {
  const bad = (m: string): never => {
    throw new IrisError("INVALID_ARGUMENT", m);
  };
  if (!req.name) bad("endpoint name: expected a non-empty name");
  if (req.name.length > LIMITS.nameChars) bad(`endpoint name: expected at most ${LIMITS.nameChars} characters, got ${req.name.length}`);
  if (!req.address) bad("endpoint address: expected a non-empty address");
  if (req.address.length > LIMITS.addressChars) bad(`endpoint address: expected at most ${LIMITS.addressChars} characters, got ${req.address.length}`);
  const entries = Object.entries(req.metadata);
  if (entries.length > LIMITS.metadataEntries) bad(`endpoint metadata: expected at most ${LIMITS.metadataEntries} entries, got ${entries.length}`);
  const bytes = entries.reduce((n, [k, v]) => n + utf8Bytes(k) + utf8Bytes(v), 0);
  if (bytes > LIMITS.metadataBytes) bad(`endpoint metadata: expected at most ${LIMITS.metadataBytes} bytes, got ${bytes}`);
}

/** Validates a spec and applies defaults; `name` must already be the full name. */
export function normalizeJobSpec(input: unknown, fullName: string): JobSpec {
  const r = jobSpecInputSchema.safeParse(input);
  if (!r.success) throw new IrisError("INVALID_ARGUMENT", `invalid job spec: ${formatZodIssues(r.error)}`);
  const nameErr = checkJobName(fullName);
  if (nameErr) throw new IrisError("INVALID_ARGUMENT", `invalid job spec: ${nameErr}`);
  const s = r.data;
  const ep = s.entrypoint;
  if ("module" in ep && isBundlePath(ep.module) && s.bundle === undefined) {
    throw new IrisError("INVALID_ARGUMENT", `invalid job spec: entrypoint.module: a relative path (${JSON.stringify(ep.module)}) needs a bundle`);
  }
  const spec: JobSpec = {
    name: fullName,
    entrypoint: "command" in ep ? { command: ep.command, ...(ep.cwd ? { cwd: ep.cwd } : {}) } : { module: ep.module, export: ep.export, ...(ep.args !== undefined ? { args: ep.args } : {}) },
    replicas: s.replicas ?? 1,
    gang: s.gang ?? false,
    resources: {
      cpuMillis: s.resources?.cpuMillis ?? DEFAULT_CPU_MILLIS,
      memoryBytes: s.resources?.memoryBytes ?? 0,
      devices: s.resources?.devices ?? [],
    },
    constraints: (s.constraints ?? []).map((c) => ({ key: c.key, op: c.op, ...(c.value !== undefined ? { value: c.value } : {}), ...(c.values ? { values: c.values } : {}) })),
    env: s.env ?? {},
    ports: s.ports ?? [],
    timeoutMs: s.timeoutMs ?? 0,
    maxRetriesFailure: s.maxRetriesFailure ?? 0,
    maxRetriesPreemption: s.maxRetriesPreemption ?? 10,
    maxTaskFailures: s.maxTaskFailures ?? 0,
    priority: s.priority ?? 0,
    ...(s.schedulingTimeoutMs !== undefined ? { schedulingTimeoutMs: s.schedulingTimeoutMs } : {}),
    ...(s.bundle !== undefined ? { bundle: s.bundle } : {}),
  };
  const bytes = utf8Bytes(JSON.stringify(spec));
  if (bytes > LIMITS.specBytes) throw new IrisError("RESOURCE_EXHAUSTED", `invalid job spec: ${bytes} bytes of JSON, more than the limit of ${LIMITS.specBytes}`);
  return spec;
}

/** Whether job name `name` is `root` or below it (`/u/a` covers `/u/a` and `/u/a/b`, not `/u/ab`). */
export function inTree(root: string, name: string): boolean {
  return name === root || name.startsWith(root.endsWith("/") ? root : `${root}/`);
}
