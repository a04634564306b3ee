// The task environment: the IRIS_* variables a worker gives an attempt (built here) and a task
// reads back (parsed here).
import { IrisError } from "../errors.ts";
import { toInteger } from "../toolkit/cliInteger.ts";

/** Loopback: where a task's servers are reachable when nothing else is configured. */
export const DEFAULT_ADVERTISE_HOST = "127.0.0.1";

/** Who a task is: everything the worker tells an attempt through its `IRIS_*` environment. */
export interface TaskIdentity {
  controllerAddress: string;
  /** The attempt's task token (`IRIS_AUTH_TOKEN`), when the controller has auth on. */
  authToken?: string;
  /** TLS: the CA the controller's certificate chains to (`IRIS_TLS_CA`: a PEM file path or PEM text). */
  tlsCa?: string;
  /** `/user/job` */
  jobId: string;
  /** `/user/job/3` */
  taskId: string;
  taskIndex: number;
  numTasks: number;
  /** 1-based attempt number. */
  attempt: number;
  workerId: string;
  /** The host other tasks reach this one at (`IRIS_ADVERTISE_HOST`, default `127.0.0.1`). */
  advertiseHost: string;
  /** Named ports, by the name the job spec requested. */
  ports: Record<string, number>;
}

/**
 * The environment variable that carries a named port: `IRIS_PORT_<NAME>`, upper-cased, with any
 * character outside `[A-Z0-9_]` replaced by `_` (so `"http-api"` → `IRIS_PORT_HTTP_API`).
 */
export function portEnvName(name: string): string {
  return `IRIS_PORT_${name.toUpperCase().replace(/[^A-Z0-9_]/g, "_")}`;
}

/**
 * The environment of an attempt. Precedence, lowest first: the worker's own environment (minus any
 * `IRIS_*` it inherited, which would describe some other task), the job's `env`, and the `IRIS_*`
 * values of this attempt, which a job cannot override.
 */
export function buildTaskEnv(
  identity: TaskIdentity,
  jobEnv: Readonly<Record<string, string>> = {},
  baseEnv: Readonly<Record<string, string | undefined>> = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(baseEnv)) {
    if (v !== undefined && !k.startsWith("IRIS_")) env[k] = v;
  }
  // IRIS_GANG_SECRET comes from the controller with the job's env, but is this attempt's alone:
  // set like the other IRIS_* values, and never passed on to child jobs (not in IRIS_JOB_ENV_KEYS).
  const { IRIS_GANG_SECRET: gangSecret, ...ownEnv } = jobEnv;
  Object.assign(env, ownEnv);
  env.IRIS_CONTROLLER_ADDRESS = identity.controllerAddress;
  if (identity.authToken !== undefined && identity.authToken !== "") env.IRIS_AUTH_TOKEN = identity.authToken;
  else delete env.IRIS_AUTH_TOKEN;
  if (identity.tlsCa !== undefined && identity.tlsCa !== "") env.IRIS_TLS_CA = identity.tlsCa;
  env.IRIS_JOB_ID = identity.jobId;
  env.IRIS_TASK_ID = identity.taskId;
  env.IRIS_TASK_INDEX = String(identity.taskIndex);
  env.IRIS_NUM_TASKS = String(identity.numTasks);
  env.IRIS_ATTEMPT = String(identity.attempt);
  env.IRIS_WORKER_ID = identity.workerId;
  env.IRIS_ADVERTISE_HOST = identity.advertiseHost;
  for (const [name, port] of Object.entries(identity.ports)) env[portEnvName(name)] = String(port);
  // The names of the job's own env variables (those iris did not override), for child jobs to
  // inherit (getIrisCtx().submitChild): names only, as the values are already in this env — a
  // copy of the values would double a big env and could pass the OS limit (E2BIG).
  env.IRIS_JOB_ENV_KEYS = JSON.stringify(Object.keys(ownEnv).filter((k) => env[k] === ownEnv[k]));
  if (gangSecret !== undefined && gangSecret !== "") env.IRIS_GANG_SECRET = gangSecret;
  return env;
}

/**
 * The env the current job was submitted with, which child jobs inherit: the variables named by
 * `IRIS_JOB_ENV_KEYS` (set by the worker), with their values in this environment; `{}` when absent
 * or unreadable.
 */
export function parseJobEnv(env: Readonly<Record<string, string | undefined>> = process.env): Record<string, string> {
  const raw = env.IRIS_JOB_ENV_KEYS;
  if (raw === undefined || raw === "") return {};
  let names: unknown;
  try {
    names = JSON.parse(raw);
  } catch {
    return {};
  }
  if (!Array.isArray(names)) return {};
  const out: Record<string, string> = {};
  for (const k of names) {
    if (typeof k !== "string") continue;
    const v = env[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/**
 * Reads a task's identity back from its environment: `undefined` when this process is not an iris
 * task (no `IRIS_TASK_ID`); an {@link IrisError} `FAILED_PRECONDITION` naming the variable when the
 * environment is incomplete or malformed.
 */
export function parseTaskEnv(env: Readonly<Record<string, string | undefined>> = process.env): TaskIdentity | undefined {
  if (env.IRIS_TASK_ID === undefined || env.IRIS_TASK_ID === "") return undefined;
  const text = (key: string): string => {
    const v = env[key];
    if (v === undefined || v === "") {
      throw new IrisError("FAILED_PRECONDITION", `${key}: expected a value in the task environment, got nothing`);
    }
    return v;
  };
  const int = (key: string, min: number): number => {
    const raw = text(key);
    const n = toInteger(raw, { min });
    if (n === undefined) {
      throw new IrisError("FAILED_PRECONDITION", `${key}: expected an integer ≥ ${min}, got ${JSON.stringify(raw)}`);
    }
    return n;
  };
  const ports: Record<string, number> = {};
  for (const [k, v] of Object.entries(env)) {
    if (!k.startsWith("IRIS_PORT_") || v === undefined) continue;
    const port = Number(v);
    if (!Number.isInteger(port) || port <= 0 || port > 65535) {
      throw new IrisError("FAILED_PRECONDITION", `${k}: expected a TCP port, got ${JSON.stringify(v)}`);
    }
    ports[k.slice("IRIS_PORT_".length)] = port;
  }
  const token = env.IRIS_AUTH_TOKEN;
  const tlsCa = env.IRIS_TLS_CA;
  return {
    controllerAddress: text("IRIS_CONTROLLER_ADDRESS"),
    ...(token !== undefined && token !== "" ? { authToken: token } : {}),
    ...(tlsCa !== undefined && tlsCa !== "" ? { tlsCa } : {}),
    jobId: text("IRIS_JOB_ID"),
    taskId: text("IRIS_TASK_ID"),
    taskIndex: int("IRIS_TASK_INDEX", 0),
    numTasks: int("IRIS_NUM_TASKS", 1),
    attempt: int("IRIS_ATTEMPT", 0),
    workerId: text("IRIS_WORKER_ID"),
    advertiseHost: env.IRIS_ADVERTISE_HOST !== undefined && env.IRIS_ADVERTISE_HOST !== "" ? env.IRIS_ADVERTISE_HOST : DEFAULT_ADVERTISE_HOST,
    ports,
  };
}
