// The RPC handlers of the controller: ControllerService (clients) and WorkerControlService
// (workers), with their auth checks and streams (WatchJob, StreamLogs, WatchAssignments). They
// translate between the wire and ControllerState; the composition root, the tick and the HTTP
// faces stay in controller.ts, which hands this service what it needs (ServiceHost).
import * as grpc from "@grpc/grpc-js";
import { IrisError, grpcStatusOf } from "../errors.ts";
import type { ControllerServiceHandlers } from "../internal/generated/iris/v1/ControllerService.ts";
import type { Endpoint as WireEndpoint } from "../internal/generated/iris/v1/Endpoint.ts";
import type { WorkerControlServiceHandlers } from "../internal/generated/iris/v1/WorkerControlService.ts";
import type { JobStatus } from "../internal/generated/iris/v1/JobStatus.ts";
import type { EndpointCapability } from "../jobSpec.ts";
import { LIMITS, bundleMissingMessage, isTerminalJobState, normalizeJobSpec } from "../jobSpec.ts";
import { capacityFromWire, jobSpecFromWire } from "../internal/codec.ts";
import { checkMaySubmit, checkOwnWorker, mayCall, mayControlJob, placeJobName, principalOfCall, workerSessionRefusal } from "./auth.ts";
import type { Authenticator, Principal, TaskTokens } from "./auth.ts";
import type { BundleStore } from "./bundleStore.ts";
import { fetchBundleHandler, uploadBundleHandler } from "./bundleRpc.ts";
import type { ControllerState } from "./controllerState.ts";
import { parseTaskId } from "./stateRows.ts";
import type { WorkerCredentials } from "./workerCredentials.ts";

/** What the controller attaches an autoscaler through (src/autoscaler/autoscaler.ts). */
export interface ClusterHooks {
  /** Its status, serialisable as JSON. */
  status(): unknown;
  /** Drains and stops every provided worker; resolves to how many. */
  down(): Promise<number>;
}

/** What the RPC service is given by the controller that composes it. */
export interface ServiceHost {
  readonly state: ControllerState;
  readonly bundles: BundleStore;
  readonly auth: Authenticator;
  readonly workerCredentials: WorkerCredentials;
  /** Per-attempt tokens, when auth is on. */
  readonly taskTokens: TaskTokens | undefined;
  /** Auth off on a non-loopback address (--insecure): worker registrations log a warning. */
  readonly insecure: boolean;
  log(line: string): void;
  now(): number;
  stopped(): boolean;
  /** Runs a scheduling pass soon (after the current call). */
  scheduleSoon(): void;
  /** A stored bundle was used now (`stored`: newly uploaded). */
  bundleUsed(id: string, stored: boolean): void;
  /** The attached autoscaler, if any. */
  cluster(): ClusterHooks | undefined;
  /** A capability URL for a resolved endpoint (the endpoint proxy's mint). */
  mintCapability(principal: Principal, endpoint: WireEndpoint, ttlSeconds: number): EndpointCapability;
}

type Listener = () => void;

const NO_AUTOSCALER = "this controller runs no autoscaler: start it with iris cluster up --config FILE";

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

function denied(message: string): IrisError {
  return new IrisError("PERMISSION_DENIED", message);
}

/**
 * The controller's two gRPC services over one ControllerState. The controller tells it about
 * changes (jobChanged, logsAppended, workerChanged) so that its streams follow them.
 */
export class ControllerRpcService {
  private readonly jobListeners = new Map<string, Set<Listener>>();
  private readonly logListeners = new Map<string, Set<Listener>>();
  private readonly workerStreams = new Map<string, Set<grpc.ServerWritableStream<unknown, unknown>>>();
  private generation = 0;

  private readonly host: ServiceHost;

  constructor(host: ServiceHost) {
    this.host = host;
  }

  /** A job (by instance id) changed: its watchers and log readers look again. */
  jobChanged(instanceId: string): void {
    this.fire(this.jobListeners, instanceId);
    this.fire(this.logListeners, instanceId);
  }

  /** Log lines of a job (by instance id) were stored. */
  logsAppended(instanceId: string): void {
    this.fire(this.logListeners, instanceId);
  }

  /** A worker's desired set may have changed: its assignment streams get a new generation. */
  workerChanged(workerId: string): void {
    const streams = this.workerStreams.get(workerId);
    if (!streams) return;
    const generation = ++this.generation;
    for (const s of streams) s.write({ generation });
  }

