// The worker's shared shapes: its options and events, its record of each attempt, and the context
// its three parts (reconciler.ts, attemptLauncher.ts, logShipper.ts) share.
import { IrisError } from "../errors.ts";
import type { AttemptObservation as WireObservation } from "../internal/generated/iris/v1/AttemptObservation.ts";
import type { WorkerControlServiceClient } from "../internal/rpc.ts";
import type { AttemptProcess } from "./attemptProcess.ts";
import type { AttemptStore } from "./attemptStore.ts";
import type { BundleCache } from "./bundleCache.ts";
import type { KeptAttempt } from "./keptAttempt.ts";

/**
 * How long a preemptible worker holds an attempt that a foreign signal killed, waiting to learn
 * whether the worker itself is being stopped by the same event.
 */
export const PREEMPT_WINDOW_MS = 2000;

/** Options of {@link Worker.start}. */
export interface WorkerOptions {
  /** The controller's address, `host:port`. */
  controller: string;
  /**
   * Bearer token for the controller (a worker or admin identity). Never handed to tasks: each
   * attempt gets its own task token from the controller as `IRIS_AUTH_TOKEN`. Default:
   * `IRIS_AUTH_TOKEN`, else the token a loopback controller at this address minted and recorded in
   * this user's credentials file; `""`: none.
   */
  token?: string;
  /** TLS: the CA (PEM file or text) the controller's certificate chains to; default `IRIS_TLS_CA`. Passed on to tasks. */
  tlsCa?: string;
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
  /**
   * Bounds of the log pipeline (batch and queue sizes; see `LogLimits`). The defaults suit
   * production; tests scale them down.
   */
  logLimits?: Partial<LogLimits>;
  /**
   * The worker runs where its host can be taken back (a Slurm job: scancel, the time limit,
   * preemption). An attempt killed by a signal the worker did not send is held for a moment
   * ({@link PREEMPT_WINDOW_MS}): the same signal usually reaches the worker too, and when it then
   * stops preempted ({@link Worker.stop}) the attempt is handed back PREEMPTED rather than failed.
   */
  preemptible?: boolean;
  /**
   * Where fetched code bundles are unpacked and built, one directory per bundle (kept across
   * restarts). Default: `$IRIS_BUNDLE_CACHE`, else `~/.cache/iris/bundles`.
   */
  bundleCacheDir?: string;
  /**
   * Built bundles the cache keeps: after each build, the least recently used beyond this many are
   * removed unless a live process (an attempt, on any worker sharing the cache) runs from them.
   * 0 keeps all. Default 8.
   */
  bundleCacheKeep?: number;
  /**
   * Whether attempts survive a restart of this worker and are adopted by the next one on the same
   * `stateDir` (default: true with `stateDir`, which keeps the worker's id; without it, never).
   * Each attempt then runs under an attempt keeper that holds its output and exit status; an
   * attempt whose worker does not come back within `adoptGraceMs` ends by itself.
   */
  adoptAttempts?: boolean;
  /** How long a kept attempt outlives its worker waiting to be adopted (default 10 s). */
  adoptGraceMs?: number;
  /** Extra flags of the bundles' `pnpm install --frozen-lockfile --offline` (e.g. `["--ignore-scripts"]`). */
  bundleInstallFlags?: string[];
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
  /** An attempt a previous run of this worker started, taken over (still running, or ended meanwhile). */
  | { type: "attemptAdopted"; attemptUid: string; taskId: string; attempt: number; pid: number }
  /** The controller drained this worker and it has nothing left running: it deregisters and stops. */
  | { type: "drained" }
  /** A dead worker's state directory under the state root, cleaned up by this one. */
  | { type: "deadWorkerSwept"; dir: string; ownerPid: number | undefined; killed: { attemptUid: string; pid: number }[] };

/** The bounds of a worker's log pipeline (`WorkerOptions.logLimits`; defaults: `DEFAULT_LOG_LIMITS` in logShipper.ts). */
export interface LogLimits {
  /** Lines per PushLogs batch (default 2,000). */
  batchLines: number;
  /** UTF-8 bytes of line text per PushLogs batch (default 1 MiB; gRPC's limit is 64 MiB). */
  batchBytes: number;
  /** Lines queued before the attempts' pipes are paused (default 20,000). */
  maxPendingLines: number;
  /** Bytes queued before the attempts' pipes are paused (default 16 MiB). */
  maxPendingBytes: number;
  /** How long a line may wait for a batch to fill (default 20 ms). */
  flushMs: number;
  /** Tries of a batch the controller refuses (not UNAVAILABLE/DEADLINE_EXCEEDED) before it is dropped (default 3). */
  refusedTries: number;
}

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

/** The states of an attempt on its worker. */
export type LocalState = "BUILDING" | "RUNNING" | "SUCCEEDED" | "FAILED" | "KILLED";

/** A worker's record of one of its attempts, shared by its reconciler, launcher and log shipper. */
export interface LocalAttempt {
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
  /** Index of the attempt's next log line sent (the controller drops resends below what it has). */
  nextLogIndex: number;
  /** Lines lost because the controller refused their batch (each loss is marked in the log). */
  droppedLogLines: number;
  proc?: AttemptProcess | KeptAttempt;
  /** Why the worker is ending it (a stop intent's reason, SUPERSEDED, WORKER_STOPPING, CONTROLLER_SILENT). */
  stopReason?: string;
}

/** Whether a local attempt has ended. */
export function isTerminal(s: LocalState): boolean {
  return s === "SUCCEEDED" || s === "FAILED" || s === "KILLED";
}

/** What the worker's parts share: its identity, channel, attempts and the few flags they all read. */
export interface WorkerContext {
  readonly id: string;
  readonly opts: WorkerOptions;
  readonly client: WorkerControlServiceClient;
  readonly store: AttemptStore;
  readonly bundles: BundleCache;
  /** The heartbeat file this worker touches, when its attempts are adoptable (see adoptAttempts). */
  readonly heartbeatFile: string | undefined;
  /** Every attempt the worker knows about, by uid. */
  readonly attempts: Map<string, LocalAttempt>;
  /** The worker is stopping (set once by Worker.stop). */
  stopping: boolean;
  /** Why the worker was preempted, when {@link Worker.stop} was told so (its attempts end PREEMPTED). */
  preemptedWhy?: string | undefined;
  /** Registered with the controller (false again after a NOT_FOUND until it registers again). */
  isRegistered: boolean;
  /** A random nonce of this worker process: the controller binds the worker's session to it. */
  readonly instanceId: string;
  /**
   * The session the controller returned at registration (auth on): the bearer token of every
   * later call, kept in memory only. Undefined: the configured token is used.
   */
  session: string | undefined;
  /** The reconcile interval. */
  tickMs: number;
  emit(event: WorkerEvent): void;
  /** Reconcile as soon as possible (a notice arrived, or a local attempt changed state). */
  kick(): void;
}

/** Deadline of the worker's RPCs to the controller. */
export const RPC_DEADLINE_MS = 5000;

/** The text of an error for events and messages. */
export function errorText(e: unknown): string {
  if (e instanceof IrisError) return e.toString();
  return e instanceof Error ? e.message : String(e);
}

// ---- the worker's side of reconcile -------------------------------------------------------------

/**
 * A worker's attempt as the observation it reports. `holding`: a finished attempt whose last log
 * lines are still on their way, reported RUNNING a little longer (see the worker protocol).
 */
export function observationToWire(a: LocalAttempt, holding: boolean): WireObservation {
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
