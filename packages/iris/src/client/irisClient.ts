// The client of the controller: submit and follow jobs, endpoints, metrics. What levanter, zephyr,
// marin, the CLI and tasks use.
import { randomBytes } from "node:crypto";
import os from "node:os";
import type * as grpc from "@grpc/grpc-js";
import { resolveToken } from "../credentials.ts";
import { IrisError } from "../errors.ts";
import type { JobStatus__Output } from "../internal/generated/iris/v1/JobStatus.ts";
import type { LogBatch__Output } from "../internal/generated/iris/v1/LogBatch.ts";
import { createControllerClient, toIrisError, unary } from "../internal/rpc.ts";
import type { ControllerServiceClient } from "../internal/rpc.ts";
import { endpointFromWire, jobSpecToWire, jobStatusFromWire, logEntryFromWire, metricPointFromWire, workerSummaryFromWire } from "../internal/codec.ts";
import { isBundleMissing, isTerminalJobState, jobSpecInputSchema } from "../jobSpec.ts";
import type { Endpoint, EndpointCapability, JobSpecInput, JobStatus, LogEntry, MetricPoint, WorkerSummary } from "../jobSpec.ts";
import { Backoff, sleep } from "../toolkit/backoff.ts";
import { formatZodIssues } from "../toolkit/zodIssues.ts";
import { packBundle, rebaseEntrypoint } from "./bundle.ts";

export type { WorkerSummary } from "../jobSpec.ts";

/** Options of {@link IrisClient.connect}. */
export interface IrisClientOptions {
  /**
   * Bearer token. Default: `IRIS_AUTH_TOKEN`, else the token a controller at this address minted
   * and recorded in this user's credentials file (credentials.ts); `""`: none.
   */
  token?: string | undefined;
  /**
   * User for bare job names (default: IRIS_USER, else the OS user). With a `token` and neither
   * this nor IRIS_USER, bare names go to the controller as they are and it places them under the
   * token's user.
   */
  user?: string | undefined;
  /** TLS: the CA (PEM file path or PEM text) the controller's certificate chains to; default `IRIS_TLS_CA`. */
  tlsCa?: string | undefined;
  /** Job whose root scopes relative endpoint names (default: IRIS_JOB_ID, set inside tasks). */
  scopeJob?: string | undefined;
}

/**
 * What `submit` ships as the job's code bundle: `true` packs the git work tree of the current
 * directory, a string (or `{ root }`) the work tree at that root; `false`/absent ships none
 * (inside a task that runs from a bundle, a job whose module or cwd lies in it inherits it).
 */
export type BundleOption = boolean | string | { root: string };

/** Options of {@link IrisClient.submit}. */
export interface SubmitOptions {
  /** Ship the workspace as a code bundle (see {@link BundleOption}). */
  bundle?: BundleOption | undefined;
}

/** A bundle the controller holds (from {@link IrisClient.uploadBundle}). */
export interface UploadedBundle {
  /** `sha256:<hex>`: pass it as a spec's `bundle`. */
  id: string;
  /** The root it was packed from (absolute). */
  root: string;
  sizeBytes: number;
  files: number;
  /** False when the controller had it already (nothing was sent but its id). */
  uploaded: boolean;
}

/** Bytes per UploadBundle message. */
const UPLOAD_CHUNK_BYTES = 1024 * 1024;

/** Jobs per ListJobs page and tasks per task page the client asks for (the controllers' largest). */
const PAGE_SIZE = 1000;
const TASK_PAGE_SIZE = 10_000;

const RETRYABLE: ReadonlySet<string> = new Set(["UNAVAILABLE", "CANCELLED", "INTERNAL", "UNKNOWN"]);
/** Retries of a lookup, a watch or a log follow: 100 ms, doubling, at most 2 s apart. */
const RETRY_BACKOFF = { initialMs: 100, maxMs: 2000 };

