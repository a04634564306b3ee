// The controller process, its composition root: the database and ControllerState, auth, the RPC
// service (service.ts) on one gRPC port, the HTTP faces (dashboard, API, endpoint proxy), the
// liveness/scheduling tick, bundle pruning and the Prometheus text.
import * as grpc from "@grpc/grpc-js";
import { mkdirSync } from "node:fs";
import type http from "node:http";
import path from "node:path";
import { IrisError } from "../errors.ts";
import type { ControllerServiceHandlers } from "../internal/generated/iris/v1/ControllerService.ts";
import { loadIrisProto } from "../internal/rpc.ts";
import { TaskTokens, createAuthenticator, mayCall, mayControlJob } from "./auth.ts";
import { WorkerCredentials } from "./workerCredentials.ts";
import type { Authenticator, Principal } from "./auth.ts";
import type { EndpointCapability } from "../jobSpec.ts";
import { EndpointProxy } from "../http/endpointProxy.ts";
import { LIMITS } from "../jobSpec.ts";
import { addDashboardRoutes } from "../dashboard/server.ts";
import { addApiRoutes, listenHttp } from "../http/apiRoutes.ts";
import { hostChecker } from "../http/hosts.ts";
import { sessionsOf } from "../http/principal.ts";
import { HttpRouter } from "../http/router.ts";
import { credentialsFilePath, mintAdminToken, removeCredentials, saveCredentials } from "../credentials.ts";
import { ControllerState } from "./controllerState.ts";
import type { Clock } from "./controllerState.ts";
import { BundleStore, DEFAULT_BUNDLE_GRACE_MS, DEFAULT_BUNDLE_KEEP } from "./bundleStore.ts";
import { openDb } from "./db.ts";
import { ControllerMetrics } from "./rpcMetrics.ts";
import { ControllerRpcService } from "./service.ts";
import type { ClusterHooks } from "./service.ts";
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

export type { ClusterHooks } from "./service.ts";

