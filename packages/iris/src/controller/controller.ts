// The controller process: ControllerState served over gRPC (both services on one port), the
// liveness/scheduling tick, and the streams (WatchJob, StreamLogs, WatchAssignments).
import * as grpc from "@grpc/grpc-js";
import { mkdirSync } from "node:fs";
import type http from "node:http";
import path from "node:path";
import { IrisError, grpcStatusOf } from "../errors.ts";
import type { ControllerServiceHandlers } from "../internal/generated/iris/v1/ControllerService.ts";
import type { WorkerControlServiceHandlers } from "../internal/generated/iris/v1/WorkerControlService.ts";
import type { JobStatus } from "../internal/generated/iris/v1/JobStatus.ts";
import { loadIrisProto } from "../internal/rpc.ts";
import { TaskTokens, checkMaySubmit, checkOwnWorker, createAuthenticator, mayCall, mayControlJob, placeJobName, principalOfCall, workerSessionRefusal } from "./auth.ts";
import { WorkerCredentials } from "./workerCredentials.ts";
import type { Authenticator, Principal } from "./auth.ts";
import type { EndpointCapability } from "../jobSpec.ts";
import { EndpointProxy } from "../http/endpointProxy.ts";
import { LIMITS } from "../jobSpec.ts";
import { parseTaskId } from "./stateRows.ts";
import { addDashboardRoutes } from "../dashboard/server.ts";
import { addApiRoutes, listenHttp } from "../http/apiRoutes.ts";
import { hostChecker } from "../http/hosts.ts";
import { sessionsOf } from "../http/principal.ts";
import { HttpRouter } from "../http/router.ts";
import { credentialsFilePath, mintAdminToken, removeCredentials, saveCredentials } from "../credentials.ts";
import { capacityFromWire, jobSpecFromWire } from "../internal/codec.ts";
import { bundleMissingMessage, isTerminalJobState, normalizeJobSpec } from "../jobSpec.ts";
import { ControllerState } from "./controllerState.ts";
import type { Clock } from "./controllerState.ts";
import { BundleStore, DEFAULT_BUNDLE_GRACE_MS, DEFAULT_BUNDLE_KEEP } from "./bundleStore.ts";
import { fetchBundleHandler, uploadBundleHandler } from "./bundleRpc.ts";
import { openDb } from "./db.ts";
import { ControllerMetrics } from "./rpcMetrics.ts";
import { PrometheusText, sampleLine } from "../toolkit/prometheus.ts";
import type { Db } from "./db.ts";

/** Options of {@link Controller.start}. */
export interface ControllerOptions {
  /** Port to listen on (0 = any free port). */
  port?: number;
  /**
   * Interface to bind (default "127.0.0.1"). A non-loopback address without auth (no `token`, no
   * `authFile`) is refused with FAILED_PRECONDITION unless `insecure` is set.
   */
  host?: string;
  /** Allows a non-loopback bind without auth; logs a warning at start and on every worker registration. */
  insecure?: boolean;
  /** An auth file (YAML `tokens: [{ user, role, sha256 }]`), reloaded on change; see auth.ts. */
  authFile?: string | undefined;
  /** TLS for gRPC and HTTP: PEM certificate chain and private key (default: plaintext). */
  tls?: { cert: string | Buffer; key: string | Buffer } | undefined;
  /** How long an endpoint registered outside any attempt lives (default 10 min). */
  endpointTtlMs?: number;
  /** Where warnings go (default: stderr). */
  log?: (line: string) => void;
  /** SQLite database file (created with its directory if missing). */
  dbPath: string;
  /**
   * The `--token` shorthand: one admin identity (user `admin`). With neither this nor `authFile`,
   * a loopback controller mints a random admin token (`Controller.adminToken`) and records it in
   * the per-user credentials file (see credentials.ts); a non-loopback one needs `insecure`.
   */
  token?: string | undefined;
  /** Auth off (`--no-auth`): every caller is the admin; logs a warning. HTTP answers only its own `Host` names (else 421). */
  noAuth?: boolean;
  /**
   * Where a minted token is recorded (default: the per-user credentials file,
   * `$IRIS_CREDENTIALS_FILE` or `~/.config/iris/credentials.json`); false: nowhere.
   */
  credentialsFile?: string | false;
  /** A worker silent for this long is lost and its attempts retried elsewhere (default 30 s). */
  workerTimeoutMs?: number;
  /**
   * With no worker registered, a task waits this long before it is UNSCHEDULABLE (default 5 min;
   * 0 = forever); a job's own `schedulingTimeoutMs` wins.
   */
  schedulingTimeoutMs?: number;
  /** How often workers reconcile without a notice (default min(1 s, workerTimeout / 3)). */
  reconcileIntervalMs?: number;
  /** Points kept per attempt's metrics series (default 10,000). */
  metricsLimit?: number;
  /**
   * Also serve HTTP on this port (0 = any free port; default: none): `POST /api/<Method>` with
   * the request as JSON runs the same handler as the ControllerService RPC of that name (same
   * bearer token), `GET /metrics` is Prometheus text, and `/` is the web dashboard.
   */
  httpPort?: number;
  /**
   * The endpoint proxy's own port (`/proxy`, `/cap`), its own origin so that what a service
   * returns never runs on the dashboard's (default: any free port, whenever `httpPort` is given).
   */
  proxyPort?: number;
  /** Where uploaded code bundles are kept (default: `bundles/` beside the database). */
  bundleDir?: string;
  /** The largest bundle this controller stores, in bytes (default 1 GiB); bigger: RESOURCE_EXHAUSTED. */
  maxBundleBytes?: number;
  /**
   * Bundles kept beyond those a job that has not ended runs from: the most recently used (stored,
   * looked up or fetched); older ones are removed (default 32; 0 keeps every bundle).
   */
  bundleKeep?: number;
  /** A bundle used within this long is never removed (default 10 minutes). */
  bundleGraceMs?: number;
  clock?: Clock;
}