/** The user bare job names belong to: IRIS_USER, else the OS user, else "root". */
export function defaultIrisUser(): string {
  let u = process.env.IRIS_USER;
  if (!u) {
    try {
      u = os.userInfo().username;
    } catch {
      u = "root";
    }
  }
  return u.replace(/[^A-Za-z0-9._-]/g, "_") || "root";
}

/** A handle to one job (by name; pinned to one submission when it came from `submit`). */
export interface Job {
  /** Full name, "/user/name". */
  readonly name: string;
  /** The submission this handle follows ("" = the latest of the name). */
  readonly instanceId: string;
  /**
   * Resolves with the status at the first terminal state (any), following WatchJob; `onStatus`
   * sees every status on the way (as tasks start and finish), the final one included. The
   * resolved status lists every task; those `onStatus` sees list the first 1,000 (`taskCounts`
   * counts them all).
   */
  wait(opts?: { timeoutMs?: number; onStatus?: (status: JobStatus) => void }): Promise<JobStatus>;
  /** The status with every task, or (`firstTasks`) with the first page of tasks only. */
  status(opts?: { firstTasks?: number }): Promise<JobStatus>;
  /**
   * The tasks' return values: entry i is task i's module entrypoint return value as parsed JSON
   * (undefined where it returned none). Rejects with `FAILED_PRECONDITION` naming the job and its
   * state unless the job SUCCEEDED.
   */
  results(): Promise<unknown[]>;
  /** The job's log lines in order; with `follow`, new lines as printed until the job ends. */
  logs(opts?: { follow?: boolean; taskIndex?: number }): AsyncIterable<LogEntry>;
  terminate(): Promise<void>;
}

/**
 * A connection to an iris controller.
 *
 * @example
 * const client = IrisClient.connect("127.0.0.1:7000", { token });
 * const job = await client.submit({ name: "hello", entrypoint: { command: ["echo", "hi"] } });
 * const status = await job.wait();
 */
export class IrisClient {
  readonly address: string;
  /** The user bare names resolve under (unless the controller places them: see IrisClientOptions.user). */
  readonly user: string;
  /** Whether bare names are sent as they are, for the controller to place under the token's user. */
  private readonly serverPlacesNames: boolean;
  readonly scopeJob: string;
  /** The underlying generated gRPC client (for tools that need an RPC not wrapped here). */
  readonly rpc: ControllerServiceClient;
  /** Uploads by root (`""`: the current work tree), with the id once stored. */
  readonly #bundles = new Map<string, { upload: Promise<UploadedBundle>; id?: string }>();

  private constructor(address: string, opts: IrisClientOptions) {
    this.address = address;
    const claimed = opts.user ?? (process.env.IRIS_USER || undefined);
    const token = resolveToken(address, opts.token);
    this.serverPlacesNames = claimed === undefined && opts.token !== undefined && opts.token !== "";
    this.user = claimed ?? defaultIrisUser();
    this.scopeJob = opts.scopeJob ?? process.env.IRIS_JOB_ID ?? "";
    this.rpc = createControllerClient(address, { token, tlsCa: opts.tlsCa });
  }

  /** Connects (lazily: the first call dials) to the controller at `address` ("host:port"). */
  static connect(address: string, opts: IrisClientOptions = {}): IrisClient {
    return new IrisClient(address, opts);
  }

  /**
   * The full name of `name`: as given when it starts with "/", else "/<user>/<name>" (or, when the
   * controller places bare names, as given).
   */
  resolveName(name: string): string {
    return name.startsWith("/") || this.serverPlacesNames ? name : `/${this.user}/${name}`;
  }

