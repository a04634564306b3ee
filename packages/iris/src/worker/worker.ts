// The worker daemon: registers with the controller, keeps the assignment stream open, reconciles
// (observed attempts up, the complete desired set down) on every notice and every tick, runs each
// attempt through the iris task runner in its own process group, and pushes the attempts' output.
// The protocol is specified in proto/README.md ("Worker protocol").
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { IrisError } from "../errors.ts";
import type { AttemptObservation } from "../internal/generated/iris/v1/AttemptObservation.ts";
import type { LogLine as WireLogLine } from "../internal/generated/iris/v1/LogLine.ts";
import type { PushLogsRequest } from "../internal/generated/iris/v1/PushLogsRequest.ts";
import type { ReconcileResponse__Output } from "../internal/generated/iris/v1/ReconcileResponse.ts";
import type { RunAttempt__Output } from "../internal/generated/iris/v1/RunAttempt.ts";
import { entrypointFromWire } from "../internal/codec.ts";
import { loadIrisProto, unary, type WorkerControlServiceClient } from "../internal/rpc.ts";
import { runnerArgv, type RunnerSpec } from "../runner/runnerSpec.ts";
import { readRunnerReport } from "../taskResult.ts";
import { withRunnerReport, type AttemptOutcome } from "./attemptOutcome.ts";
import { AttemptProcess, type LogLine } from "./attemptProcess.ts";
import { AttemptStore, killRecordedAttempt, spawnedRecord, type AttemptRecord } from "./attemptStore.ts";
import { GroupReaper } from "./groupReaper.ts";
import { allocatePorts } from "./ports.ts";
import { claimStateDir, defaultStateRoot, OWNER_FILE, releaseStateDir, sweepDeadStateDirs } from "./workerStateDir.ts";
import { buildTaskEnv, DEFAULT_ADVERTISE_HOST } from "./taskEnv.ts";

/** Options of {@link Worker.start}. */
export interface WorkerOptions {
  /** The controller's address, `host:port`. */
  controller: string;
  /** Bearer token for the controller; passed on to tasks as `IRIS_AUTH_TOKEN`. */
  token?: string;
  /** CPU capacity offered to the scheduler, in millicores. Default: one core per CPU. */
  cpuMillis?: number;
  /** Memory capacity offered to the scheduler, in bytes. Default: the machine's memory. */
  memoryBytes?: number;
  /** Attributes that job constraints match against. */
  attributes?: Record<string, string>;
  /**
   * Where the worker keeps its id and the records of its attempts. A worker restarted on the same
   * directory keeps its id and kills what its previous run left behind. Default: a fresh
   * directory of its own under {@link WorkerOptions.stateRoot}, removed by {@link Worker.stop}.
   */
  stateDir?: string;
  /**
   * Where workers started without `stateDir` keep their directories, one each. A starting worker
   * sweeps the directories there whose worker died on this host (SIGKILL, crash): it kills the
   * attempts they record and removes them. Default: `$IRIS_STATE_DIR`, else `~/.cache/iris/workers`.
   */
  stateRoot?: string;
  /** Reconcile interval; default: what the controller asks for at registration. */
  tickMs?: number;
  /** The host tasks advertise to others (`IRIS_ADVERTISE_HOST`). Default `127.0.0.1`. */
  advertiseHost?: string;
  /** Explicit worker id (default: kept in `stateDir`, else `<hostname>-<random>`). */
  workerId?: string;
  /** Time between SIGTERM and SIGKILL when stopping an attempt. Default 5 s. */
  killGraceMs?: number;
  /**
   * After this long without a successful exchange with the controller, the worker ends its
   * running attempts: by then the controller (if it is alive) has declared this worker lost and
   * is running them elsewhere, and two copies must not run side by side. Default: twice the
   * controller's worker timeout, and at least a minute.
   */
  controllerSilenceMs?: number;
  /** Kill attempts whose processes exceed their job's memory request (OOM). Default true. */
  enforceMemoryLimits?: boolean;
  /** Receives what the worker does (quiet by default). */
  onEvent?: (event: WorkerEvent) => void;
}

