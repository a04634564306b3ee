// The job spec as users write it (JobSpecInput), its validation (zod, once, at the controller:
// normalizeJobSpec), and the public status types. Inside the package everything passes the
// normalized JobSpec.
import { z } from "zod";
import { IrisError } from "./errors.ts";

const PORT_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const nonNegInt = z.number().int().nonnegative();

/** The id of a code bundle: `sha256:` and the hex SHA-256 of its bytes. */
export const BUNDLE_ID = /^sha256:[0-9a-f]{64}$/;

/** A relative path that stays inside its root (no `..` segment, no leading `/`). */
export function isBundlePath(p: string): boolean {
  return p !== "" && !p.startsWith("/") && !p.startsWith("file:") && !p.split(/[\\/]/).includes("..");
}

const constraintSchema = z
  .object({
    key: z.string().min(1),
    op: z.enum(["EQ", "NE", "EXISTS", "IN", "GT", "LT"]),
    value: z.string().optional(),
    values: z.array(z.string()).optional(),
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
  z.strictObject({ command: z.array(z.string()).min(1, "expected a non-empty argv"), cwd: z.string().optional() }),
  z.strictObject({
    module: z
      .string()
      .refine(
        (m) => m.startsWith("file:") || m.startsWith("/") || isBundlePath(m),
        "expected a file: URL, an absolute path, or (with a bundle) a path relative to the bundle's root",
      ),
    export: z.string().min(1),
    args: z.unknown().optional(),
  }),
]);

/** The zod schema of {@link JobSpecInput}. */
export const jobSpecInputSchema = z.strictObject({
  name: z.string().min(1).optional(),
  entrypoint: entrypointSchema,
  replicas: z.number().int().min(1).max(100_000).optional(),
  gang: z.boolean().optional(),
  resources: z
    .strictObject({
      cpuMillis: nonNegInt.optional(),
      memoryBytes: nonNegInt.optional(),
      devices: z.array(z.strictObject({ kind: z.string().min(1), count: z.number().int().positive() })).optional(),
    })
    .optional(),
  constraints: z.array(constraintSchema).optional(),
  env: z.record(z.string().regex(ENV_NAME, "expected an environment variable name"), z.string()).optional(),
  ports: z
    .array(z.string().regex(PORT_NAME, "expected a port name (letters, digits, _)"))
    .refine((p) => new Set(p.map((n) => n.toUpperCase())).size === p.length, "expected distinct port names")
    .optional(),
  timeoutMs: nonNegInt.optional(),
  maxRetriesFailure: nonNegInt.optional(),
  maxRetriesPreemption: nonNegInt.optional(),
  maxTaskFailures: nonNegInt.optional(),
  priority: z.number().int().optional(),
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

/** Whether a job state is final. */
export function isTerminalJobState(state: string): boolean {
  return state === "SUCCEEDED" || state === "FAILED" || state === "KILLED" || state === "UNSCHEDULABLE";
}

/** Formats zod issues for people: `resources.cpuMillis: expected …, got …; …`. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], prefix = ""): string {
  return issues
    .map((i) => {
      const p = [prefix, ...i.path.map(String)].filter((s) => s !== "").join(".");
      return `${p || "(root)"}: ${i.message}`;
    })
    .join("; ");
}

/**
 * Checks a full job name: `/user/job[/child…]`, segments of letters, digits, `.`, `_`, `-`, and
 * no purely numeric segment after the user (those name tasks).
 */
export function checkJobName(name: string): string | undefined {
  if (!name.startsWith("/")) return `name: expected a full name starting with "/", got "${name}"`;
  const segs = name.slice(1).split("/");
  if (segs.length < 2) return `name: expected /<user>/<job>, got "${name}"`;
  for (const [i, s] of segs.entries()) {
    if (!SEGMENT.test(s)) return `name: invalid segment "${s}" in "${name}" (letters, digits, . _ -)`;
    if (i > 0 && /^\d+$/.test(s)) return `name: segment "${s}" in "${name}" may not be a number (numbers name tasks)`;
  }
  return undefined;
}

/** Validates a spec and applies defaults; `name` must already be the full name. */
export function normalizeJobSpec(input: unknown, fullName: string): JobSpec {
  const r = jobSpecInputSchema.safeParse(input);
  if (!r.success) throw new IrisError("INVALID_ARGUMENT", `invalid job spec: ${formatIssues(r.error.issues)}`);
  const nameErr = checkJobName(fullName);
  if (nameErr) throw new IrisError("INVALID_ARGUMENT", `invalid job spec: ${nameErr}`);
  const s = r.data;
  const ep = s.entrypoint;
  if ("module" in ep && isBundlePath(ep.module) && s.bundle === undefined) {
    throw new IrisError("INVALID_ARGUMENT", `invalid job spec: entrypoint.module: a relative path (${JSON.stringify(ep.module)}) needs a bundle`);
  }
  return {
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
}