type Listener = () => void;

/** What the controller asks of an attached autoscaler (src/autoscaler/autoscaler.ts). */
export interface ClusterHooks {
  /** Its status, serialisable as JSON. */
  status(): unknown;
  /** Drains and stops every provided worker; resolves to how many. */
  down(): Promise<number>;
}

const NO_AUTOSCALER = "this controller runs no autoscaler: start it with iris cluster up --config FILE";

function rpcError(e: unknown): Partial<grpc.StatusObject> {
  if (e instanceof IrisError) return { code: grpcStatusOf(e.code), details: e.message };
  return { code: grpc.status.INTERNAL, details: e instanceof Error ? e.message : String(e) };
}

/** The task page a GetJobRequest asks for. */
function taskPage(req: { taskPageSize: number; taskPageToken: string }): { pageSize: number; pageToken: string } {
  return { pageSize: req.taskPageSize, pageToken: req.taskPageToken };
}

/** How often the controller looks for stored bundles nothing needs any more. */
const BUNDLE_PRUNE_INTERVAL_MS = 60_000;

/** How long after a job ended log reads wait for its attempts' last lines. */
const LOG_GRACE_MS = 3000;

const UNAUTHENTICATED = { code: grpc.status.UNAUTHENTICATED, details: "missing or invalid bearer token" };

function denied(message: string): IrisError {
  return new IrisError("PERMISSION_DENIED", message);
}

/**
 * Why the controller must not listen on `host` (a non-loopback address with auth off and no
 * `insecure`), or undefined when it may.
 */
export function bindRefusal(host: string, authOn: boolean, insecure: boolean): string | undefined {
  if (authOn || insecure || isLoopbackHost(host)) return undefined;
  return (
    `refusing to listen on ${host} with auth off: anyone who can reach it could run commands as this user. ` +
    `Give --token or --auth-file, bind 127.0.0.1, or pass --insecure to run it open anyway`
  );
}

/** Whether `host` is a loopback address (what the controller may bind without auth). */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * The iris controller: owns the cluster state (one SQLite file) and serves ControllerService
 * (clients) and WorkerControlService (workers) on one gRPC port.
 *
 * @example
 * const c = await Controller.start({ port: 0, dbPath: "/tmp/iris/controller.sqlite" });
 * console.log(c.address); await c.stop();
 */
export class Controller {
  /** "host:port" clients dial (127.0.0.1 when bound to all interfaces). */
  readonly address: string;
  readonly port: number;
  /** "host:port" of the HTTP API, when `httpPort` was given. */
  httpAddress: string | undefined;
  /** "host:port" of the endpoint proxy's own origin, when `httpPort` was given. */
  proxyAddress: string | undefined;
  /** The admin token this controller minted (started without credentials on loopback), else undefined. */
  adminToken: string | undefined;
  /** The credentials file the minted token was recorded in, if any. */
  credentialsFile: string | undefined;
  private http: http.Server | undefined;
  private proxyServer: http.Server | undefined;
  private tlsOn = false;
  readonly state: ControllerState;
  /** The uploaded code bundles. */
  readonly bundles: BundleStore;
  readonly #bundlePolicy: { keep: number; graceMs: number };
  readonly #now: () => number;
  #lastBundlePrune = -Infinity;
  private readonly server: grpc.Server;
  private readonly db: Db;
  /** Who is calling (every face asks it: gRPC, the HTTP API, extra routes). */
  readonly auth: Authenticator;
  /**
   * Credentials bound to one worker (workerCredentials.ts): `mint(workerId, { ttlMs })` makes a
   * single-use registration credential for a named worker in advance, `revoke(workerId)` ends its
   * credentials and its registration. Worker sessions opened at RegisterWorker live here too.
   */
  readonly workerCredentials: WorkerCredentials;
  private readonly taskTokens: TaskTokens | undefined;
  private readonly log: (line: string) => void;
  private readonly insecure: boolean;
  /** `/proxy/<endpoint>/…` and capability URLs (endpointProxy.ts). */
  private readonly endpointProxy: EndpointProxy;
  private readonly timer: NodeJS.Timeout;
  private readonly jobListeners = new Map<string, Set<Listener>>();
  private readonly logListeners = new Map<string, Set<Listener>>();
  private readonly workerStreams = new Map<string, Set<grpc.ServerWritableStream<unknown, unknown>>>();
  /** Told about every job and worker change (the dashboard's live views). */
  private readonly changeListeners = new Set<(kind: "job" | "worker", id: string) => void>();
  /** RPC counts and latencies, scheduler cycle time (`/metrics`). */
  private readonly metrics = new ControllerMetrics();
  /** The autoscaler of `iris cluster up`, when one is attached (GetClusterStatus, ClusterDown). */
  private cluster: ClusterHooks | undefined;
  private generation = 0;
  private scheduleQueued = false;
  private stopped = false;