  /**
   * Submits a spec under its full name. The controller validates it (once, with zod): a bad spec
   * rejects with INVALID_ARGUMENT naming the field.
   */
  async submit(spec: JobSpecInput, opts: SubmitOptions = {}): Promise<Job> {
    const callSite = new Error("call site");
    // Values the wire would coerce (a NaN cpu becomes 0, "yes" becomes true) are refused here.
    const checked = jobSpecInputSchema.safeParse(spec);
    const issues = checked.success ? [] : checked.error.issues.filter((i) => i.code !== "unrecognized_keys");
    if (issues.length > 0) throw new IrisError("INVALID_ARGUMENT", `invalid job spec: ${formatZodIssues(issues)}`);
    const generated = `job-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
    const name = this.resolveName(spec.name ? spec.name : generated);
    try {
      const bundled = await this.#withBundle(spec, opts.bundle);
      try {
        const r = await unary(this.rpc, "launchJob", { spec: jobSpecToWire(bundled, name) });
        return this.handle(r.name, r.instanceId);
      } catch (e) {
        // The controller removed the bundle as unused since this client uploaded it: forget the
        // upload, and when submit made it, upload again and retry once.
        if (bundled.bundle === undefined || !isBundleMissing(e, bundled.bundle)) throw e;
        this.#forgetBundle(bundled.bundle);
        if (spec.bundle !== undefined || opts.bundle === undefined || opts.bundle === false) throw e;
        const again = await this.#withBundle(spec, opts.bundle);
        const r = await unary(this.rpc, "launchJob", { spec: jobSpecToWire(again, name) });
        return this.handle(r.name, r.instanceId);
      }
    } catch (e) {
      throw toIrisError(e, callSite);
    }
  }

  /** Drops every cached upload of bundle `id`, so that the next use uploads it again. */
  #forgetBundle(id: string): void {
    for (const [key, entry] of this.#bundles) if (entry.id === id) this.#bundles.delete(key);
  }

  /**
   * Packs the git-tracked files of `root` (default: the work tree of the current directory) plus
   * its lockfile into a content-addressed bundle and uploads it, unless the controller holds it
   * already (deduplicated by hash; each root is packed once per client).
   *
   * @example
   * const b = await client.uploadBundle();
   * await client.submit({ entrypoint: { module: "jobs/train.ts", export: "main" }, bundle: b.id });
   */
  uploadBundle(root?: string): Promise<UploadedBundle> {
    const key = root ?? "";
    let entry = this.#bundles.get(key);
    if (entry === undefined) {
      const e: { upload: Promise<UploadedBundle>; id?: string } = { upload: this.#upload(root) };
      this.#bundles.set(key, e);
      e.upload.then(
        (b) => (e.id = b.id),
        () => {
          if (this.#bundles.get(key) === e) this.#bundles.delete(key);
        },
      );
      entry = e;
    }
    return entry.upload;
  }

  async #upload(root: string | undefined): Promise<UploadedBundle> {
    const packed = await packBundle(root);
    const base = { id: packed.id, root: packed.root, sizeBytes: packed.bytes.length, files: packed.files };
    try {
      await unary(this.rpc, "getBundle", { bundleId: packed.id });
      return { ...base, uploaded: false };
    } catch (e) {
      if (!(e instanceof IrisError) || e.code !== "NOT_FOUND") throw e;
    }
    const callSite = new Error("call site");
    const info = await new Promise<{ uploaded: boolean }>((resolve, reject) => {
      const call = this.rpc.uploadBundle((err, res) => (err ? reject(toIrisError(err, callSite)) : resolve(res!)));
      call.write({ bundleId: packed.id, sizeBytes: packed.bytes.length });
      for (let off = 0; off < packed.bytes.length; off += UPLOAD_CHUNK_BYTES) {
        call.write({ data: packed.bytes.subarray(off, off + UPLOAD_CHUNK_BYTES) });
      }
      call.end();
    });
    return { ...base, uploaded: info.uploaded };
  }

  async #withBundle(spec: JobSpecInput, option: BundleOption | undefined): Promise<JobSpecInput> {
    if (spec.bundle !== undefined || option === false) return spec;
    if (option === undefined) {
      // Inside a task run from a bundle: a job whose code lies in that bundle runs from it too.
      const id = process.env.IRIS_BUNDLE_ID;
      const dir = process.env.IRIS_BUNDLE_DIR;
      if (!id || !dir) return spec;
      const { entrypoint, changed } = rebaseEntrypoint(spec.entrypoint, dir);
      return changed ? { ...spec, entrypoint, bundle: id } : spec;
    }
    const root = option === true ? undefined : typeof option === "string" ? option : option.root;
    const b = await this.uploadBundle(root);
    return { ...spec, entrypoint: rebaseEntrypoint(spec.entrypoint, b.root).entrypoint, bundle: b.id };
  }

  /**
   * Drains a worker: nothing new is placed on it, its attempts end PREEMPTED and run elsewhere,
   * and it deregisters once idle. Resolves with the number of attempts preempted.
   */
  async drainWorker(workerId: string): Promise<number> {
    const r = await unary(this.rpc, "drainWorker", { workerId });
    return r.preempted;
  }

  /** A handle to the latest submission of `name` (bare names resolve under the user). */
  job(name: string): Job {
    return this.handle(this.resolveName(name), "");
  }

  /**
   * Latest submissions of the jobs at or below `prefix` (default: all), oldest first, as
   * summaries: `taskCounts` and `numTasks` say how their tasks stand, `tasks` is empty
   * (`job(name).status()` lists them). Follows ListJobs' pages.
   */
  async list(opts: { prefix?: string } = {}): Promise<JobStatus[]> {
    const prefix = opts.prefix ? this.resolveName(opts.prefix) : "";
    const out: JobStatus[] = [];
    let pageToken = "";
    do {
      const r = await unary(this.rpc, "listJobs", { prefix, pageSize: PAGE_SIZE, pageToken });
      for (const j of r.jobs) out.push(jobStatusFromWire(j));
      pageToken = r.nextPageToken;
    } while (pageToken !== "");
    return out;
  }

  /** Kills a job's tasks and its child jobs. */
  async terminate(name: string): Promise<void> {
    await unary(this.rpc, "terminateJob", { name: this.resolveName(name) });
  }

  /** The status text and metrics series of a task's attempt (default: the current one). */
  async getTaskMetrics(taskId: string, opts: { attempt?: number } = {}): Promise<{ statusText: string; points: MetricPoint[] }> {
    const r = await unary(this.rpc, "getTaskMetrics", { taskId, attempt: opts.attempt ?? 0 });
    return { statusText: r.statusText, points: r.points.map(metricPointFromWire) };
  }

  /** Records a status text and a metrics point (with "step") for a task's attempt. */
  async reportTaskStatus(taskId: string, attempt: number, statusText: string, metrics: Record<string, number> = {}): Promise<void> {
    await unary(this.rpc, "reportTaskStatus", { taskId, attempt, statusText, metrics });
  }

  /**
   * Looks an endpoint up; with `timeoutMs`, retries with backoff (100 ms → 2 s) until it appears.
   * Relative names are scoped to the root job of `scopeJob`.
   */
  async resolveEndpoint(name: string, opts: { timeoutMs?: number } = {}): Promise<Endpoint> {
    const callSite = new Error("call site");
    const deadline = Date.now() + (opts.timeoutMs ?? 0);
    const backoff = new Backoff(RETRY_BACKOFF);
    for (;;) {
      try {
        return endpointFromWire(await unary(this.rpc, "resolveEndpoint", { name, scopeJob: this.scopeJob }));
      } catch (e) {
        const err = toIrisError(e, callSite);
        if ((err.code !== "NOT_FOUND" && err.code !== "UNAVAILABLE") || Date.now() + backoff.delayMs > deadline) throw err;
      }
      await sleep(backoff.next());
    }
  }

  /**
   * Registers an endpoint. With `attemptId` ("/user/job/3:1") it is leased to that attempt and
   * removed when the attempt ends. Returns its id for {@link unregisterEndpoint}.
   */
  async registerEndpoint(name: string, address: string, opts: { metadata?: Record<string, string>; attemptId?: string } = {}): Promise<Endpoint & { endpointId: string }> {
    const r = await unary(this.rpc, "registerEndpoint", {
      name,
      address,
      metadata: opts.metadata ?? {},
      attemptId: opts.attemptId ?? "",
      scopeJob: this.scopeJob,
    });
    return { ...endpointFromWire(r), endpointId: r.endpointId };
  }

  /** Removes an endpoint registered with {@link registerEndpoint}. */
  async unregisterEndpoint(endpointId: string): Promise<void> {
    await unary(this.rpc, "unregisterEndpoint", { endpointId });
  }

  /** Endpoints whose full name starts with `prefix` (relative prefixes are scoped). */
  async listEndpoints(prefix = ""): Promise<Endpoint[]> {
    const r = await unary(this.rpc, "listEndpoints", { prefix, scopeJob: this.scopeJob });
    return r.endpoints.map(endpointFromWire);
  }

  /**
   * A time-limited capability URL for one endpoint (only its owner job tree may mint one):
   * `url` + the service's path reaches it through the controller's HTTP proxy without the
   * cluster token. `ttlSeconds` defaults to 1 h and is clamped to [60 s, 24 h].
   */
  async mintEndpointToken(name: string, opts: { ttlSeconds?: number } = {}): Promise<EndpointCapability> {
    const r = await unary(this.rpc, "mintEndpointToken", { name, scopeJob: this.scopeJob, ttlSeconds: opts.ttlSeconds ?? 0 });
    return { name: r.name, token: r.token, url: r.url, path: r.path, expiresAtMs: Number(r.expiresAtMs) };
  }

  /** Registered workers and their load. */
  /**
   * The autoscaler's status (`iris cluster status --json`: per group its workers by state, demand,
   * backoff and last decisions), as the controller's JSON. FAILED_PRECONDITION without an autoscaler.
   */
  async clusterStatus(): Promise<unknown> {
    const r = await unary(this.rpc, "getClusterStatus", {});
    return JSON.parse(r.statusJson) as unknown;
  }

  /** Drains and stops every worker the autoscaler's providers started (admins only). Returns how many. */
  async clusterDown(): Promise<number> {
    const r = await unary(this.rpc, "clusterDown", {});
    return r.stopped;
  }

  async listWorkers(): Promise<WorkerSummary[]> {
    const r = await unary(this.rpc, "listWorkers", {});
    return r.workers.map(workerSummaryFromWire);
  }

  /** Closes the channel. */
  close(): void {
    this.rpc.close();
  }

  private handle(name: string, instanceId: string): Job {
    return new JobHandle(this, name, instanceId);
  }
}

class JobHandle implements Job {
  readonly name: string;
  readonly instanceId: string;
  private readonly client: IrisClient;

  constructor(client: IrisClient, name: string, instanceId: string) {
    this.client = client;
    this.name = name;
    this.instanceId = instanceId;
  }

  /**
   * The job's status with every task (the client follows the controller's task pages), or with
   * only the first `firstTasks` tasks (one page, at most the controller's page limit).
   */
  async status(opts: { firstTasks?: number } = {}): Promise<JobStatus> {
    if (opts.firstTasks !== undefined) {
      return jobStatusFromWire(await unary(this.client.rpc, "getJob", { name: this.name, instanceId: this.instanceId, taskPageSize: opts.firstTasks }));
    }
    return this.#withAllTasks(await unary(this.client.rpc, "getJob", { name: this.name, instanceId: this.instanceId, taskPageSize: TASK_PAGE_SIZE }));
  }

  /** A status whose tasks are one page of several, completed with the other pages (ListTasks). */
  async #withAllTasks(first: JobStatus__Output): Promise<JobStatus> {
    if (first.nextTaskPageToken === "") return jobStatusFromWire(first);
    const tasks = [...first.tasks];
    let taskPageToken = first.nextTaskPageToken;
    while (taskPageToken !== "") {
      const r = await unary(this.client.rpc, "listTasks", { name: this.name, instanceId: first.instanceId, taskPageSize: TASK_PAGE_SIZE, taskPageToken });
      tasks.push(...r.tasks);
      taskPageToken = r.nextPageToken;
    }
    return jobStatusFromWire({ ...first, tasks, nextTaskPageToken: "" });
  }

  async terminate(): Promise<void> {
    await unary(this.client.rpc, "terminateJob", { name: this.name });
  }

  async results(): Promise<unknown[]> {
    const st = await this.status();
    if (st.state !== "SUCCEEDED") {
      throw new IrisError("FAILED_PRECONDITION", `job ${st.name} (instance ${st.instanceId}) is ${st.state}, not SUCCEEDED: it has no results${st.error ? ` (${st.error})` : ""}`);
    }
    const out: unknown[] = Array.from({ length: st.tasks.length }, () => undefined);
    for (const t of st.tasks) out[t.index] = t.result;
    return out;
  }

  // Follows WatchJob; reconnects (with backoff) when the controller goes away, so a wait spans a
  // controller restart. `onStatus` sees every status the watch delivers (task by task progress),
  // the final one included.
  async wait(opts: { timeoutMs?: number; onStatus?: (status: JobStatus) => void } = {}): Promise<JobStatus> {
    const callSite = new Error("call site");
    const deadline = opts.timeoutMs !== undefined ? Date.now() + opts.timeoutMs : Infinity;
    const backoff = new Backoff(RETRY_BACKOFF);
    for (;;) {
      let last: JobStatus__Output | undefined;
      const options: grpc.CallOptions = Number.isFinite(deadline) ? { deadline } : {};
      const stream = this.client.rpc.watchJob({ name: this.name, instanceId: this.instanceId }, options);
      try {
        for await (const st of stream as AsyncIterable<JobStatus__Output>) {
          last = st;
          backoff.reset();
          opts.onStatus?.(jobStatusFromWire(st));
        }
        if (last && isTerminalJobState(last.state)) return await this.#withAllTasks(last);
      } catch (e) {
        const err = toIrisError(e, callSite);
        if (err.code === "DEADLINE_EXCEEDED") {
          throw new IrisError("DEADLINE_EXCEEDED", `job ${this.name} did not finish within ${opts.timeoutMs} ms`, { cause: e });
        }
        if (!RETRYABLE.has(err.code)) throw err;
      }
      if (Date.now() + backoff.delayMs > deadline) throw new IrisError("DEADLINE_EXCEEDED", `job ${this.name} did not finish within ${opts.timeoutMs} ms`);
      await sleep(backoff.next());
    }
  }

  logs(opts: { follow?: boolean; taskIndex?: number } = {}): AsyncIterable<LogEntry> {
    const client = this.client;
    const name = this.name;
    const instanceId = this.instanceId;
    return {
      async *[Symbol.asyncIterator]() {
        const callSite = new Error("call site");
        let afterSeq = 0;
        const backoff = new Backoff(RETRY_BACKOFF);
        for (;;) {
          const stream = client.rpc.streamLogs({
            name,
            instanceId,
            follow: opts.follow ?? false,
            afterSeq,
            taskIndex: opts.taskIndex ?? 0,
            filterTask: opts.taskIndex !== undefined,
          });
          try {
            for await (const batch of stream as AsyncIterable<LogBatch__Output>) {
              for (const e of batch.entries) {
                afterSeq = e.seq;
                yield logEntryFromWire(e);
              }
              backoff.reset();
            }
            return;
          } catch (e) {
            const err = toIrisError(e, callSite);
            if (!opts.follow || !RETRYABLE.has(err.code)) throw err;
          } finally {
            stream.cancel();
          }
          await sleep(backoff.next());
        }
      },
    };
  }
}
