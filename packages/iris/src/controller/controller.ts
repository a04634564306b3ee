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
import { principalOfCall, singleTokenAuthenticator } from "./auth.ts";
import type { Authenticator } from "./auth.ts";
import { dashboardRoutes } from "../dashboard/server.ts";
import { serveHttp } from "./httpFace.ts";
import type { HttpRoute } from "./httpFace.ts";
import { capacityFromWire, jobSpecFromWire } from "../internal/codec.ts";
import { isTerminalJobState, normalizeJobSpec } from "../jobSpec.ts";
import { ControllerState } from "./controllerState.ts";
import type { Clock } from "./controllerState.ts";
import { openDb } from "./db.ts";
import { ControllerMetrics } from "./rpcMetrics.ts";
import type { Db } from "./db.ts";

/** Options of {@link Controller.start}. */
export interface ControllerOptions {
  /** Port to listen on (0 = any free port). */
  port?: number;
  /** Interface to bind (default "0.0.0.0"; LocalCluster uses "127.0.0.1"). */
  host?: string;
  /** SQLite database file (created with its directory if missing). */
  dbPath: string;
  /** Bearer token every RPC must carry; undefined/"" = auth off. */
  token?: string | undefined;
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
  clock?: Clock;
}

type Listener = () => void;

function rpcError(e: unknown): Partial<grpc.StatusObject> {
  if (e instanceof IrisError) return { code: grpcStatusOf(e.code), details: e.message };
  return { code: grpc.status.INTERNAL, details: e instanceof Error ? e.message : String(e) };
}

/** The task page a GetJobRequest asks for. */
function taskPage(req: { taskPageSize: number; taskPageToken: string }): { pageSize: number; pageToken: string } {
  return { pageSize: req.taskPageSize, pageToken: req.taskPageToken };
}

/** How long after a job ended log reads wait for its attempts' last lines. */
const LOG_GRACE_MS = 3000;