  private constructor(
    server: grpc.Server,
    db: Db,
    state: ControllerState,
    port: number,
    host: string,
    auth: { auth: Authenticator; taskTokens: TaskTokens | undefined; workerCredentials: WorkerCredentials; insecure: boolean; log: (line: string) => void },
    tickMs: number,
    now: () => number,
    bundles: BundleStore,
    bundlePolicy: { keep: number; graceMs: number },
  ) {
    this.server = server;
    this.bundles = bundles;
    this.#bundlePolicy = bundlePolicy;
    this.#now = now;
    this.db = db;
    this.state = state;
    this.port = port;
    this.address = `${host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host}:${port}`;
    this.auth = auth.auth;
    this.taskTokens = auth.taskTokens;
    this.workerCredentials = auth.workerCredentials;
    this.workerCredentials.setHooks({
      sessionEnded: (id) => this.endWorkerStreams(id),
      revoked: (id) => {
        state.deregisterWorker(id);
        this.scheduleSoon();
      },
    });
    this.insecure = auth.insecure;
    this.log = auth.log;
    this.endpointProxy = new EndpointProxy({
      mayControl: (p, owner) => mayControlJob(p as Principal, owner),
      resolve: (full) => state.resolveEndpoint(full, ""),
      resolveAll: (full) => state.resolveEndpoints(full, ""),
      ownerOf: (endpoint) => state.endpointOwnerOf(String(endpoint.name)),
      exists: (full) => {
        try {
          return state.resolveEndpoint(full, "") !== undefined;
        } catch {
          return false;
        }
      },
      proxyOrigin: () => this.proxyOrigin,
      dashboardOrigin: () => this.httpOrigin,
      now,
    });
    this.timer = setInterval(() => this.tick(), tickMs);
    this.timer.unref();
  }

