// remoteInference: places levanter's inference server as an iris job behind the endpoint
// `serve/<name>`, waits until every replica answers `/v1/models`, hands out an OpenAI base URL,
// and terminates the job when the session ends (callback form or `await using`). With several
// replicas the URL is a capability URL through the controller's endpoint proxy, which spreads
// requests over the replicas that registered the endpoint (marin runs no proxy of its own).
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { CAPABILITY_TTL_S, getIrisCtx, isTerminalJobState } from "@marin/iris/client";
import type { Endpoint, IrisClient, Job, JobSpecInput, JobStatus } from "@marin/iris/client";
import { ownExtension } from "@marin/iris/loader";
import { ModelListSchema } from "@marin/levanter/serve/openai";
import { MarinError } from "../errors.ts";
import type { StepResources } from "../step/step.ts";
import { SERVE_PORT, serveEndpointName } from "./serveTask.ts";
import type { ServeReplicaArgs } from "./serveTask.ts";

const SERVE_TASK_MODULE = fileURLToPath(new URL(`./serveTask${ownExtension(import.meta.url)}`, import.meta.url));

/** Options of {@link remoteInference}. */
export interface RemoteInferenceOptions {
  /** A `step-N` checkpoint or a folder of them (the newest complete one is served). */
  checkpoint: string;
  /**
   * Server instances (iris tasks of one job; default 1). With more than one, `baseUrl` goes
   * through the controller's endpoint proxy, which sends each request to the least busy replica.
   */
  replicas?: number;
  /** Resources of each replica (default one core). */
  resources?: StepResources;
  /** The endpoint is `serve/<name>` and the model id `name` (default `lm-<random>`). */
  name?: string;
  /**
   * Where to submit the server job: default the current iris task's client (the server is then a
   * child job of the task and dies with it). Outside a task, required.
   */
  client?: IrisClient;
  /** How long the job may take to start, register and answer `/v1/models` (default 5 min). */
  startupTimeoutMs?: number;
  /** HF tokenizer.json for checkpoints not trained with the byte tokenizer. */
  tokenizerJson?: string;
  /** Engine limits of each replica (levanter serve's `--max-batch`, `--max-queue`, `--kv-budget-mb`). */
  engine?: { maxBatch?: number; maxQueue?: number; kvBudgetMb?: number };
  /** Extra environment of the server job (e.g. `LEVANTER_BACKEND`). */
  env?: Record<string, string>;
  /**
   * The module entrypoint of each replica (default marin's `serveReplica`, which runs levanter's
   * server): for custom servers that keep its contract (bind the `http` port, register
   * `serve/<name>`, answer `/v1/models`). Gets {@link ServeReplicaArgs}.
   */
  server?: { module: string; export: string };
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

/** A running inference service (what the callback of {@link remoteInference} gets). */
export interface InferenceSession {
  /**
   * OpenAI base URL (`…/v1`). One replica: its server (`http://host:port/v1`). Several: a
   * capability URL on the controller's endpoint proxy (`http://<proxy origin>/cap/<token>/v1`,
   * balanced over the replicas, no other credential needed, valid for {@link capabilityExpiresAtMs});
   * on a cluster whose controller serves no HTTP port (no proxy), the first replica's server.
   */
  readonly baseUrl: string;
  /** When `baseUrl` is a capability URL: when it expires (ms since the epoch; 24 h after start). */
  readonly capabilityExpiresAtMs?: number;
  /** The model id to send (`/v1/models` reports it). */
  readonly model: string;
  /** The endpoint's full name (`/user/root/serve/<name>`): reach it through the controller's `/proxy/…`. */
  readonly endpoint: string;
  /** Each replica's own base URL (`http://host:port/v1`). */
  readonly replicaUrls: readonly string[];
  /** The server job. */
  readonly job: Job;
  /** Terminates the job (idempotent). */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const DEFAULT_STARTUP_MS = 5 * 60_000;
const POLL_MS = 250;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Serves a checkpoint as an iris job for the duration of `fn` and terminates it afterwards,
 * whether `fn` returns or throws.
 *
 * @example
 * const text = await remoteInference({ checkpoint: "runs/tiny/checkpoints" }, async ({ baseUrl, model }) => {
 *   const r = await fetch(`${baseUrl}/completions`, { method: "POST", headers: { "content-type": "application/json" },
 *     body: JSON.stringify({ model, prompt: "The jury said", max_tokens: 32 }) });
 *   return CompletionResponseSchema.parse(await r.json()).choices[0]!.text; // from "@marin/levanter/serve/openai"
 * });
 */
export function remoteInference<T>(opts: RemoteInferenceOptions, fn: (session: InferenceSession) => Promise<T>): Promise<T>;
/**
 * Without a callback: resolves with the session once it is ready; end it with `close()` or
 * `await using session = await remoteInference({ … })`.
 */
export function remoteInference(opts: RemoteInferenceOptions): Promise<InferenceSession>;
export async function remoteInference<T>(opts: RemoteInferenceOptions, fn?: (session: InferenceSession) => Promise<T>): Promise<T | InferenceSession> {
  const session = await startSession(opts);
  if (!fn) return session;
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

function checkOptions(opts: RemoteInferenceOptions): { replicas: number; name: string; startupMs: number } {
  if (typeof opts.checkpoint !== "string" || opts.checkpoint === "") throw new MarinError("INVALID_CONFIG", "remoteInference: checkpoint: expected a checkpoint path");
  const replicas = opts.replicas ?? 1;
  if (!Number.isInteger(replicas) || replicas < 1) throw new MarinError("INVALID_CONFIG", `remoteInference: replicas: expected a positive integer, got ${String(opts.replicas)}`);
  const name = opts.name ?? `lm-${randomBytes(3).toString("hex")}`;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name))
    throw new MarinError("INVALID_CONFIG", `remoteInference: name: expected letters, digits, ".", "_" or "-", got ${JSON.stringify(name)}`);
  const startupMs = opts.startupTimeoutMs ?? DEFAULT_STARTUP_MS;
  if (!(startupMs > 0)) throw new MarinError("INVALID_CONFIG", `remoteInference: startupTimeoutMs: expected a positive number, got ${String(opts.startupTimeoutMs)}`);
  return { replicas, name, startupMs };
}

async function startSession(opts: RemoteInferenceOptions): Promise<InferenceSession> {
  const { replicas, name, startupMs } = checkOptions(opts);
  const ctx = getIrisCtx();
  const client = opts.client ?? ctx?.client;
  if (!client) {
    throw new MarinError("INVALID_CONFIG", "remoteInference: no iris cluster: call it inside an iris task (a step with resources) or pass `client` (e.g. a LocalCluster's)");
  }
  const log = opts.log ?? (() => undefined);
  const args: ServeReplicaArgs = {
    checkpoint: opts.checkpoint,
    name,
    replicas,
    ...(opts.tokenizerJson ? { tokenizerJson: opts.tokenizerJson } : {}),
    ...(opts.engine?.maxBatch ? { maxBatch: opts.engine.maxBatch } : {}),
    ...(opts.engine?.maxQueue !== undefined ? { maxQueue: opts.engine.maxQueue } : {}),
    ...(opts.engine?.kvBudgetMb ? { kvBudgetMb: opts.engine.kvBudgetMb } : {}),
  };
  const res = opts.resources ?? { cpuMillis: 1000 };
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => /^(MARIN|LEVANTER)_/.test(e[0]) && e[1] !== undefined)),
    ...(opts.env ?? {}),
  };
  const spec: JobSpecInput = {
    name: `serve-${name}`,
    entrypoint: { module: opts.server?.module ?? SERVE_TASK_MODULE, export: opts.server?.export ?? "serveReplica", args },
    replicas,
    ports: [SERVE_PORT],
    resources: {
      ...(res.cpuMillis !== undefined ? { cpuMillis: res.cpuMillis } : {}),
      ...(res.memoryBytes !== undefined ? { memoryBytes: res.memoryBytes } : {}),
      ...(res.devices ? { devices: res.devices } : {}),
    },
    maxRetriesFailure: 0,
    env,
  };
  // Inside a task (and with its client) the server is a child job: it dies with the task.
  const job = ctx && (!opts.client || opts.client === ctx.client) ? await ctx.submitChild(spec) : await client.submit(spec);
  log(`submitted inference job ${job.name} (${replicas} replica${replicas > 1 ? "s" : ""} of ${opts.checkpoint})`);
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await terminate(job);
  };
  try {
    const endpointName = serveEndpointName(name);
    const ready = await waitReady(client, job, endpointName, replicas, startupMs);
    const replicaUrls = ready.map((e) => `${httpBase(e.address)}/v1`);
    const endpoint = ready[0]!.name;
    let baseUrl = replicaUrls[0]!;
    let capabilityExpiresAtMs: number | undefined;
    if (replicas > 1) {
      // The controller's endpoint proxy balances over every replica that registered the endpoint.
      try {
        const cap = await client.mintEndpointToken(endpoint, { ttlSeconds: CAPABILITY_TTL_S.max });
        baseUrl = `${cap.url}/v1`;
        capabilityExpiresAtMs = cap.expiresAtMs;
      } catch (e) {
        log(
          `no endpoint proxy to balance the ${replicas} replicas (${e instanceof Error ? e.message : String(e)}): the URL is replica 0's; the others stay reachable at their own URLs`,
        );
      }
    }
    log(`inference service ${endpoint} ready at ${baseUrl}`);
    return {
      baseUrl,
      ...(capabilityExpiresAtMs !== undefined ? { capabilityExpiresAtMs } : {}),
      model: name,
      endpoint,
      replicaUrls,
      job,
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

function httpBase(address: string): string {
  return /^[a-z]+:\/\//i.test(address) ? address.replace(/\/$/, "") : `http://${address}`;
}

/** Terminates the job and waits (briefly) until iris reports it ended. */
async function terminate(job: Job): Promise<void> {
  try {
    await job.terminate();
    await job.wait({ timeoutMs: 30_000 });
  } catch {
    // Best effort: the job may already be gone, or the cluster stopping.
  }
}

/**
 * Waits until the job runs, every replica registered `endpointName` with status ready and answers
 * `/v1/models`; the error on timeout names the stage it was waiting for.
 */
async function waitReady(client: IrisClient, job: Job, endpointName: string, replicas: number, budgetMs: number): Promise<Endpoint[]> {
  const deadline = Date.now() + budgetMs;
  for (;;) {
    let waitingFor: string;
    const st: JobStatus = await job.status({ firstTasks: replicas });
    if (isTerminalJobState(st.state)) {
      const why = st.error ?? st.tasks.map((t) => t.error).find(Boolean) ?? "";
      throw new MarinError("STEP_FAILED", `inference job ${job.name} ended ${st.state} before it was ready${why ? `: ${why}` : ""}`);
    }
    const running = st.tasks.filter((t) => t.state === "RUNNING").length;
    if (running < replicas) {
      const pending = st.tasks.map((t) => t.pendingReason).find(Boolean);
      waitingFor = `job ${job.name} to run (${running} of ${replicas} tasks running${pending ? `; ${pending}` : ""})`;
    } else {
      const full = `${rootOf(job.name)}${endpointName}`;
      const all = (await client.listEndpoints(full)).filter((e) => e.name === full);
      const byReplica = new Map<string, Endpoint>();
      for (const e of all) if (!byReplica.has(e.metadata.replica ?? "0")) byReplica.set(e.metadata.replica ?? "0", e);
      const eps = [...byReplica.values()];
      const loaded = eps.filter((e) => e.metadata.status !== "loading");
      if (eps.length < replicas) waitingFor = `endpoint ${endpointName} (${eps.length} of ${replicas} replicas registered)`;
      else if (loaded.length < replicas) waitingFor = `the model to load (${loaded.length} of ${replicas} replicas of endpoint ${endpointName} ready)`;
      else {
        const answers = await Promise.all(loaded.map((e) => probeModels(httpBase(e.address))));
        const bad = answers.find((a) => a !== "ok");
        if (!bad) return loaded.sort((a, b) => Number(a.metadata.replica ?? 0) - Number(b.metadata.replica ?? 0));
        waitingFor = `GET /v1/models to answer (${bad})`;
      }
    }
    if (Date.now() >= deadline) {
      throw new MarinError("STEP_FAILED", `inference service ${endpointName} was not ready within ${Math.round(budgetMs / 1000)} s: still waiting for ${waitingFor}`);
    }
    await sleep(Math.min(POLL_MS, Math.max(1, deadline - Date.now())));
  }
}

/** The root job of a full name (`/u/a/b` → `/u/a`): relative endpoint names live under it. */
function rootOf(name: string): string {
  return `/${name.split("/").filter(Boolean).slice(0, 2).join("/")}/`;
}

/** "ok" when `/v1/models` answers 200 with a model list, else what happened. */
async function probeModels(base: string): Promise<string> {
  try {
    const r = await fetch(`${base}/v1/models`, { signal: AbortSignal.timeout(5000) });
    if (r.status !== 200) return `${base}/v1/models answered ${r.status}`;
    const body = ModelListSchema.safeParse(await r.json());
    if (!body.success) return `${base}/v1/models answered no model list (${body.error.issues[0]!.path.join(".") || "body"}: ${body.error.issues[0]!.message})`;
    return body.data.data.length > 0 ? "ok" : `${base}/v1/models listed no model`;
  } catch (e) {
    return `${base}/v1/models: ${e instanceof Error ? e.message : String(e)}`;
  }
}
