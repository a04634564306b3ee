// The context API: who the current iris task is, and what it can do (ports, endpoints, status,
// child jobs). Built lazily from the IRIS_* environment the worker sets, or scoped explicitly
// with withIrisCtx (tests, in-process tasks).
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { IrisClient, type Job } from "./client/irisClient.ts";
import { IrisError } from "./errors.ts";
import type { Endpoint, JobSpecInput } from "./jobSpec.ts";
import { parseJobEnv, parseTaskEnv, portEnvName, type TaskIdentity } from "./process/taskEnv.ts";

/** An endpoint registration, leased to the attempt that made it. */
export interface EndpointRegistration {
  /** The full name the endpoint got (relative names are scoped to the root job). */
  name: string;
  address: string;
  /** Removes the endpoint now (it is removed anyway when the attempt ends). */
  unregister(): Promise<void>;
}

/** Registers endpoints for the current attempt. */
export interface EndpointRegistry {
  /**
   * Publishes `address` under `name`: relative names live under the root job (`/user/root/name`),
   * names starting with `/` are used as given. Leased: removed when this attempt ends; a newer
   * attempt of the same task registering the same name replaces it.
   */
  register(name: string, address: string, metadata?: Record<string, string>): Promise<EndpointRegistration>;
}

/** Finds endpoints other tasks registered. */
export interface EndpointResolver {
  /**
   * Resolves `name` (scoped like {@link EndpointRegistry.register}), waiting with backoff until
   * it is registered; fails `NOT_FOUND` when it is still missing after `timeoutMs` (default 60 s).
   */
  resolve(name: string, opts?: { timeoutMs?: number }): Promise<Endpoint>;
}

/**
 * The current iris task: its identity (the {@link TaskIdentity} the worker gave it, minus the
 * controller's address, the token and the raw port map, which the members below wrap) and what
 * it can do.
 */
export interface IrisContext extends Omit<TaskIdentity, "controllerAddress" | "authToken" | "tlsCa" | "ports"> {
  /** A client of the controller this task runs under (created on first use). */
  readonly client: IrisClient;
  /** The port allocated for `name` (the job must have requested it in `ports`). */
  getPort(name: string): number;
  registry: EndpointRegistry;
  resolver: EndpointResolver;
  /** Records a status text and, optionally, metrics (`step` is the point's step) for this attempt. */
  reportStatus(text: string, metrics?: Record<string, number>): Promise<void>;
  /**
   * Submits a child job of the current job: named `<jobId>/<name>` (default a generated name), it
   * dies with its parent and inherits the env its parent was submitted with (its own `env` wins).
   */
  submitChild(spec: JobSpecInput): Promise<Job>;
}

const RESOLVE_DEFAULT_TIMEOUT_MS = 60_000;

/**
 * Builds the context of a task from its identity. `env` is where named ports are read from
 * (`IRIS_PORT_<NAME>`); the controller is dialled on first use, with the token, the job's user
 * (bare job names resolve under it) and the job as the scope of relative endpoint names.
 */
export function createIrisContext(identity: TaskIdentity, env: Readonly<Record<string, string | undefined>> = process.env): IrisContext {
  const attemptId = `${identity.taskId}:${identity.attempt}`;
  const user = identity.jobId.split("/")[1];
  let client: IrisClient | undefined;
  const irisClient = (): IrisClient =>
    (client ??= IrisClient.connect(identity.controllerAddress, {
      token: identity.authToken,
      tlsCa: identity.tlsCa,
      scopeJob: identity.jobId,
      ...(user === undefined || user === "" ? {} : { user }),
    }));

  const { controllerAddress: _address, authToken: _token, tlsCa: _tlsCa, ports: _ports, ...who } = identity;
  return {
    ...who,
    get client(): IrisClient {
      return irisClient();
    },
    getPort(name: string): number {
      const key = portEnvName(name);
      const raw = env[key];
      if (raw === undefined || raw === "") {
        throw new IrisError(
          "FAILED_PRECONDITION",
          `no port named ${JSON.stringify(name)} was allocated to this task (${key} is not set): ` + `request it when submitting the job, e.g. ports: [${JSON.stringify(name)}]`,
        );
      }
      const port = Number(raw);
      if (!Number.isInteger(port) || port <= 0 || port > 65535) {
        throw new IrisError("FAILED_PRECONDITION", `${key}: expected a TCP port, got ${JSON.stringify(raw)}`);
      }
      return port;
    },
    registry: {
      async register(name, address, metadata = {}) {
        const c = irisClient();
        const endpoint = await c.registerEndpoint(name, address, { metadata, attemptId });
        return {
          name: endpoint.name,
          address: endpoint.address,
          unregister: () => c.unregisterEndpoint(endpoint.endpointId),
        };
      },
    },
    resolver: {
      resolve(name, opts = {}) {
        return irisClient().resolveEndpoint(name, { timeoutMs: opts.timeoutMs ?? RESOLVE_DEFAULT_TIMEOUT_MS });
      },
    },
    reportStatus(text, metrics = {}) {
      return irisClient().reportTaskStatus(identity.taskId, identity.attempt, text, metrics);
    },
    submitChild(spec) {
      const leaf = spec.name ?? `child-${randomUUID().slice(0, 8)}`;
      if (leaf.includes("/")) {
        return Promise.reject(new IrisError("INVALID_ARGUMENT", `name: expected a bare name for a child job (it becomes ${identity.jobId}/<name>), got ${JSON.stringify(leaf)}`));
      }
      // A child inherits the env its parent job was submitted with; its own env wins.
      const inherited = parseJobEnv(env);
      const childEnv = { ...inherited, ...(spec.env ?? {}) };
      return irisClient().submit({
        ...spec,
        name: `${identity.jobId}/${leaf}`,
        ...(Object.keys(childEnv).length > 0 ? { env: childEnv } : {}),
      });
    },
  };
}

const scoped = new AsyncLocalStorage<IrisContext>();
let fromEnv: { ctx: IrisContext | undefined } | undefined;

/**
 * The current iris context: the one scoped by {@link withIrisCtx}, else the one built (once)
 * from this process's `IRIS_*` environment, else `undefined` (not inside an iris task).
 *
 * @example
 * const ctx = getIrisCtx();
 * const rank = ctx?.taskIndex ?? 0;
 */
export function getIrisCtx(): IrisContext | undefined {
  const ctx = scoped.getStore();
  if (ctx !== undefined) return ctx;
  if (fromEnv === undefined) {
    const identity = parseTaskEnv(process.env);
    fromEnv = { ctx: identity === undefined ? undefined : createIrisContext(identity, process.env) };
  }
  return fromEnv.ctx;
}

/** The current iris context; throws {@link IrisError} `FAILED_PRECONDITION` outside an iris task. */
export function irisCtx(): IrisContext {
  const ctx = getIrisCtx();
  if (ctx === undefined) {
    throw new IrisError("FAILED_PRECONDITION", "not inside an iris task: no context is scoped (withIrisCtx) and IRIS_TASK_ID is not set");
  }
  return ctx;
}

/**
 * Runs `fn` with `ctx` as the current context (for it and everything it awaits), without
 * touching the process environment. For tests and tasks run in-process.
 */
export function withIrisCtx<T>(ctx: IrisContext, fn: () => T): T {
  return scoped.run(ctx, fn);
}