/** How often the controller looks for stored bundles nothing needs any more. */
const BUNDLE_PRUNE_INTERVAL_MS = 60_000;

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
  /** The RPC handlers (service.ts) and their streams. */
  private readonly service: ControllerRpcService;
  /** Told about every job and worker change (the dashboard's live views). */
  private readonly changeListeners = new Set<(kind: "job" | "worker", id: string) => void>();
  /** RPC counts and latencies, scheduler cycle time (`/metrics`). */
  private readonly metrics = new ControllerMetrics();
  /** The autoscaler of `iris cluster up`, when one is attached (GetClusterStatus, ClusterDown). */
  private cluster: ClusterHooks | undefined;
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
      sessionEnded: (id) => this.service.endWorkerStreams(id),
      revoked: (id) => {
        state.workers.deregisterWorker(id);
        this.scheduleSoon();
      },
    });
    this.insecure = auth.insecure;
    this.log = auth.log;
    this.endpointProxy = new EndpointProxy({
      mayControl: (p, owner) => mayControlJob(p as Principal, owner),
      resolve: (full) => state.queries.resolveEndpoint(full, ""),
      resolveAll: (full) => state.queries.resolveEndpoints(full, ""),
      ownerOf: (endpoint) => state.queries.endpointOwnerOf(String(endpoint.name)),
      exists: (full) => {
        try {
          return state.queries.resolveEndpoint(full, "") !== undefined;
        } catch {
          return false;
        }
      },
      proxyOrigin: () => this.proxyOrigin,
      dashboardOrigin: () => this.httpOrigin,
      now,
    });
    this.service = new ControllerRpcService({
      state,
      bundles,
      auth: auth.auth,
      workerCredentials: auth.workerCredentials,
      taskTokens: auth.taskTokens,
      insecure: auth.insecure,
      log: auth.log,
      now,
      stopped: () => this.stopped,
      scheduleSoon: () => this.scheduleSoon(),
      bundleUsed: (id, stored) => this.bundleUsed(id, stored),
      cluster: () => this.cluster,
      mintCapability: (p, endpoint, ttl) => this.endpointProxy.mint(p, endpoint, ttl),
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
        logsAppended: (id) => ref.self?.service.logsAppended(id),
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
      if (!given && !opts.noAuth && isLoopbackHost(host)) token = minted = mintAdminToken(state.records.taskTokenSecret());
      const authOn = token !== undefined || Boolean(opts.authFile);
      if (authOn) taskTokens = new TaskTokens(state.records.taskTokenSecret(), (uid) => state.queries.attemptForToken(uid));
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
    const self = new Controller(
      server,
      db,
      state,
      port,
      host,
      { auth, taskTokens, workerCredentials, insecure, log },
      Math.max(50, Math.min(500, Math.floor(workerTimeoutMs / 4))),
      opts.clock ? () => opts.clock!.now() : Date.now,
      bundles,
      {
        keep: opts.bundleKeep ?? DEFAULT_BUNDLE_KEEP,
        graceMs: opts.bundleGraceMs ?? DEFAULT_BUNDLE_GRACE_MS,
      },
    );
    const proto = loadIrisProto();
    const handlers = self.metrics.instrument(self.service.controllerHandlers());
    server.addService(proto.ControllerService.service, handlers);
    server.addService(proto.WorkerControlService.service, self.metrics.instrument(self.service.workerHandlers(reconcileIntervalMs, workerTimeoutMs)));
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
    return this.endpointProxy.mint(principal, this.state.queries.resolveEndpoint(name, scopeJob), ttlSeconds);
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
    if (!this.auth.enabled)
      return this.insecure
        ? "auth OFF (--insecure): anyone who can reach it runs commands as this user"
        : "auth OFF (--no-auth): any local process or user runs commands as this user";
    if (this.adminToken === undefined) return "auth on (--token / --auth-file)";
    return this.credentialsFile
      ? `auth on: minted an admin token, in ${this.credentialsFile} (mode 0600; the iris CLI, workers and clients of this user find it there)`
      : "auth on: minted an admin token (not recorded)";
  }

  // ---- internals ------------------------------------------------------------------------------

  private tick(): void {
    if (this.stopped) return;
    try {
      this.state.workers.checkWorkers();
      this.state.records.expireEndpoints();
      this.metrics.timeScheduler(() => this.state.jobs.schedulePass());
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
    const removed = this.bundles.prune({ ...this.#bundlePolicy, inUse: this.state.queries.bundlesInUse(), now: this.#lastBundlePrune });
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
      if (!this.stopped) this.metrics.timeScheduler(() => this.state.jobs.schedulePass());
    });
  }

  /** Calls `l` after every change of a job (its instance id) or worker; returns the unsubscribe. */
  onChange(l: (kind: "job" | "worker", id: string) => void): () => void {
    this.changeListeners.add(l);
    return () => this.changeListeners.delete(l);
  }

  private onJobChanged(instanceId: string): void {
    for (const l of [...this.changeListeners]) l("job", instanceId);
    this.service.jobChanged(instanceId);
    this.scheduleSoon();
  }

  private onWorkerChanged(workerId: string): void {
    for (const l of [...this.changeListeners]) l("worker", workerId);
    this.service.workerChanged(workerId);
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
    const proxyRouter = (this.proxyRouter = new HttpRouter({
      auth: this.auth,
      permits: (p, perm) => mayCall(p as Principal, perm),
      cookies: false,
      servesHost: hostChecker(host, proxyPortOf),
    }));
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
      page.family(
        name,
        "gauge",
        help,
        rows.map((r) => sampleLine(name, r.n, { [label]: r.k })),
      );
    };
    gauge(
      "iris_jobs",
      "Latest job submissions by state.",
      db.prepare("SELECT state AS k, COUNT(*) AS n FROM jobs WHERE latest = 1 GROUP BY state").all() as { k: string; n: number }[],
      "state",
    );
    gauge(
      "iris_tasks",
      "Tasks of unfinished jobs by state.",
      db.prepare("SELECT t.state AS k, COUNT(*) AS n FROM tasks t JOIN jobs j ON j.instance_id = t.instance_id WHERE j.state IN ('PENDING','RUNNING') GROUP BY t.state").all() as {
        k: string;
        n: number;
      }[],
      "state",
    );
    gauge("iris_workers", "Registered workers by state.", db.prepare("SELECT state AS k, COUNT(*) AS n FROM workers GROUP BY state").all() as { k: string; n: number }[], "state");
    const size = db.prepare("SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()").get() as { n: number };
    page.single("iris_db_bytes", "gauge", "Size of the controller database file.", size.n);
    this.metrics.addTo(page);
    return page.text();
  }
}
