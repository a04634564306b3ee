// Test fixture: the worker-facing half of a controller, served over real gRPC on loopback, whose
// desired sets a test scripts by hand. It records what workers report and the lines they push.
// (End-to-end tests against the real controller live beside it; this one exercises the protocol's
// corners — restarts, zombies, unreachable controllers — on demand.)
import * as grpc from "@grpc/grpc-js";
import type { AttemptObservation__Output } from "../../internal/generated/iris/v1/AttemptObservation.ts";
import type { LogLine__Output } from "../../internal/generated/iris/v1/LogLine.ts";
import type { RunAttempt } from "../../internal/generated/iris/v1/RunAttempt.ts";
import type { StopAttempt } from "../../internal/generated/iris/v1/StopAttempt.ts";
import type { WorkerControlServiceHandlers } from "../../internal/generated/iris/v1/WorkerControlService.ts";
import { isAuthorized, loadIrisProto } from "../../internal/rpc.ts";

/** A scripted controller for worker tests. */
export class FakeController {
  readonly address: string;
  /** Attempts every worker should run, by uid. */
  readonly run = new Map<string, RunAttempt>();
  /** Stop intents, by uid. */
  readonly stop = new Map<string, StopAttempt>();
  /** The latest observation of each attempt uid. */
  readonly observed = new Map<string, AttemptObservation__Output>();
  readonly registrations: string[] = [];
  readonly lines: LogLine__Output[] = [];
  reconciles = 0;
  /** When set, a PushLogs batch it answers with a status is refused (nothing of it is recorded). */
  refuseLogs: ((lines: LogLine__Output[]) => Partial<grpc.StatusObject> | undefined) | undefined;
  /** When set, Reconcile fails with NOT_FOUND once (the controller "forgot" the worker). */
  forgetWorkerOnce = false;
  #server: grpc.Server;
  /** Worker ids that deregistered, in order. */
  readonly deregistrations: string[] = [];
  #watchers = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  #generation = 0;

  private constructor(server: grpc.Server, address: string) {
    this.#server = server;
    this.address = address;
  }

  static async start(opts: { port?: number; token?: string; reconcileIntervalMs?: number; workerTimeoutMs?: number } = {}): Promise<FakeController> {
    const server = new grpc.Server();
    const ref: { self?: FakeController } = {};
    const authorized = (call: { metadata: grpc.Metadata }): boolean => isAuthorized(call.metadata, opts.token);
    const denied = { code: grpc.status.UNAUTHENTICATED, details: "missing or invalid bearer token" };
    const handlers: WorkerControlServiceHandlers = {
      RegisterWorker(call, cb) {
        if (!authorized(call)) return cb(denied);
        ref.self!.registrations.push(call.request.workerId);
        cb(null, { workerId: call.request.workerId, reconcileIntervalMs: opts.reconcileIntervalMs ?? 100, workerTimeoutMs: opts.workerTimeoutMs ?? 30_000 });
      },
      Reconcile(call, cb) {
        if (!authorized(call)) return cb(denied);
        const c = ref.self!;
        if (c.forgetWorkerOnce) {
          c.forgetWorkerOnce = false;
          return cb({ code: grpc.status.NOT_FOUND, details: "unknown worker" });
        }
        c.reconciles++;
        for (const o of call.request.observed) c.observed.set(o.attemptUid, o);
        cb(null, { run: [...c.run.values()], stop: [...c.stop.values()] });
      },
      WatchAssignments(call) {
        if (!authorized(call)) {
          call.emit("error", denied);
          return;
        }
        const c = ref.self!;
        c.#watchers.add(call as grpc.ServerWritableStream<unknown, unknown>);
        call.on("cancelled", () => c.#watchers.delete(call as grpc.ServerWritableStream<unknown, unknown>));
      },
      PushLogs(call, cb) {
        if (!authorized(call)) return cb(denied);
        let refused: Partial<grpc.StatusObject> | undefined;
        call.on("data", (req: { lines: LogLine__Output[] }) => {
          refused ??= ref.self!.refuseLogs?.(req.lines);
          if (refused === undefined) ref.self!.lines.push(...req.lines);
        });
        call.on("end", () => (refused ? cb(refused) : cb(null, {})));
        call.on("error", () => undefined);
      },
      FetchBundle(call) {
        call.emit("error", { code: grpc.status.NOT_FOUND, details: "the fake controller stores no bundles" });
      },
      DeregisterWorker(call, cb) {
        if (!authorized(call)) return cb(denied);
        ref.self!.deregistrations.push(call.request.workerId);
        cb(null, {});
      },
    };
    server.addService(loadIrisProto().WorkerControlService.service, handlers);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${opts.port ?? 0}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    ref.self = new FakeController(server, `127.0.0.1:${port}`);
    return ref.self;
  }

  /** Tells every watching worker that its desired set changed. */
  notify(): void {
    this.#generation++;
    for (const w of this.#watchers) w.write({ generation: this.#generation });
  }

  /** Lines pushed for one attempt, in order. */
  linesOf(attemptUid: string): string[] {
    return this.lines.filter((l) => l.attemptUid === attemptUid).map((l) => l.line);
  }

  async close(): Promise<void> {
    for (const w of this.#watchers) w.end();
    this.#server.forceShutdown();
  }
}

/** A RunAttempt for a command, with the fields a test rarely cares about filled in. */
export function runCommand(uid: string, argv: string[], extra: Partial<RunAttempt> = {}): RunAttempt {
  return {
    attemptUid: uid,
    jobId: "/test/job",
    jobInstanceId: "inst-1",
    taskId: "/test/job/0",
    taskIndex: 0,
    numTasks: 1,
    attempt: 1,
    entrypoint: { command: { argv, cwd: "" } },
    env: {},
    ports: [],
    resources: { cpuMillis: 100, memoryBytes: 0, devices: [] },
    timeoutMs: 0,
    ...extra,
  };
}