const UNAUTHENTICATED = { code: grpc.status.UNAUTHENTICATED, details: "missing or invalid bearer token" };

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
  private http: http.Server | undefined;
  readonly state: ControllerState;
  private readonly server: grpc.Server;
  private readonly db: Db;
  private readonly auth: Authenticator;
  /** Extra HTTP routes tried before the API (endpoint proxy, dashboard). */
  private readonly httpRoutes: HttpRoute[] = [];
  private readonly timer: NodeJS.Timeout;
  private readonly jobListeners = new Map<string, Set<Listener>>();
  private readonly logListeners = new Map<string, Set<Listener>>();
  private readonly workerStreams = new Map<string, Set<grpc.ServerWritableStream<unknown, unknown>>>();
  /** Told about every job and worker change (the dashboard's live views). */
  private readonly changeListeners = new Set<(kind: "job" | "worker", id: string) => void>();
  /** RPC counts and latencies, scheduler cycle time (`/metrics`). */
  private readonly metrics = new ControllerMetrics();
  private generation = 0;
  private scheduleQueued = false;
  private stopped = false;

  private constructor(server: grpc.Server, db: Db, state: ControllerState, port: number, host: string, token: string | undefined, tickMs: number) {
    this.server = server;
    this.db = db;
    this.state = state;
    this.port = port;
    this.address = `${host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host}:${port}`;
    this.auth = singleTokenAuthenticator(token);
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
      ...(opts.clock ? { clock: opts.clock } : {}),
      listener: {
        jobChanged: (id) => ref.self?.onJobChanged(id),
        workerChanged: (id) => ref.self?.onWorkerChanged(id),
        logsAppended: (id) => ref.self?.fire(ref.self.logListeners, id),
      },
    });
    const server = new grpc.Server({ "grpc.max_receive_message_length": 64 * 1024 * 1024 });
    const host = opts.host ?? "0.0.0.0";
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${host}:${opts.port ?? 0}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    const token = opts.token || undefined;
    const self = new Controller(server, db, state, port, host, token, Math.max(50, Math.min(500, Math.floor(workerTimeoutMs / 4))));
    const proto = loadIrisProto();
    const handlers = self.metrics.instrument(self.controllerHandlers());
    server.addService(proto.ControllerService.service, handlers);
    server.addService(proto.WorkerControlService.service, self.metrics.instrument(self.workerHandlers(reconcileIntervalMs, workerTimeoutMs)));
    self.httpRoutes.push(...dashboardRoutes({ auth: self.auth, handlers, onChange: (l) => self.onChange(l) }));
    if (opts.httpPort !== undefined) await self.serveHttp(host, opts.httpPort, handlers);
    ref.self = self;
    self.scheduleSoon();
    return self;
  }

  /** Stops serving (streams are cancelled) and closes the database. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    this.server.forceShutdown();
    this.http?.closeAllConnections();
    this.http?.close();
    this.db.close();
  }

  // ---- internals ------------------------------------------------------------------------------

  private tick(): void {
    if (this.stopped) return;
    try {
      this.state.checkWorkers();
      this.metrics.timeScheduler(() => this.state.schedulePass());
    } catch (e) {
      if (!this.stopped) console.error("iris controller: tick failed:", e);
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

  private authorized(call: { metadata: grpc.Metadata }): boolean {
    return principalOfCall(this.auth, call.metadata) !== undefined;
  }

  // Wraps a synchronous unary handler: auth first, IrisError → status.
  private unary<Req, Res>(fn: (req: Req) => Res): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      if (!this.authorized(call)) return callback(UNAUTHENTICATED);
      try {
        callback(null, fn(call.request));
      } catch (e) {
        callback(rpcError(e));
      }
    };
  }

  // The HTTP face (httpFace.ts): the unary handlers over JSON, Prometheus metrics, extra routes.
  private async serveHttp(host: string, port: number, handlers: ControllerServiceHandlers): Promise<void> {
    const server = await serveHttp({ host, port, handlers, auth: this.auth, metricsText: () => this.prometheusText(), routes: this.httpRoutes });
    const addr = server.address() as { port: number };
    this.http = server;
    this.httpAddress = `${host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host}:${addr.port}`;
  }

  private prometheusText(): string {
    const db = this.db;
    const lines: string[] = [];
    const gauge = (name: string, help: string, rows: { k: string; n: number }[], label: string): void => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
      for (const r of rows) lines.push(`${name}{${label}="${r.k}"} ${r.n}`);
    };
    gauge("iris_jobs", "Latest job submissions by state.", db.prepare("SELECT state AS k, COUNT(*) AS n FROM jobs WHERE latest = 1 GROUP BY state").all() as { k: string; n: number }[], "state");
    gauge("iris_tasks", "Tasks of unfinished jobs by state.", db.prepare("SELECT t.state AS k, COUNT(*) AS n FROM tasks t JOIN jobs j ON j.instance_id = t.instance_id WHERE j.state IN ('PENDING','RUNNING') GROUP BY t.state").all() as { k: string; n: number }[], "state");
    gauge("iris_workers", "Registered workers by state.", db.prepare("SELECT state AS k, COUNT(*) AS n FROM workers GROUP BY state").all() as { k: string; n: number }[], "state");
    const size = db.prepare("SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()").get() as { n: number };
    lines.push("# HELP iris_db_bytes Size of the controller database file.", "# TYPE iris_db_bytes gauge", `iris_db_bytes ${size.n}`);
    lines.push(...this.metrics.prometheusLines());
    return lines.join("\n") + "\n";
  }

  private controllerHandlers(): ControllerServiceHandlers {
    const s = this.state;
    return {
      LaunchJob: this.unary((req) => {
        if (!req.spec) throw new IrisError("INVALID_ARGUMENT", "invalid job spec: spec: required");
        const spec = normalizeJobSpec(jobSpecFromWire(req.spec), req.spec.name);
        return s.launchJob(spec);
      }),
      GetJob: this.unary((req) => s.jobStatus(s.findJob(req.name, req.instanceId).instance_id, taskPage(req))),
      ListJobs: this.unary((req) => {
        const page = s.listJobs(req.prefix, { pageSize: req.pageSize, pageToken: req.pageToken });
        return { jobs: page.instanceIds.map((id) => s.jobSummary(id)), nextPageToken: page.nextPageToken };
      }),
      ListTasks: this.unary((req) => {
        const st = s.jobStatus(s.findJob(req.name, req.instanceId).instance_id, taskPage(req));
        return { tasks: st.tasks, nextPageToken: st.nextTaskPageToken };
      }),
      TerminateJob: this.unary((req) => {
        s.terminateJob(req.name);
        return {};
      }),
      WatchJob: (call) => {
        if (!this.authorized(call)) return void call.emit("error", UNAUTHENTICATED);
        let instanceId: string;
        try {
          instanceId = s.findJob(call.request.name, call.request.instanceId).instance_id;
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
        if (!this.authorized(call)) return void call.emit("error", UNAUTHENTICATED);
        const req = call.request;
        let instanceId: string;
        try {
          instanceId = s.findJob(req.name, req.instanceId).instance_id;
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
      RegisterEndpoint: this.unary((req) =>
        s.registerEndpoint({ name: req.name, address: req.address, metadata: req.metadata, attemptId: req.attemptId, scopeJob: req.scopeJob }),
      ),
      UnregisterEndpoint: this.unary((req) => {
        s.unregisterEndpoint(req.endpointId);
        return {};
      }),
      ResolveEndpoint: this.unary((req) => s.resolveEndpoint(req.name, req.scopeJob)),
      ListEndpoints: this.unary((req) => ({ endpoints: s.listEndpoints(req.prefix, req.scopeJob) })),
      ReportTaskStatus: this.unary((req) => {
        s.reportTaskStatus(req.taskId, req.attempt, req.statusText, req.metrics);
        return {};
      }),
      GetTaskMetrics: this.unary((req) => s.taskMetrics(req.taskId, req.attempt)),
      ListWorkers: this.unary(() => ({ workers: s.listWorkers() })),
    };
  }

  private workerHandlers(reconcileIntervalMs: number, workerTimeoutMs: number): WorkerControlServiceHandlers {
    const s = this.state;
    return {
      RegisterWorker: this.unary((req) => {
        const workerId = s.registerWorker({
          workerId: req.workerId,
          host: req.host,
          attributes: req.attributes,
          capacity: capacityFromWire(req.capacity),
        });
        this.scheduleSoon();
        return { workerId, reconcileIntervalMs, workerTimeoutMs };
      }),
      Reconcile: this.unary((req) => s.reconcile(req.workerId, req.observed, { healthy: req.health ? req.health.healthy : true })),
      WatchAssignments: (call) => {
        if (!this.authorized(call)) return void call.emit("error", UNAUTHENTICATED);
        const id = call.request.workerId;
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
        if (!this.authorized(call)) return callback(UNAUTHENTICATED);
        // A batch that cannot be stored fails the call: the worker retries it, then replaces it
        // by a `[iris: N lines dropped …]` marker (never a silent loss).
        let failure: Partial<grpc.StatusObject> | undefined;
        call.on("data", (req: { lines: { attemptUid: string; stream: string; line: string; timeMs: number; index?: number }[] }) => {
          if (failure) return;
          try {
            s.appendLogs(req.lines);
          } catch (e) {
            failure = rpcError(e);
          }
        });
        call.on("end", () => (failure ? callback(failure) : callback(null, {})));
        call.on("error", () => undefined);
      },
    };
  }
}