/** Something a worker did or saw, for logs and tests. */
export type WorkerEvent =
  | { type: "registered"; workerId: string; tickMs: number }
  | { type: "controllerUnreachable"; error: string; retryInMs: number }
  /** The controller refused this worker's credentials: the worker stops (see {@link Worker.done}). */
  | { type: "refused"; error: string }
  | { type: "attemptStarted"; attemptUid: string; taskId: string; attempt: number; pid: number }
  | { type: "attemptEnded"; attemptUid: string; taskId: string; attempt: number; state: string; failureKind: string; error: string }
  | { type: "leftoverKilled"; attemptUid: string; pid: number }
  /** A dead worker's state directory under the state root, cleaned up by this one. */
  | { type: "deadWorkerSwept"; dir: string; ownerPid: number | undefined; killed: { attemptUid: string; pid: number }[] };

/** A worker's view of one of its attempts. */
export interface LocalAttemptInfo {
  attemptUid: string;
  taskId: string;
  attempt: number;
  /** BUILDING | RUNNING | SUCCEEDED | FAILED | KILLED */
  state: string;
  pid: number;
  failureKind: string;
  exitCode?: number;
}

type LocalState = "BUILDING" | "RUNNING" | "SUCCEEDED" | "FAILED" | "KILLED";

interface LocalAttempt {
  uid: string;
  taskId: string;
  attempt: number;
  state: LocalState;
  exitCode?: number;
  failureKind: string;
  error: string;
  /** For APP_ERROR: the application's error code ("" otherwise). */
  errorCode: string;
  /** For SUCCEEDED: the JSON text of the entrypoint's return value ("" = none). */
  resultJson: string;
  pid: number;
  startedAtMs: number;
  finishedAtMs: number;
  /** Lines the controller has acknowledged (reported as `log_lines`). */
  logLines: number;
  /** Lines queued or in flight, not yet acknowledged. */
  unackedLines: number;
  proc?: AttemptProcess;
  /** Why the worker is ending it (a stop intent's reason, SUPERSEDED, WORKER_STOPPING, CONTROLLER_SILENT). */
  stopReason?: string;
}

const REGISTER_BACKOFF_START_MS = 100;
/** Issue 3: while the controller is unreachable, retry at least every 2 s. */
const REGISTER_BACKOFF_MAX_MS = 2000;
const RPC_DEADLINE_MS = 5000;
const DEFAULT_TICK_MS = 1000;
const LOG_FLUSH_MS = 20;
/** A finished attempt is reported finished only once its lines are in, or after this long. */
const LOG_HOLD_MS = 10_000;
const LOG_BATCH_LINES = 500;
/** Lines kept while no log stream can be opened; older ones are dropped first. */
const MAX_PENDING_LOG_LINES = 20_000;
/** How many forgotten attempt uids are remembered, so that none is ever started twice. */
const FORGOTTEN_UIDS_KEPT = 10_000;
/** Grace of an orphaned attempt (its worker died) between SIGTERM and SIGKILL. */
const ORPHAN_GRACE_MS = 2000;
/** The least silence from the controller after which a worker ends its attempts. */
const MIN_CONTROLLER_SILENCE_MS = 60_000;

const isTerminal = (s: LocalState): boolean => s === "SUCCEEDED" || s === "FAILED" || s === "KILLED";

/**
 * A worker daemon. Start it with {@link Worker.start}; it registers with the controller (retrying
 * while the controller is unreachable, so start order does not matter) and runs what it is
 * assigned until {@link Worker.stop}.
 *
 * @example
 * const worker = await Worker.start({ controller: "127.0.0.1:7070", attributes: { zone: "a" } });
 * // … later
 * await worker.stop();
 */
export class Worker {
  /** This worker's id (unique per state directory). */
  readonly id: string;
  /** The worker's state directory (attempt records and scratch space). */
  readonly stateDir: string;
  /**
   * Resolves once the worker has registered with the controller for the first time. Rejects with
   * the {@link IrisError} when the controller refuses the worker's token (UNAUTHENTICATED or
   * PERMISSION_DENIED), and with FAILED_PRECONDITION when the worker is stopped before it registered.
   */
  readonly registered: Promise<void>;
  /**
   * Settles once the worker has stopped: resolves after {@link Worker.stop}; rejects with the
   * {@link IrisError} when the worker stopped itself because the controller refused its token.
   */
  readonly done: Promise<void>;