  /** Ends worker `workerId`'s assignment streams (its session ended): its next call learns why. */
  endWorkerStreams(workerId: string): void {
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
    const p = principalOfCall(this.host.auth, call.metadata);
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

  controllerHandlers(): ControllerServiceHandlers {
    const s = this.host.state;
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
          if (this.host.bundles.size(spec.bundle) === undefined) throw new IrisError("FAILED_PRECONDITION", bundleMissingMessage(spec.bundle));
          this.host.bundles.touch(spec.bundle, this.host.now());
        }
        return s.jobs.launchJob(spec);
      }),
      GetJob: this.unary("GetJob", (req, p) => s.queries.jobStatus(s.queries.findJob(placeJobName(p, req.name), req.instanceId).instance_id, taskPage(req))),
      ListJobs: this.unary("ListJobs", (req, p) => {
        const page = s.queries.listJobs(req.prefix === "" ? "" : placeJobName(p, req.prefix), { pageSize: req.pageSize, pageToken: req.pageToken });
        return { jobs: page.instanceIds.map((id) => s.queries.jobSummary(id)), nextPageToken: page.nextPageToken };
      }),
      ListTasks: this.unary("ListTasks", (req, p) => {
        const st = s.queries.jobStatus(s.queries.findJob(placeJobName(p, req.name), req.instanceId).instance_id, taskPage(req));
        return { tasks: st.tasks, nextPageToken: st.nextTaskPageToken };
      }),
      TerminateJob: this.unary("TerminateJob", (req, p) => {
        const name = placeJobName(p, req.name);
        if (!mayControlJob(p, name)) throw denied(`${p.role} ${p.user} may not terminate ${name}: it belongs to someone else`);
        s.jobs.terminateJob(name);
        return {};
      }),
      WatchJob: (call) => {
        const p = this.authorize(call, "WatchJob");
        if (!("role" in p)) return void call.emit("error", p);
        let instanceId: string;
        try {
          instanceId = s.queries.findJob(placeJobName(p, call.request.name), call.request.instanceId).instance_id;
        } catch (e) {
          return void call.emit("error", rpcError(e));
        }
        let lastVersion = -1;
        let queued = false;
        let done = false;
        const send = (): void => {
          queued = false;
          if (done || this.host.stopped()) return;
          let st: JobStatus;
          try {
            st = s.queries.jobStatus(instanceId, taskPage(call.request));
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
          instanceId = s.queries.findJob(placeJobName(p, req.name), req.instanceId).instance_id;
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
          if (done || this.host.stopped()) return;
          for (;;) {
            const entries = s.queries.readLogs(instanceId, seq, taskIndex);
            if (entries.length === 0) break;
            seq = Number(entries[entries.length - 1]!.seq);
            // Back-pressure: a slow reader of a long log is fed as it drains, not buffered.
            if (!call.write({ entries })) return void call.once("drain", pumpNow);
          }
          // Lines reach the controller on their own stream, a moment after a task's exit may have
          // been reported: reads of a job that just finished wait (briefly) until every attempt's
          // lines are in, so "wait, then read the logs" sees them all. A job whose last lines
          // never arrive (its worker died) ends the stream after the grace period.
          const { terminal, finishedAtMs } = s.queries.jobEnd(instanceId);
          if ((!req.follow && !terminal) || s.queries.logsComplete(instanceId)) return finish();
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
        s.records.registerEndpoint({ name: req.name, address: req.address, metadata: req.metadata, attemptId: req.attemptId, scopeJob: req.scopeJob }, p),
      ),
      UnregisterEndpoint: this.unary("UnregisterEndpoint", (req, p) => {
        s.records.unregisterEndpoint(req.endpointId, p);
        return {};
      }),
      ResolveEndpoint: this.unary("ResolveEndpoint", (req) => s.queries.resolveEndpoint(req.name, req.scopeJob)),
      ListEndpoints: this.unary("ListEndpoints", (req) => ({ endpoints: s.queries.listEndpoints(req.prefix, req.scopeJob) })),
      MintEndpointToken: this.unary("MintEndpointToken", (req, p) => this.host.mintCapability(p, s.queries.resolveEndpoint(req.name, req.scopeJob), req.ttlSeconds)),
      ReportTaskStatus: this.unary("ReportTaskStatus", (req, p) => {
        const { jobName } = parseTaskId(req.taskId);
        if (!mayControlJob(p, jobName)) throw denied(`${p.role} ${p.user} may not report the status of ${req.taskId}`);
        if (req.statusText.length > LIMITS.statusTextChars) {
          throw new IrisError("INVALID_ARGUMENT", `status text: expected at most ${LIMITS.statusTextChars} characters, got ${req.statusText.length}`);
        }
        const metricCount = Object.keys(req.metrics).length;
        if (metricCount > LIMITS.metricsPerReport) throw new IrisError("INVALID_ARGUMENT", `metrics: expected at most ${LIMITS.metricsPerReport} entries, got ${metricCount}`);
        s.records.reportTaskStatus(req.taskId, req.attempt, req.statusText, req.metrics);
        return {};
      }),
      GetTaskMetrics: this.unary("GetTaskMetrics", (req) => s.queries.taskMetrics(req.taskId, req.attempt)),
      ListWorkers: this.unary("ListWorkers", () => ({ workers: s.queries.listWorkers() })),
      GetBundle: this.unary("GetBundle", (req) => {
        const size = this.host.bundles.size(req.bundleId);
        if (size === undefined) throw new IrisError("NOT_FOUND", `bundle ${req.bundleId} is not stored here: upload it`);
        this.host.bundles.touch(req.bundleId, this.host.now());
        return { bundleId: req.bundleId, sizeBytes: size, uploaded: false };
      }),
      UploadBundle: uploadBundleHandler(
        this.host.bundles,
        (call, m) => this.authorize(call, m),
        rpcError,
        (id, stored) => this.host.bundleUsed(id, stored),
      ),
      GetClusterStatus: this.unary("GetClusterStatus", () => {
        const cluster = this.host.cluster();
        if (!cluster) throw new IrisError("FAILED_PRECONDITION", NO_AUTOSCALER);
        return { statusJson: JSON.stringify(cluster.status()) };
      }),
      ClusterDown: (call, callback) => {
        const p = this.authorize(call, "ClusterDown");
        if (!("role" in p)) return callback(p);
        const cluster = this.host.cluster();
        if (!cluster) return callback(rpcError(new IrisError("FAILED_PRECONDITION", NO_AUTOSCALER)));
        cluster.down().then(
          (stopped) => callback(null, { stopped }),
          (e: unknown) => callback(rpcError(e)),
        );
      },
      DrainWorker: this.unary("DrainWorker", (req) => {
        const { preempted } = s.workers.drainWorker(req.workerId);
        this.host.scheduleSoon();
        return { preempted };
      }),
    };
  }

  workerHandlers(reconcileIntervalMs: number, workerTimeoutMs: number): WorkerControlServiceHandlers {
    const s = this.host.state;
    return {
      RegisterWorker: this.unary("RegisterWorker", (req, p) => {
        if (this.host.insecure)
          this.host.log(`iris controller: WARNING: worker ${req.workerId || "(new)"} at ${req.host || "?"} registered on a controller with auth off (--insecure)`);
        const creds = this.host.workerCredentials;
        // A credential bound to a worker (its session, or one minted for it) registers that worker only.
        if (p.worker !== undefined && req.workerId !== "" && req.workerId !== p.worker) {
          throw denied(`a credential of worker ${p.worker} may not register worker ${JSON.stringify(req.workerId)}`);
        }
        const session = p.worker !== undefined && p.registration !== true;
        if (session && creds.sessionInstance(p.worker!) !== req.instanceId) {
          throw denied(`the session of worker ${p.worker} belongs to another process: a new process registers with a worker token, not a copy of a session`);
        }
        const { workerId } = s.workers.registerWorker({
          workerId: p.worker ?? req.workerId,
          host: req.host,
          attributes: req.attributes,
          capacity: capacityFromWire(req.capacity),
        });
        let sessionToken = "";
        if (p.registration === true) creds.consumeRegistration(workerId);
        // Auth on: the token just presented (shared, minted, or admin) is swapped for a session of
        // this worker and process; registering again with that session keeps it.
        if (this.host.auth.enabled && !session) sessionToken = creds.openSession(workerId, req.instanceId || `unbound-${Math.random().toString(36).slice(2)}`, p.user);
        this.host.scheduleSoon();
        return { workerId, reconcileIntervalMs, workerTimeoutMs, sessionToken };
      }),
      Reconcile: this.unary("Reconcile", (req, p) => {
        checkOwnWorker(p, req.workerId, "reconcile the attempts");
        const r = s.workers.reconcile(req.workerId, req.observed, { healthy: req.health ? req.health.healthy : true });
        // Each attempt gets its own token (never the worker's): minted here, on every desired set.
        const tokens = this.host.taskTokens;
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
        if (!s.queries.isWorkerAlive(id)) {
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
            s.records.appendLogs(req.lines, p.role === "worker" ? p.worker : undefined);
          } catch (e) {
            failure = rpcError(e);
          }
        });
        call.on("end", () => (failure ? callback(failure) : callback(null, {})));
        call.on("error", () => undefined);
      },
      FetchBundle: fetchBundleHandler(
        this.host.bundles,
        (call, m) => {
          const p = this.authorize(call, m);
          // A worker session fetches the bundles of its own live attempts only.
          if ("role" in p && p.role === "worker" && !s.queries.workerRunsBundle(p.worker ?? "", call.request.bundleId)) {
            return { code: grpc.status.PERMISSION_DENIED, details: `worker ${p.worker ?? "?"} runs no attempt from bundle ${call.request.bundleId}` };
          }
          return p;
        },
        rpcError,
        (id) => this.host.bundleUsed(id, false),
      ),
      DeregisterWorker: this.unary("DeregisterWorker", (req, p) => {
        checkOwnWorker(p, req.workerId, "deregister");
        s.workers.deregisterWorker(req.workerId);
        this.host.workerCredentials.endSession(req.workerId);
        this.host.scheduleSoon();
        return {};
      }),
    };
  }
}