  /** Opens the database, starts serving, and resumes the state found there. */
  static async start(opts: ControllerOptions): Promise<Controller> {
    mkdirSync(path.dirname(path.resolve(opts.dbPath)), { recursive: true });
    const db = openDb(opts.dbPath);
    const workerTimeoutMs = opts.workerTimeoutMs ?? 30_000;
    const reconcileIntervalMs = opts.reconcileIntervalMs ?? Math.max(100, Math.min(1000, Math.floor(workerTimeoutMs / 3)));
    const ref: { self?: Controller } = {};
    const state = new ControllerState(db, {
      workerTimeoutMs,
      ...(opts.schedulingTimeoutMs !== undefined ? { schedulingTimeoutMs: opts.schedulingTimeoutMs } : {}),
      ...(opts.metricsLimit !== undefined ? { metricsLimit: opts.metricsLimit } : {}),
      ...(opts.endpointTtlMs !== undefined ? { endpointTtlMs: opts.endpointTtlMs } : {}),
      ...(opts.clock ? { clock: opts.clock } : {}),
      listener: {
        jobChanged: (id) => ref.self?.onJobChanged(id),
        workerChanged: (id) => ref.self?.onWorkerChanged(id),
        logsAppended: (id) => ref.self?.fire(ref.self.logListeners, id),
      },
    });
    const host = opts.host ?? "127.0.0.1";
    const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
    let auth: Authenticator;
    let taskTokens: TaskTokens | undefined;
    let workerCredentials: WorkerCredentials;
    let token = opts.token || undefined;
    let minted: string | undefined;
    try {
      const given = token !== undefined || Boolean(opts.authFile);
      if (opts.noAuth && given) throw new IrisError("INVALID_ARGUMENT", "--no-auth turns auth off: give it without --token or --auth-file");
      // Auth on by default: a loopback controller started without credentials mints its own admin
      // token (a non-loopback one still needs --token, --auth-file or --insecure).
      if (!given && !opts.noAuth && isLoopbackHost(host)) token = minted = mintAdminToken(state.taskTokenSecret());
      const authOn = token !== undefined || Boolean(opts.authFile);
      if (authOn) taskTokens = new TaskTokens(state.taskTokenSecret(), (uid) => state.attemptForToken(uid));
      workerCredentials = new WorkerCredentials(db, opts.clock ? () => opts.clock!.now() : Date.now);
      auth = createAuthenticator({ token, authFile: opts.authFile, taskTokens, workerCredentials, log });
      const refusal = bindRefusal(host, auth.enabled, opts.insecure === true);
      if (refusal !== undefined) throw new IrisError("FAILED_PRECONDITION", refusal);
    } catch (e) {
      db.close();
      throw e;
    }
    const insecure = opts.insecure === true && !auth.enabled;
    if (opts.noAuth) log(`iris controller: WARNING: auth is OFF (--no-auth): any process or user on this machine that can reach ${host} can run commands as this user`);
    if (insecure) log(`iris controller: WARNING: auth is off (--insecure) on ${host}: anyone who can reach this port can run commands as this user`);
    const server = new grpc.Server({ "grpc.max_receive_message_length": LIMITS.rpcMessageBytes });
    const creds = opts.tls
      ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(opts.tls.cert), private_key: Buffer.from(opts.tls.key) }], false)
      : grpc.ServerCredentials.createInsecure();
    let port: number;
    try {
      port = await new Promise<number>((resolve, reject) => server.bindAsync(`${host}:${opts.port ?? 0}`, creds, (err, p) => (err ? reject(err) : resolve(p))));
    } catch (e) {
      db.close();
      throw e;
    }
    const bundles = new BundleStore(opts.bundleDir ?? path.join(path.dirname(path.resolve(opts.dbPath)), "bundles"), opts.maxBundleBytes);
    const self = new Controller(server, db, state, port, host, { auth, taskTokens, workerCredentials, insecure, log }, Math.max(50, Math.min(500, Math.floor(workerTimeoutMs / 4))), opts.clock ? () => opts.clock!.now() : Date.now, bundles, {
      keep: opts.bundleKeep ?? DEFAULT_BUNDLE_KEEP,
      graceMs: opts.bundleGraceMs ?? DEFAULT_BUNDLE_GRACE_MS,
    });
    const proto = loadIrisProto();
    const handlers = self.metrics.instrument(self.controllerHandlers());
    server.addService(proto.ControllerService.service, handlers);
    server.addService(proto.WorkerControlService.service, self.metrics.instrument(self.workerHandlers(reconcileIntervalMs, workerTimeoutMs)));
    self.adminToken = minted;
    try {
      if (opts.httpPort !== undefined) await self.serveHttp(host, opts.httpPort, opts.proxyPort ?? 0, handlers, opts.tls);
      if (minted !== undefined && opts.credentialsFile !== false) {
        const file = opts.credentialsFile ?? credentialsFilePath();
        saveCredentials(self.address, { token: minted, http: self.httpAddress, proxy: self.proxyOrigin, pid: process.pid, createdAtMs: Date.now() }, file);
        self.credentialsFile = file;
      }
    } catch (e) {
      await self.stop();
      throw e;
    }
    ref.self = self;
    self.pruneBundles();
    self.scheduleSoon();
    return self;
  }

  /** Stops serving (streams are cancelled) and closes the database. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    this.server.forceShutdown();
    for (const server of [this.http, this.proxyServer]) {
      server?.closeAllConnections();
      server?.close();
    }
    if (this.credentialsFile && this.adminToken) removeCredentials(this.address, this.adminToken, this.credentialsFile);
    this.db.close();
  }

  /**
   * A capability URL for endpoint `name` (full, or relative to `scopeJob`'s root) minted for
   * `principal` — what the MintEndpointToken RPC does, for server-side callers (the dashboard).
   * PERMISSION_DENIED unless the principal may control the endpoint's owner job.
   */
  mintEndpointCapability(principal: Principal, name: string, ttlSeconds = 0, scopeJob = ""): EndpointCapability {
    return this.endpointProxy.mint(principal, this.state.resolveEndpoint(name, scopeJob), ttlSeconds);
  }

  /** Attaches an autoscaler: GetClusterStatus and ClusterDown answer through it. */
  attachCluster(hooks: ClusterHooks): void {
    this.cluster = hooks;
  }

  /** `http(s)://host:port` of the dashboard and HTTP API, when served. */
  get httpOrigin(): string | undefined {
    return this.httpAddress ? `${this.tlsOn ? "https" : "http"}://${this.httpAddress}` : undefined;
  }

  /** `http(s)://host:port` of the endpoint proxy (`/proxy`, `/cap`), when served. */
  get proxyOrigin(): string | undefined {
    return this.proxyAddress ? `${this.tlsOn ? "https" : "http"}://${this.proxyAddress}` : undefined;
  }

  /**
   * The dashboard's URL with a one-time login code (as Jupyter prints one): it signs one browser
   * in once, then is invalid. Without auth, the plain URL; undefined without an HTTP port.
   */
  loginUrl(): string | undefined {
    const origin = this.httpOrigin;
    if (!origin) return undefined;
    if (!this.auth.enabled || this.adminToken === undefined) return `${origin}/`;
    return `${origin}/login?code=${sessionsOf(this.auth).mintLoginCode(`Bearer ${this.adminToken}`)}`;
  }

  /** One line saying how callers authenticate (what `iris controller` and `iris cluster local` print). */
  authNotice(): string {
    if (!this.auth.enabled) return this.insecure ? "auth OFF (--insecure): anyone who can reach it runs commands as this user" : "auth OFF (--no-auth): any local process or user runs commands as this user";
    if (this.adminToken === undefined) return "auth on (--token / --auth-file)";
    return this.credentialsFile
      ? `auth on: minted an admin token, in ${this.credentialsFile} (mode 0600; the iris CLI, workers and clients of this user find it there)`
      : "auth on: minted an admin token (not recorded)";
  }

  // ---- internals ------------------------------------------------------------------------------

  private tick(): void {
    if (this.stopped) return;
    try {
      this.state.checkWorkers();
      this.state.expireEndpoints();
      this.metrics.timeScheduler(() => this.state.schedulePass());
      if (this.#now() - this.#lastBundlePrune >= BUNDLE_PRUNE_INTERVAL_MS) this.pruneBundles();
    } catch (e) {
      if (!this.stopped) console.error("iris controller: tick failed:", e);
    }
  }

  /**
   * Removes the stored bundles nothing needs any more (see {@link ControllerOptions.bundleKeep}):
   * after each new upload, at start and once a minute. Returns the ids removed.
   */
  pruneBundles(): string[] {
    this.#lastBundlePrune = this.#now();
    const removed = this.bundles.prune({ ...this.#bundlePolicy, inUse: this.state.bundlesInUse(), now: this.#lastBundlePrune });
    if (removed.length > 0) this.log(`iris controller: removed ${removed.length} unused code bundle${removed.length === 1 ? "" : "s"} (${removed.join(", ")})`);
    return removed;
  }

  /** A stored bundle was used now; a newly stored one may push older ones out. */
  private bundleUsed(id: string, stored: boolean): void {
    try {
      this.bundles.touch(id, this.#now());
      if (stored) this.pruneBundles();
    } catch (e) {
      // Never the caller's failure: its bundle is stored; the next prune tries again.
      this.log(`iris controller: pruning code bundles failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private scheduleSoon(): void {
    if (this.scheduleQueued || this.stopped) return;
    this.scheduleQueued = true;
    setImmediate(() => {
      this.scheduleQueued = false;
      if (!this.stopped) this.metrics.timeScheduler(() => this.state.schedulePass());
    });
  }

  /** Calls `l` after every change of a job (its instance id) or worker; returns the unsubscribe. */
  onChange(l: (kind: "job" | "worker", id: string) => void): () => void {
    this.changeListeners.add(l);
    return () => this.changeListeners.delete(l);
  }

  private onJobChanged(instanceId: string): void {
    for (const l of [...this.changeListeners]) l("job", instanceId);
    this.fire(this.jobListeners, instanceId);
    this.fire(this.logListeners, instanceId);
    this.scheduleSoon();
  }

  private onWorkerChanged(workerId: string): void {
    for (const l of [...this.changeListeners]) l("worker", workerId);
    const streams = this.workerStreams.get(workerId);
    if (!streams) return;
    const generation = ++this.generation;
    for (const s of streams) s.write({ generation });
  }

  /** Ends worker `workerId`'s assignment streams (its session ended): its next call learns why. */
  private endWorkerStreams(workerId: string): void {
    const streams = this.workerStreams.get(workerId);
    if (!streams) return;
    this.workerStreams.delete(workerId);
    for (const st of streams) st.emit("error", { code: grpc.status.UNAUTHENTICATED, details: `the session of worker ${workerId} ended` });
  }

  private fire(map: Map<string, Set<Listener>>, id: string): void {
    const set = map.get(id);
    if (set) for (const l of [...set]) l();
  }

  private listen(map: Map<string, Set<Listener>>, id: string, l: Listener): () => void {
    let set = map.get(id);
    if (!set) map.set(id, (set = new Set()));
    set.add(l);
    return () => {
      set.delete(l);
      if (set.size === 0) map.delete(id);
    };
  }

  // The caller of `method`, or the status to fail the call with (unknown token; role not allowed).
  private authorize(call: { metadata: grpc.Metadata }, method: string): Principal | Partial<grpc.StatusObject> {
    const p = principalOfCall(this.auth, call.metadata);
    if (!p) return UNAUTHENTICATED;
    if (!mayCall(p, method)) return { code: grpc.status.PERMISSION_DENIED, details: `a ${p.role} token may not call ${method}` };
    const refusal = workerSessionRefusal(p, method);
    if (refusal !== undefined) return { code: grpc.status.PERMISSION_DENIED, details: refusal };
    return p;
  }

  // Wraps a synchronous unary handler: auth and the role table first, IrisError → status.
  private unary<Req, Res>(method: string, fn: (req: Req, p: Principal) => Res): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      const p = this.authorize(call, method);
      if (!("role" in p)) return callback(p);
      try {
        callback(null, fn(call.request, p));
      } catch (e) {
        callback(rpcError(e));
      }
    };
  }

  /** The router of the dashboard's origin (every route with its auth policy: see http/router.ts), when HTTP is served. */
  httpRouter: HttpRouter | undefined;
  /** The router of the endpoint proxy's origin (bearer tokens and capabilities only, no cookie), when HTTP is served. */
  proxyRouter: HttpRouter | undefined;

  // The HTTP faces: the dashboard's origin (the page, its streams, the JSON API, /metrics, /proxy
  // for bearer clients) and the endpoint proxy's own origin.
  private async serveHttp(host: string, port: number, proxyPort: number, handlers: ControllerServiceHandlers, tls: ControllerOptions["tls"]): Promise<void> {
    const dial = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
    this.tlsOn = tls !== undefined;
    const httpPortOf = (): number | undefined => (this.http?.address() as { port: number } | null)?.port;
    const proxyPortOf = (): number | undefined => (this.proxyServer?.address() as { port: number } | null)?.port;
    // With auth off, only this server's own Host names are answered (421 otherwise: DNS rebinding).
    const httpRouter = (this.httpRouter = new HttpRouter({ auth: this.auth, permits: (p, perm) => mayCall(p as Principal, perm), servesHost: hostChecker(host, httpPortOf) }));
    const proxyRouter = (this.proxyRouter = new HttpRouter({ auth: this.auth, permits: (p, perm) => mayCall(p as Principal, perm), cookies: false, servesHost: hostChecker(host, proxyPortOf) }));
    this.endpointProxy.addDashboardOriginRoutes(httpRouter);
    addDashboardRoutes(httpRouter, { auth: this.auth, handlers, onChange: (l) => this.onChange(l), proxyOrigin: () => this.proxyOrigin });
    addApiRoutes(httpRouter, { handlers, metricsText: () => this.prometheusText() });
    this.endpointProxy.addProxyOriginRoutes(proxyRouter);
    this.http = await listenHttp(httpRouter, { host, port, tls });
    this.httpAddress = `${dial}:${(this.http.address() as { port: number }).port}`;
    this.proxyServer = await listenHttp(proxyRouter, { host, port: proxyPort, tls });
    this.proxyAddress = `${dial}:${(this.proxyServer.address() as { port: number }).port}`;
  }

  private prometheusText(): string {
    const db = this.db;
    const page = new PrometheusText();
    const gauge = (name: string, help: string, rows: { k: string; n: number }[], label: string): void => {
      page.family(name, "gauge", help, rows.map((r) => sampleLine(name, r.n, { [label]: r.k })));
    };
    gauge("iris_jobs", "Latest job submissions by state.", db.prepare("SELECT state AS k, COUNT(*) AS n FROM jobs WHERE latest = 1 GROUP BY state").all() as { k: string; n: number }[], "state");
    gauge("iris_tasks", "Tasks of unfinished jobs by state.", db.prepare("SELECT t.state AS k, COUNT(*) AS n FROM tasks t JOIN jobs j ON j.instance_id = t.instance_id WHERE j.state IN ('PENDING','RUNNING') GROUP BY t.state").all() as { k: string; n: number }[], "state");
    gauge("iris_workers", "Registered workers by state.", db.prepare("SELECT state AS k, COUNT(*) AS n FROM workers GROUP BY state").all() as { k: string; n: number }[], "state");
    const size = db.prepare("SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()").get() as { n: number };
    page.single("iris_db_bytes", "gauge", "Size of the controller database file.", size.n);
    this.metrics.addTo(page);
    return page.text();
  }

  private controllerHandlers(): ControllerServiceHandlers {
    const s = this.state;
    return {
      LaunchJob: this.unary("LaunchJob", (req, p) => {
        if (!req.spec) throw new IrisError("INVALID_ARGUMENT", "invalid job spec: spec: required");
        // The job's user is the caller's: a bare name goes under the token's user, and a name
        // under someone else's root is refused before the spec is even looked at.
        const name = placeJobName(p, req.spec.name || `job-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`);
        if (name.length > LIMITS.nameChars) throw new IrisError("INVALID_ARGUMENT", `invalid job spec: name: expected at most ${LIMITS.nameChars} characters`);
        checkMaySubmit(p, name);
        const spec = normalizeJobSpec(jobSpecFromWire(req.spec), name);
        if (spec.bundle !== undefined) {
          // Checked here, not at the worker's fetch: a bundle removed as unused since the client
          // uploaded it is a clear error the client answers by uploading it again.
          if (this.bundles.size(spec.bundle) === undefined) throw new IrisError("FAILED_PRECONDITION", bundleMissingMessage(spec.bundle));
          this.bundles.touch(spec.bundle, this.#now());
        }
        return s.launchJob(spec);
      }),
      GetJob: this.unary("GetJob", (req, p) => s.jobStatus(s.findJob(placeJobName(p, req.name), req.instanceId).instance_id, taskPage(req))),
      ListJobs: this.unary("ListJobs", (req, p) => {
        const page = s.listJobs(req.prefix === "" ? "" : placeJobName(p, req.prefix), { pageSize: req.pageSize, pageToken: req.pageToken });
        return { jobs: page.instanceIds.map((id) => s.jobSummary(id)), nextPageToken: page.nextPageToken };
      }),
      ListTasks: this.unary("ListTasks", (req, p) => {
        const st = s.jobStatus(s.findJob(placeJobName(p, req.name), req.instanceId).instance_id, taskPage(req));
        return { tasks: st.tasks, nextPageToken: st.nextTaskPageToken };
      }),
      TerminateJob: this.unary("TerminateJob", (req, p) => {
        const name = placeJobName(p, req.name);
        if (!mayControlJob(p, name)) throw denied(`${p.role} ${p.user} may not terminate ${name}: it belongs to someone else`);
        s.terminateJob(name);
        return {};
      }),
      WatchJob: (call) => {
        const p = this.authorize(call, "WatchJob");
        if (!("role" in p)) return void call.emit("error", p);
        let instanceId: string;
        try {
          instanceId = s.findJob(placeJobName(p, call.request.name), call.request.instanceId).instance_id;
        } catch (e) {
          return void call.emit("error", rpcError(e));
        }
        let lastVersion = -1;
        let queued = false;
        let done = false;
        const send = (): void => {
          queued = false;
          if (done || this.stopped) return;
          let st: JobStatus;
          try {
            st = s.jobStatus(instanceId, taskPage(call.request));
          } catch (e) {
            done = true;
            unlisten();
            return void call.emit("error", rpcError(e));
          }
          if (Number(st.version) !== lastVersion) {
            lastVersion = Number(st.version);
            call.write(st);
          }
          if (isTerminalJobState(String(st.state))) {
            done = true;
            unlisten();
            call.end();
          }
        };
        const unlisten = this.listen(this.jobListeners, instanceId, () => {
          if (!queued) {
            queued = true;
            setImmediate(send);
          }
        });
        call.on("cancelled", () => {
          done = true;
          unlisten();
        });
        send();
      },
      StreamLogs: (call) => {
        const p = this.authorize(call, "StreamLogs");
        if (!("role" in p)) return void call.emit("error", p);
        const req = call.request;
        let instanceId: string;
        try {
          instanceId = s.findJob(placeJobName(p, req.name), req.instanceId).instance_id;
        } catch (e) {
          return void call.emit("error", rpcError(e));
        }
        const taskIndex = req.filterTask ? req.taskIndex : undefined;
        let seq = Number(req.afterSeq) || 0;
        let done = false;
        let queued = false;
        let graceTimer: NodeJS.Timeout | undefined;
        const finish = (): void => {
          if (done) return;
          done = true;
          unlisten();
          if (graceTimer) clearTimeout(graceTimer);
          call.end();
        };
        const pump = (): void => {
          queued = false;
          if (done || this.stopped) return;
          for (;;) {
            const entries = s.readLogs(instanceId, seq, taskIndex);
            if (entries.length === 0) break;
            seq = Number(entries[entries.length - 1]!.seq);
            // Back-pressure: a slow reader of a long log is fed as it drains, not buffered.
            if (!call.write({ entries })) return void call.once("drain", pumpNow);
          }
          // Lines reach the controller on their own stream, a moment after a task's exit may have
          // been reported: reads of a job that just finished wait (briefly) until every attempt's
          // lines are in, so "wait, then read the logs" sees them all. A job whose last lines
          // never arrive (its worker died) ends the stream after the grace period.
          const { terminal, finishedAtMs } = s.jobEnd(instanceId);
          if ((!req.follow && !terminal) || s.logsComplete(instanceId)) return finish();
          if (terminal && !graceTimer) {
            graceTimer = setTimeout(
              () => {
                pump();
                finish();
              },
              Math.max(0, finishedAtMs + LOG_GRACE_MS - Date.now()),
            );
          }
        };
        const pumpNow = (): void => {
          if (!queued) {
            queued = true;
            setImmediate(pump);
          }
        };
        const unlisten = this.listen(this.logListeners, instanceId, pumpNow);
        call.on("cancelled", finish);
        pump();
      },
      RegisterEndpoint: this.unary("RegisterEndpoint", (req, p) =>
        s.registerEndpoint({ name: req.name, address: req.address, metadata: req.metadata, attemptId: req.attemptId, scopeJob: req.scopeJob }, p),
      ),
      UnregisterEndpoint: this.unary("UnregisterEndpoint", (req, p) => {
        s.unregisterEndpoint(req.endpointId, p);
        return {};
      }),
      ResolveEndpoint: this.unary("ResolveEndpoint", (req) => s.resolveEndpoint(req.name, req.scopeJob)),
      ListEndpoints: this.unary("ListEndpoints", (req) => ({ endpoints: s.listEndpoints(req.prefix, req.scopeJob) })),
      MintEndpointToken: this.unary("MintEndpointToken", (req, p) => this.endpointProxy.mint(p, s.resolveEndpoint(req.name, req.scopeJob), req.ttlSeconds)),
      ReportTaskStatus: this.unary("ReportTaskStatus", (req, p) => {
        const { jobName } = parseTaskId(req.taskId);
        if (!mayControlJob(p, jobName)) throw denied(`${p.role} ${p.user} may not report the status of ${req.taskId}`);
        if (req.statusText.length > LIMITS.statusTextChars) {
          throw new IrisError("INVALID_ARGUMENT", `status text: expected at most ${LIMITS.statusTextChars} characters, got ${req.statusText.length}`);
        }
        const metricCount = Object.keys(req.metrics).length;
        if (metricCount > LIMITS.metricsPerReport) throw new IrisError("INVALID_ARGUMENT", `metrics: expected at most ${LIMITS.metricsPerReport} entries, got ${metricCount}`);
        s.reportTaskStatus(req.taskId, req.attempt, req.statusText, req.metrics);
        return {};
      }),
      GetTaskMetrics: this.unary("GetTaskMetrics", (req) => s.taskMetrics(req.taskId, req.attempt)),
      ListWorkers: this.unary("ListWorkers", () => ({ workers: s.listWorkers() })),
      GetBundle: this.unary("GetBundle", (req) => {
        const size = this.bundles.size(req.bundleId);
        if (size === undefined) throw new IrisError("NOT_FOUND", `bundle ${req.bundleId} is not stored here: upload it`);
        this.bundles.touch(req.bundleId, this.#now());
        return { bundleId: req.bundleId, sizeBytes: size, uploaded: false };
      }),
      UploadBundle: uploadBundleHandler(this.bundles, (call, m) => this.authorize(call, m), rpcError, (id, stored) => this.bundleUsed(id, stored)),
      GetClusterStatus: this.unary("GetClusterStatus", () => {
        if (!this.cluster) throw new IrisError("FAILED_PRECONDITION", NO_AUTOSCALER);
        return { statusJson: JSON.stringify(this.cluster.status()) };
      }),
      ClusterDown: (call, callback) => {
        const p = this.authorize(call, "ClusterDown");
        if (!("role" in p)) return callback(p);
        const cluster = this.cluster;
        if (!cluster) return callback(rpcError(new IrisError("FAILED_PRECONDITION", NO_AUTOSCALER)));
        cluster.down().then(
          (stopped) => callback(null, { stopped }),
          (e: unknown) => callback(rpcError(e)),
        );
      },
      DrainWorker: this.unary("DrainWorker", (req) => {
        const preempted = s.drainWorker(req.workerId);
        this.scheduleSoon();
        return { preempted };
      }),
    };
  }

  private workerHandlers(reconcileIntervalMs: number, workerTimeoutMs: number): WorkerControlServiceHandlers {
    const s = this.state;
    return {
      RegisterWorker: this.unary("RegisterWorker", (req, p) => {
        if (this.insecure) this.log(`iris controller: WARNING: worker ${req.workerId || "(new)"} at ${req.host || "?"} registered on a controller with auth off (--insecure)`);
        const creds = this.workerCredentials;
        // A credential bound to a worker (its session, or one minted for it) registers that worker only.
        if (p.worker !== undefined && req.workerId !== "" && req.workerId !== p.worker) {
          throw denied(`a credential of worker ${p.worker} may not register worker ${JSON.stringify(req.workerId)}`);
        }
        const session = p.worker !== undefined && p.registration !== true;
        if (session && creds.sessionInstance(p.worker!) !== req.instanceId) {
          throw denied(`the session of worker ${p.worker} belongs to another process: a new process registers with a worker token, not a copy of a session`);
        }
        const workerId = s.registerWorker({
          workerId: p.worker ?? req.workerId,
          host: req.host,
          attributes: req.attributes,
          capacity: capacityFromWire(req.capacity),
        });
        let sessionToken = "";
        if (p.registration === true) creds.consumeRegistration(workerId);
        // Auth on: the token just presented (shared, minted, or admin) is swapped for a session of
        // this worker and process; registering again with that session keeps it.
        if (this.auth.enabled && !session) sessionToken = creds.openSession(workerId, req.instanceId || `unbound-${Math.random().toString(36).slice(2)}`, p.user);
        this.scheduleSoon();
        return { workerId, reconcileIntervalMs, workerTimeoutMs, sessionToken };
      }),
      Reconcile: this.unary("Reconcile", (req, p) => {
        checkOwnWorker(p, req.workerId, "reconcile the attempts");
        const r = s.reconcile(req.workerId, req.observed, { healthy: req.health ? req.health.healthy : true });
        // Each attempt gets its own token (never the worker's): minted here, on every desired set.
        const tokens = this.taskTokens;
        return tokens ? { ...r, run: r.run.map((a) => ({ ...a, taskToken: tokens.mint(String(a.attemptUid)) })) } : r;
      }),
      WatchAssignments: (call) => {
        const p = this.authorize(call, "WatchAssignments");
        if (!("role" in p)) return void call.emit("error", p);
        const id = call.request.workerId;
        try {
          checkOwnWorker(p, id, "watch the assignments");
        } catch (e) {
          return void call.emit("error", rpcError(e));
        }
        if (!s.isWorkerAlive(id)) {
          return void call.emit("error", { code: grpc.status.NOT_FOUND, details: `worker ${id} is not registered: register again` });
        }
        let set = this.workerStreams.get(id);
        if (!set) this.workerStreams.set(id, (set = new Set()));
        const stream = call as grpc.ServerWritableStream<unknown, unknown>;
        set.add(stream);
        call.on("cancelled", () => {
          set.delete(stream);
          if (set.size === 0) this.workerStreams.delete(id);
        });
        call.write({ generation: ++this.generation });
      },
      PushLogs: (call, callback) => {
        const p = this.authorize(call, "PushLogs");
        if (!("role" in p)) return callback(p);
        // A batch that cannot be stored fails the call: the worker retries it, then replaces it
        // by a `[iris: N lines dropped …]` marker (never a silent loss).
        let failure: Partial<grpc.StatusObject> | undefined;
        call.on("data", (req: { lines: { attemptUid: string; stream: string; line: string; timeMs: number; index?: number }[] }) => {
          if (failure) return;
          try {
            s.appendLogs(req.lines, p.role === "worker" ? p.worker : undefined);
          } catch (e) {
            failure = rpcError(e);
          }
        });
        call.on("end", () => (failure ? callback(failure) : callback(null, {})));
        call.on("error", () => undefined);
      },
      FetchBundle: fetchBundleHandler(
        this.bundles,
        (call, m) => {
          const p = this.authorize(call, m);
          // A worker session fetches the bundles of its own live attempts only.
          if ("role" in p && p.role === "worker" && !s.workerRunsBundle(p.worker ?? "", call.request.bundleId)) {
            return { code: grpc.status.PERMISSION_DENIED, details: `worker ${p.worker ?? "?"} runs no attempt from bundle ${call.request.bundleId}` };
          }
          return p;
        },
        rpcError,
        (id) => this.bundleUsed(id, false),
      ),
      DeregisterWorker: this.unary("DeregisterWorker", (req, p) => {
        checkOwnWorker(p, req.workerId, "deregister");
        s.deregisterWorker(req.workerId);
        this.workerCredentials.endSession(req.workerId);
        this.scheduleSoon();
        return {};
      }),
    };
  }
}
