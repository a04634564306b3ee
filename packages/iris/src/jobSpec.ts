// The job spec as users write it (JobSpecInput), its schema and validation (zod, once, at the
// controller: normalizeJobSpec), and code bundle ids. Inside the package everything passes the
// normalized JobSpec. Its neighbours, re-exported here: the status types (jobStatus.ts), the
// limits (jobLimits.ts) and the name rules (jobNames.ts).
import { z } from "./toolkit/zod.ts";
import { IrisError } from "./errors.ts";
import { LIMITS, utf8Bytes, valueDepthOver } from "./jobLimits.ts";
import { checkJobName } from "./jobNames.ts";
import { formatZodIssues } from "./toolkit/zodIssues.ts";

// The spec's neighbours, re-exported: this module stays the one entry the package imports them from.
export { LIMITS, jsonDepth } from "./jobLimits.ts";
export { checkEndpointName, checkEndpointRequest, checkJobName, inTree } from "./jobNames.ts";
export { TERMINAL_JOB_STATES, isTerminalJobState } from "./jobStatus.ts";
export type {
  AttemptStatus,
  Endpoint,
  EndpointCapability,
  FailureKind,
  JobState,
  JobStatus,
  LogEntry,
  MetricPoint,
  ResourceAmounts,
  TaskState,
  TaskStatus,
  WorkerSummary,
} from "./jobStatus.ts";

const PORT_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const nonNegInt = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

const boundedString = z.string().max(LIMITS.stringChars);

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
    .refine((e) => Object.entries(e).reduce((n, [k, v]) => n + utf8Bytes(k) + utf8Bytes(v), 0) <= LIMITS.envBytes, `expected at most ${LIMITS.envBytes} bytes of names and values`)
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
    entrypoint:
      "command" in ep ? { command: ep.command, ...(ep.cwd ? { cwd: ep.cwd } : {}) } : { module: ep.module, export: ep.export, ...(ep.args !== undefined ? { args: ep.args } : {}) },
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