  #opts: WorkerOptions;
  #client: WorkerControlServiceClient;
  #store: AttemptStore;
  #ownsStateDir: boolean;
  #advertiseHost: string;
  #tickMs: number;
  #attempts = new Map<string, LocalAttempt>();
  #forgotten = new Set<string>();
  /** Records a previous run of this worker left in the state directory, settled on the first response. */
  #leftovers: AttemptRecord[] | undefined;
  #isRegistered = false;
  /** When the controller last answered (registration or reconcile). */
  #lastContactMs = 0;
  #silenceMs = 60_000;
  #markRegistered!: () => void;
  #failRegistered!: (e: Error) => void;
  #settleDone!: (e: Error | undefined) => void;
  /** Why the worker stopped itself (a refused token). */
  #fatal: IrisError | undefined;
  #stopping = false;
  #stopped: Promise<void> | undefined;
  #loopDone: Promise<void> | undefined;
  #kicked = false;
  #wake: (() => void) | undefined;
  #watch: grpc.ClientReadableStream<unknown> | undefined;
  /** A PushLogs batch is on its way (one at a time, so that lines stay in order). */
  #logsInFlight: Promise<void> | undefined;
  #pendingLogs: { local: LocalAttempt; line: WireLogLine }[] = [];
  #flushTimer: NodeJS.Timeout | undefined;
  #starting = new Set<Promise<void>>();
  /** Ends the command attempts' groups if this process dies (see groupReaper.mjs). */
  #reaper: GroupReaper;
  /** The sweep of dead siblings' state directories, awaited by stop(). */
  #sweep: Promise<void> | undefined;

  private constructor(opts: WorkerOptions, stateDir: string, ownsStateDir: boolean, id: string) {
    this.#opts = opts;
    this.stateDir = stateDir;
    this.#ownsStateDir = ownsStateDir;
    this.id = id;
    this.#advertiseHost = opts.advertiseHost ?? DEFAULT_ADVERTISE_HOST;
    this.#tickMs = opts.tickMs ?? DEFAULT_TICK_MS;
    this.#store = new AttemptStore(stateDir);
    this.#client = workerControlClient(opts.controller, opts.token);
    this.#reaper = GroupReaper.start(ORPHAN_GRACE_MS);
    this.registered = new Promise((resolve, reject) => {
      this.#markRegistered = resolve;
      this.#failRegistered = reject;
    });
    this.done = new Promise((resolve, reject) => (this.#settleDone = (e) => (e === undefined ? resolve() : reject(e))));
    // Handled here so that a caller that never awaits them sees no unhandled rejection.
    this.registered.catch(() => undefined);
    this.done.catch(() => undefined);
  }

  /**
   * Starts a worker: prepares its state directory (claiming it, reading what a previous run left
   * there), then registers and reconciles in the background. Resolves without waiting for the
   * controller; await {@link Worker.registered} for that.
   */
  static async start(opts: WorkerOptions): Promise<Worker> {
    const ownsStateDir = opts.stateDir === undefined;
    const stateRoot = opts.stateRoot ?? defaultStateRoot();
    let stateDir: string;
    if (opts.stateDir !== undefined) {
      stateDir = opts.stateDir;
      fs.mkdirSync(stateDir, { recursive: true });
      claimStateDir(stateDir);
    } else {
      fs.mkdirSync(stateRoot, { recursive: true });
      stateDir = await fs.promises.mkdtemp(path.join(stateRoot, "worker-"));
      claimStateDir(stateDir);
    }
    let worker: Worker;
    let created: Worker | undefined;
    try {
      const id = opts.workerId ?? workerIdFor(stateDir);
      worker = new Worker(opts, stateDir, ownsStateDir, id);
      created = worker;
      const leftovers = worker.#store.list();
      worker.#leftovers = leftovers.length > 0 ? leftovers : undefined;
    } catch (e) {
      if (created !== undefined) created.#reaper.close();
      releaseStateDir(stateDir);
      if (ownsStateDir) fs.rmSync(stateDir, { recursive: true, force: true });
      throw e;
    }
    if (ownsStateDir) {
      // In the background: the kills take up to a grace period, and must not delay registration.
      worker.#sweep = sweepDeadStateDirs(stateRoot, { killGraceMs: opts.killGraceMs ?? 5000 }).then(
        (swept) => {
          for (const s of swept) {
            for (const k of s.killed) worker.#emit({ type: "leftoverKilled", ...k });
            worker.#emit({ type: "deadWorkerSwept", ...s });
          }
        },
        () => undefined,
      );
    }
    worker.#loopDone = worker.#loop();
    return worker;
  }

  /** The attempts this worker currently knows about. */
  attempts(): LocalAttemptInfo[] {
    return [...this.#attempts.values()].map((a) => ({
      attemptUid: a.uid,
      taskId: a.taskId,
      attempt: a.attempt,
      state: a.state,
      pid: a.pid,
      failureKind: a.failureKind,
      ...(a.exitCode === undefined ? {} : { exitCode: a.exitCode }),
    }));
  }

  /**
   * Stops the worker: ends its loop and streams, kills its attempts (SIGTERM, then SIGKILL after
   * the grace period), tells the controller they were lost with the worker (so they are retried
   * elsewhere against the preemption budget), and removes a state directory it created.
   */
  stop(): Promise<void> {
    this.#stopped ??= this.#shutdown().finally(() => this.#settleDone(this.#fatal));
    return this.#stopped;
  }

  async #shutdown(): Promise<void> {
    this.#stopping = true;
    // A no-op once registered.
    this.#failRegistered(this.#fatal ?? new IrisError("FAILED_PRECONDITION", "the worker was stopped before it registered"));
    this.#wake?.();
    this.#watch?.cancel();
    await this.#loopDone;
    for (const a of this.#attempts.values()) {
      if (isTerminal(a.state)) continue;
      a.stopReason = "WORKER_STOPPING";
      void a.proc?.stop(this.#opts.killGraceMs);
    }
    // Each start resolves once its attempt has ended and been classified.
    await Promise.all(this.#starting);
    // Their last lines go out first (a bounded wait: the controller may be gone).
    const logsDeadline = Date.now() + 2000;
    while (this.#isRegistered && Date.now() < logsDeadline && (this.#pendingLogs.length > 0 || this.#logsInFlight)) {
      this.#flushLogs();
      await Promise.race([this.#logsInFlight, new Promise((resolve) => setTimeout(resolve, 100))]);
    }
    clearTimeout(this.#flushTimer);
    if (this.#isRegistered) {
      try {
        await unary(this.#client, "reconcile", this.#reconcileRequest(), { deadlineMs: 1000 });
      } catch {
        // The controller will find out from the silence.
      }
    }
    this.#client.close();
    this.#reaper.close();
    await this.#sweep;
    releaseStateDir(this.stateDir);
    if (this.#ownsStateDir) fs.rmSync(this.stateDir, { recursive: true, force: true });
    else fs.rmSync(path.join(this.stateDir, OWNER_FILE), { force: true });
  }

  // ---- the loop -------------------------------------------------------------------------------

  async #loop(): Promise<void> {
    let backoff = REGISTER_BACKOFF_START_MS;
    const retryLater = async (error: unknown): Promise<void> => {
      this.#fenceIfSilent();
      this.#emit({ type: "controllerUnreachable", error: errorText(error), retryInMs: backoff });
      await this.#sleep(backoff);
      backoff = Math.min(backoff * 2, REGISTER_BACKOFF_MAX_MS);
    };
    while (!this.#stopping) {
      if (!this.#isRegistered) {
        try {
          await this.#register();
        } catch (e) {
          if (isRefusal(e)) return this.#refused(e);
          await retryLater(e);
          continue;
        }
      }
      this.#ensureWatch();
      this.#kicked = false;
      try {
        await this.#reconcileOnce();
        this.#lastContactMs = Date.now();
        backoff = REGISTER_BACKOFF_START_MS;
      } catch (e) {
        if (e instanceof IrisError && e.code === "NOT_FOUND") {
          // The controller forgot this worker (or declared it lost): register again, same id.
          this.#isRegistered = false;
          continue;
        }
        if (isRefusal(e)) return this.#refused(e);
        await retryLater(e);
        continue;
      }
      if (!this.#kicked) await this.#sleep(this.#tickMs);
    }
  }

  /**
   * The controller refused the token: retrying cannot help (unlike an unreachable controller), so
   * the worker stops, ending its attempts, and {@link Worker.registered} and {@link Worker.done}
   * reject with the error.
   */
  #refused(e: IrisError): void {
    this.#fatal = e;
    this.#emit({ type: "refused", error: e.toString() });
    void this.stop();
  }

  /** Ends the running attempts once the controller has been silent for too long (see controllerSilenceMs). */
  #fenceIfSilent(): void {
    if (this.#lastContactMs === 0 || Date.now() - this.#lastContactMs < this.#silenceMs) return;
    for (const a of this.#attempts.values()) {
      if (!isTerminal(a.state)) this.#stopAttempt(a, "CONTROLLER_SILENT");
    }
  }

  /** Reconciles as soon as possible (a notice arrived, or a local attempt changed state). */
  #kick(): void {
    this.#kicked = true;
    this.#wake?.();
  }

  #sleep(ms: number): Promise<void> {
    if (this.#stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = undefined;
        done();
      };
    });
  }

  async #register(): Promise<void> {
    const res = await unary(
      this.#client,
      "registerWorker",
      {
        workerId: this.id,
        host: this.#advertiseHost,
        attributes: this.#opts.attributes ?? {},
        capacity: {
          cpuMillis: this.#opts.cpuMillis ?? os.availableParallelism() * 1000,
          memoryBytes: this.#opts.memoryBytes ?? os.totalmem(),
          devices: [],
        },
      },
      { deadlineMs: RPC_DEADLINE_MS },
    );
    if (res.workerId !== "" && res.workerId !== this.id) {
      throw new IrisError("INTERNAL", `the controller registered this worker as ${res.workerId}, not ${this.id}`);
    }
    if (this.#opts.tickMs === undefined && res.reconcileIntervalMs > 0) this.#tickMs = res.reconcileIntervalMs;
    // At least a minute: a controller restarting (and adopting what runs) must not be mistaken for one
    // that declared this worker lost.
    this.#silenceMs = this.#opts.controllerSilenceMs ?? Math.max(2 * res.workerTimeoutMs, MIN_CONTROLLER_SILENCE_MS);
    this.#lastContactMs = Date.now();
    this.#isRegistered = true;
    this.#emit({ type: "registered", workerId: this.id, tickMs: this.#tickMs });
    this.#markRegistered();
  }

  #ensureWatch(): void {
    if (this.#watch !== undefined || this.#stopping) return;
    const call = this.#client.watchAssignments({ workerId: this.id });
    this.#watch = call;
    call.on("data", () => this.#kick());
    call.on("error", (err: grpc.ServiceError) => {
      // NOT_FOUND (5): the controller does not know this worker; the next reconcile says so too.
      // Anything else: reopened on the next pass of the loop.
      if (this.#watch === call) this.#watch = undefined;
      if (err.code === 5) this.#kick();
    });
    call.on("end", () => {
      if (this.#watch === call) this.#watch = undefined;
    });
  }

  // ---- reconcile ------------------------------------------------------------------------------

  #observation(a: LocalAttempt): AttemptObservation {
    // A finished attempt whose last lines are still on their way is reported running a little
    // longer: the controller takes `log_lines` of a finished attempt as the complete count.
    // (Not when the worker is going away: its last report must say how its attempts ended.)
    const holding =
      !this.#stopping && isTerminal(a.state) && a.unackedLines > 0 && Date.now() - a.finishedAtMs < LOG_HOLD_MS;
    if (holding) {
      return { attemptUid: a.uid, taskId: a.taskId, attempt: a.attempt, state: "RUNNING", pid: a.pid, startedAtMs: a.startedAtMs, logLines: a.logLines };
    }
    return {
      attemptUid: a.uid,
      taskId: a.taskId,
      attempt: a.attempt,
      state: a.state,
      ...(a.exitCode === undefined ? {} : { exitCode: a.exitCode }),
      failureKind: a.failureKind,
      error: a.error,
      errorCode: a.errorCode,
      resultJson: a.resultJson,
      pid: a.pid,
      startedAtMs: a.startedAtMs,
      finishedAtMs: a.finishedAtMs,
      logLines: a.logLines,
    };
  }

  #reconcileRequest(): { workerId: string; observed: AttemptObservation[]; health: { healthy: boolean; error: string } } {
    return {
      workerId: this.id,
      observed: [...this.#attempts.values()].map((a) => this.#observation(a)),
      health: this.#stopping ? { healthy: false, error: "the worker is stopping" } : { healthy: true, error: "" },
    };
  }

  async #reconcileOnce(): Promise<void> {
    const request = this.#reconcileRequest();
    const reportedFinished = new Set(
      request.observed.filter((o) => isTerminal(o.state as LocalState)).map((o) => o.attemptUid as string),
    );
    const response = await unary(this.#client, "reconcile", request, { deadlineMs: RPC_DEADLINE_MS });
    if (this.#stopping) return;
    this.#apply(response, reportedFinished);
  }

  #apply(response: ReconcileResponse__Output, reportedFinished: ReadonlySet<string>): void {
    const run = new Map(response.run.map((r) => [r.attemptUid, r]));
    const stop = new Map(response.stop.map((s) => [s.attemptUid, s.reason]));

    if (this.#leftovers !== undefined) {
      const leftovers = this.#leftovers;
      this.#leftovers = undefined;
      for (const record of leftovers) this.#settleLeftover(record, run.get(record.attemptUid));
      // Lost ones are reported at once, not a tick later.
      this.#kick();
    }

    for (const [uid, spec] of run) {
      if (this.#attempts.has(uid) || this.#forgotten.has(uid)) continue;
      const starting = this.#start(spec);
      this.#starting.add(starting);
      void starting.finally(() => this.#starting.delete(starting));
    }

    for (const a of [...this.#attempts.values()]) {
      if (isTerminal(a.state)) {
        if (!run.has(a.uid) && reportedFinished.has(a.uid)) this.#forget(a);
        continue;
      }
      const reason = stop.get(a.uid);
      if (reason !== undefined) this.#stopAttempt(a, reason === "" ? "KILLED" : reason);
      else if (!run.has(a.uid)) this.#stopAttempt(a, "SUPERSEDED");
    }
  }

  /**
   * An attempt a previous run of this worker started. Its process cannot be supervised again
   * (its output pipes died with that run), so it is killed whatever happens; if the controller
   * still wants it, it is reported lost so that the task is retried.
   */
  #settleLeftover(record: AttemptRecord, wanted: RunAttempt__Output | undefined): void {
    const grace = this.#opts.killGraceMs ?? 5000;
    if (record.pid !== undefined) {
      const pid = record.pid;
      void killRecordedAttempt(record, grace).then(
        () => this.#emit({ type: "leftoverKilled", attemptUid: record.attemptUid, pid }),
        () => undefined,
      );
    }
    if (wanted === undefined) {
      this.#store.remove(record.attemptUid);
      return;
    }
    this.#attempts.set(record.attemptUid, {
      uid: record.attemptUid,
      taskId: wanted.taskId,
      attempt: wanted.attempt,
      state: "FAILED",
      failureKind: "WORKER_LOST",
      error: "the worker restarted while the attempt was running",
      errorCode: "",
      resultJson: "",
      pid: record.pid ?? 0,
      startedAtMs: record.startedAtMs,
      finishedAtMs: Date.now(),
      logLines: 0,
      unackedLines: 0,
    });
  }

  #forget(a: LocalAttempt): void {
    this.#attempts.delete(a.uid);
    this.#forgotten.add(a.uid);
    if (this.#forgotten.size > FORGOTTEN_UIDS_KEPT) {
      this.#forgotten.delete(this.#forgotten.values().next().value as string);
    }
    try {
      this.#store.remove(a.uid);
    } catch {
      // A record that cannot be removed is settled again after a restart.
    }
  }

  #stopAttempt(a: LocalAttempt, reason: string): void {
    if (a.stopReason !== undefined) return;
    a.stopReason = reason;
    void a.proc?.stop(this.#opts.killGraceMs);
  }

  // ---- attempts -------------------------------------------------------------------------------

  async #start(spec: RunAttempt__Output): Promise<void> {
    const local: LocalAttempt = {
      uid: spec.attemptUid,
      taskId: spec.taskId,
      attempt: spec.attempt,
      state: "BUILDING",
      failureKind: "",
      error: "",
      errorCode: "",
      resultJson: "",
      pid: 0,
      startedAtMs: Date.now(),
      finishedAtMs: 0,
      logLines: 0,
      unackedLines: 0,
    };
    this.#attempts.set(local.uid, local);
    let outcome: AttemptOutcome;
    let resultPath: string | undefined;
    try {
      const record: AttemptRecord = {
        attemptUid: local.uid,
        attemptId: `${local.taskId}:${local.attempt}`,
        startedAtMs: local.startedAtMs,
      };
      // Written before the spawn: a crash right after it still leaves a trace to clean up.
      this.#store.write(record);
      const ports = await allocatePorts(spec.ports);
      if (local.stopReason !== undefined || this.#stopping) {
        this.#finish(local, { kind: "KILLED", message: "the attempt was stopped before it started" });
        return;
      }
      const env = buildTaskEnv(
        {
          controllerAddress: this.#opts.controller,
          ...(this.#opts.token === undefined ? {} : { authToken: this.#opts.token }),
          jobId: spec.jobId,
          taskId: spec.taskId,
          taskIndex: spec.taskIndex,
          numTasks: spec.numTasks,
          attempt: spec.attempt,
          workerId: this.id,
          advertiseHost: this.#advertiseHost,
          ports,
        },
        spec.env,
      );
      const scratch = this.#store.scratchDir(local.uid);
      const specPath = path.join(scratch, "runner.json");
      const entrypoint = entrypointFromWire(spec.entrypoint);
      if (entrypoint === undefined) throw new Error("entrypoint: expected a command or a module");
      if ("module" in entrypoint) resultPath = path.join(scratch, "result.json");
      const runnerSpec: RunnerSpec = {
        entrypoint,
        parentPid: process.pid,
        orphanGraceMs: ORPHAN_GRACE_MS,
        ...(resultPath === undefined ? {} : { resultPath }),
      };
      fs.writeFileSync(specPath, JSON.stringify(runnerSpec));
      const memoryBytes = spec.resources?.memoryBytes ?? 0;
      // A command runs directly in its own group when the reaper is up to end it if this worker
      // dies; otherwise (and for module entrypoints) under a runner that watches the worker itself.
      const direct = "command" in entrypoint && (await this.#reaper.started) && this.#reaper.ready;
      if (local.stopReason !== undefined || this.#stopping) {
        this.#finish(local, { kind: "KILLED", message: "the attempt was stopped before it started" });
        return;
      }
      const proc = AttemptProcess.spawn({
        ...("command" in entrypoint && direct
          ? { argv: entrypoint.command, ...(entrypoint.cwd === undefined ? {} : { cwd: entrypoint.cwd }) }
          : { argv: runnerArgv(entrypoint, specPath), ipc: true }),
        env,
        ...(spec.timeoutMs > 0 ? { timeoutMs: spec.timeoutMs } : {}),
        ...(this.#opts.killGraceMs === undefined ? {} : { killGraceMs: this.#opts.killGraceMs }),
        ...(memoryBytes > 0 && this.#opts.enforceMemoryLimits !== false ? { memoryLimitBytes: memoryBytes } : {}),
        onLine: (line) => this.#queueLine(local, line),
      });
      local.proc = proc;
      if (direct && proc.pid !== undefined) {
        const pgid = proc.pid;
        this.#reaper.add(pgid);
        void proc.exited.finally(() => this.#reaper.remove(pgid));
      }
      if (proc.pid !== undefined) {
        local.pid = proc.pid;
        local.state = "RUNNING";
        this.#store.write(spawnedRecord(record, proc.pid));
        this.#emit({ type: "attemptStarted", attemptUid: local.uid, taskId: local.taskId, attempt: local.attempt, pid: proc.pid });
        this.#kick();
      }
      outcome = await proc.exited;
      if (resultPath !== undefined) outcome = withRunnerReport(outcome, readRunnerReport(resultPath));
    } catch (e) {
      outcome = { kind: "LAUNCH_FAILED", message: `could not start the attempt: ${errorText(e)}` };
    }
    this.#finish(local, outcome);
  }

  #finish(local: LocalAttempt, outcome: AttemptOutcome): void {
    local.proc = undefined;
    // The attempt's last lines go out now; its end is reported once they are in (#observation).
    this.#flushLogs();
    local.finishedAtMs = Date.now();
    if (outcome.exitCode !== undefined) local.exitCode = outcome.exitCode;
    if (outcome.kind === "APP_EXIT" && outcome.exitCode === 0) {
      local.state = "SUCCEEDED";
      local.resultJson = outcome.resultJson ?? "";
    } else if (outcome.kind === "KILLED" && (local.stopReason === "WORKER_STOPPING" || local.stopReason === "CONTROLLER_SILENT")) {
      local.state = "FAILED";
      local.failureKind = "WORKER_LOST";
      local.error =
        local.stopReason === "WORKER_STOPPING" ? "the worker was stopped" : "the worker lost contact with the controller";
    } else if (outcome.kind === "KILLED") {
      local.state = "KILLED";
      local.failureKind = local.stopReason === "TIMEOUT" ? "TIMEOUT" : "KILLED";
      local.error = `stopped by the controller (${local.stopReason ?? "KILLED"})`;
    } else {
      local.state = "FAILED";
      local.failureKind = outcome.kind;
      local.error = outcome.message;
      local.errorCode = outcome.errorCode ?? "";
    }
    this.#emit({
      type: "attemptEnded",
      attemptUid: local.uid,
      taskId: local.taskId,
      attempt: local.attempt,
      state: local.state,
      failureKind: local.failureKind,
      error: local.error,
    });
    this.#kick();
  }

  // ---- logs -----------------------------------------------------------------------------------

  #queueLine(local: LocalAttempt, line: LogLine): void {
    this.#pendingLogs.push({
      local,
      line: { attemptUid: local.uid, stream: line.stream, line: line.line, timeMs: line.timeMs },
    });
    local.unackedLines++;
    if (this.#pendingLogs.length > MAX_PENDING_LOG_LINES) this.#pendingLogs.shift()!.local.unackedLines--;
    if (this.#pendingLogs.length >= LOG_BATCH_LINES) this.#flushLogs();
    else this.#flushTimer ??= setTimeout(() => this.#flushLogs(), LOG_FLUSH_MS);
  }

  /**
   * Sends the next batch of lines as one PushLogs call and counts them once the controller has
   * answered. A failed batch goes back to the head of the queue and is retried a tick later, so
   * lines printed while the controller is away are delivered when it is back (bounded by
   * MAX_PENDING_LOG_LINES, oldest dropped first).
   */
  #flushLogs(): void {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#logsInFlight !== undefined || this.#pendingLogs.length === 0) return;
    if (!this.#isRegistered) {
      this.#flushTimer = setTimeout(() => this.#flushLogs(), this.#tickMs);
      return;
    }
    const batch = this.#pendingLogs.splice(0, LOG_BATCH_LINES);
    this.#logsInFlight = new Promise<void>((resolve) => {
      const call = this.#client.pushLogs({ deadline: Date.now() + RPC_DEADLINE_MS }, (err) => {
        this.#logsInFlight = undefined;
        resolve();
        if (err !== null) {
          this.#pendingLogs.unshift(...batch);
          while (this.#pendingLogs.length > MAX_PENDING_LOG_LINES) this.#pendingLogs.shift()!.local.unackedLines--;
          if (!this.#stopping) this.#flushTimer = setTimeout(() => this.#flushLogs(), this.#tickMs);
          return;
        }
        let released = false;
        for (const c of batch) {
          c.local.logLines++;
          c.local.unackedLines--;
          if (c.local.unackedLines === 0 && isTerminal(c.local.state)) released = true;
        }
        // A finished attempt whose lines are now all in can be reported finished.
        if (released) this.#kick();
        if (this.#pendingLogs.length > 0) this.#flushLogs();
      });
      call.on("error", () => undefined);
      call.write({ lines: batch.map((c) => c.line) } satisfies PushLogsRequest);
      call.end();
    });
  }

  #emit(event: WorkerEvent): void {
    try {
      this.#opts.onEvent?.(event);
    } catch {
      // A faulty listener must not take the worker down.
    }
  }
}

/**
 * The worker's channel to the controller. Its reconnect backoff is capped like registration's:
 * grpc-js otherwise backs off up to 2 minutes between connection attempts, and calls made in
 * between fail at once, so a controller back from an outage would go unnoticed for that long.
 */
function workerControlClient(address: string, token: string | undefined): WorkerControlServiceClient {
  const { WorkerControlService } = loadIrisProto();
  const bearer: grpc.Interceptor = (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set("authorization", `Bearer ${token}`);
        next(metadata, listener);
      },
    });
  return new WorkerControlService(address, grpc.credentials.createInsecure(), {
    interceptors: token !== undefined && token !== "" ? [bearer] : [],
    "grpc.initial_reconnect_backoff_ms": REGISTER_BACKOFF_START_MS,
    "grpc.max_reconnect_backoff_ms": REGISTER_BACKOFF_MAX_MS,
    "grpc.keepalive_time_ms": 30_000,
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
  });
}

/** The id kept in the state directory, created on first use. */
function workerIdFor(stateDir: string): string {
  const file = path.join(stateDir, "worker.json");
  try {
    const saved = JSON.parse(fs.readFileSync(file, "utf8")) as { workerId?: unknown };
    if (typeof saved.workerId === "string" && saved.workerId !== "") return saved.workerId;
  } catch {
    // No id yet.
  }
  const workerId = `${os.hostname()}-${randomUUID().slice(0, 8)}`;
  fs.writeFileSync(file, JSON.stringify({ workerId }));
  return workerId;
}

/** A refusal of the worker's credentials, which no retry can fix. */
function isRefusal(e: unknown): e is IrisError {
  return e instanceof IrisError && (e.code === "UNAUTHENTICATED" || e.code === "PERMISSION_DENIED");
}

function errorText(e: unknown): string {
  if (e instanceof IrisError) return e.toString();
  return e instanceof Error ? e.message : String(e);
}
