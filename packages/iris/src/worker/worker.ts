// The worker daemon: registers with the controller, keeps the assignment stream open, reconciles
// (observed attempts up, the complete desired set down) on every notice and every tick, runs each
// attempt through the iris task runner in its own process group, and pushes the attempts' output.
// This file owns the daemon's lifecycle (state directory, start, stop); its three parts are
// reconciler.ts (registration, watch, reconcile), attemptLauncher.ts (attempts' processes) and
// logShipper.ts (PushLogs). The protocol is specified in proto/README.md ("Worker protocol").
import { resolveToken } from "../credentials.ts";
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { IrisError } from "../errors.ts";
import { createWorkerControlClient, unary } from "../internal/rpc.ts";
import { AttemptLauncher, ORPHAN_GRACE_MS } from "./attemptLauncher.ts";
import { AttemptStore } from "./attemptStore.ts";
import { BundleCache } from "./bundleCache.ts";
import { HEARTBEAT_FILE } from "./keptAttempt.ts";
import { GroupReaper } from "./groupReaper.ts";
import { LogShipper } from "./logShipper.ts";
import { Reconciler, REGISTER_BACKOFF_MAX_MS, REGISTER_BACKOFF_START_MS } from "./reconciler.ts";
import { claimStateDir, defaultStateRoot, OWNER_FILE, releaseStateDir, sweepDeadStateDirs } from "./workerStateDir.ts";
import type { LocalAttemptInfo, WorkerContext, WorkerEvent, WorkerOptions } from "./workerTypes.ts";

export type { LocalAttemptInfo, WorkerEvent, WorkerOptions } from "./workerTypes.ts";

const DEFAULT_TICK_MS = 1000;
/** How often the heartbeat file of adoptable attempts is touched. */
const HEARTBEAT_MS = 500;

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

  /** Log lines lost because the controller refused their batch (each loss is marked in the log). */
  get droppedLogLines(): number {
    return this.#shipper.droppedLines;
  }

  /** Lines and bytes of output waiting in this worker's log queue (bounded: see `logLimits`). */
  get queuedLogs(): { lines: number; bytes: number } {
    return this.#shipper.queued;
  }

  #opts: WorkerOptions;
  #ctx: WorkerContext;
  #ownsStateDir: boolean;
  #shipper: LogShipper;
  #launcher: AttemptLauncher;
  #reconciler!: Reconciler;
  #markRegistered!: () => void;
  #failRegistered!: (e: Error) => void;
  #settleDone!: (e: Error | undefined) => void;
  /** Why the worker stopped itself (a refused token). */
  #fatal: IrisError | undefined;
  #stopped: Promise<void> | undefined;
  #loopDone: Promise<void> | undefined;
  /** Ends the command attempts' groups if this process dies (see groupReaper.mjs). */
  #reaper: GroupReaper;
  /** Touches the heartbeat file of adoptable attempts. */
  #heartbeat: NodeJS.Timeout | undefined;
  /** The sweep of dead siblings' state directories, awaited by stop(). */
  #sweep: Promise<void> | undefined;

  private constructor(given: WorkerOptions, stateDir: string, ownsStateDir: boolean, id: string) {
    // The worker token: --token, IRIS_AUTH_TOKEN, or this user's credentials file for that
    // controller (resolved once, so a lost session can re-register with it).
    const resolved = resolveToken(given.controller, given.token);
    const opts: WorkerOptions = { ...given, ...(resolved !== undefined ? { token: resolved } : {}) };
    this.#opts = opts;
    this.stateDir = stateDir;
    this.#ownsStateDir = ownsStateDir;
    this.id = id;
    // Reconnect backoff capped like registration's: a controller back from an outage is dialled
    // again within seconds, not after grpc-js's minutes (calls in between fail at once).
    // Every call presents the session once registration returned one, the worker token before.
    const client = createWorkerControlClient(opts.controller, {
      token: () => this.#ctx.session ?? opts.token,
      tlsCa: opts.tlsCa,
      reconnectBackoffMs: { initial: REGISTER_BACKOFF_START_MS, max: REGISTER_BACKOFF_MAX_MS },
    });
    const heartbeatFile = (opts.adoptAttempts ?? !ownsStateDir) ? path.join(stateDir, HEARTBEAT_FILE) : undefined;
    if (heartbeatFile !== undefined) {
      // Kept attempts (a previous run's among them) live as long as this file is fresh.
      const beat = (): void => {
        try {
          fs.writeFileSync(heartbeatFile, String(process.pid));
        } catch {
          // The state directory is gone: the attempts end by themselves.
        }
      };
      beat();
      this.#heartbeat = setInterval(beat, HEARTBEAT_MS);
      this.#heartbeat.unref();
    }
    this.#ctx = {
      id,
      opts,
      client,
      store: new AttemptStore(stateDir),
      heartbeatFile,
      bundles: new BundleCache(opts.bundleCacheDir ?? defaultBundleCacheDir(), client, {
        ...(opts.bundleInstallFlags === undefined ? {} : { installFlags: opts.bundleInstallFlags }),
        ...(opts.bundleCacheKeep === undefined ? {} : { keep: opts.bundleCacheKeep }),
      }),
      attempts: new Map(),
      stopping: false,
      isRegistered: false,
      instanceId: randomBytes(16).toString("base64url"),
      session: undefined,
      tickMs: opts.tickMs ?? DEFAULT_TICK_MS,
      emit: (event) => this.#emit(event),
      kick: () => this.#reconciler.kick(),
    };
    this.#reaper = GroupReaper.start(ORPHAN_GRACE_MS);
    this.#shipper = new LogShipper(this.#ctx);
    this.#launcher = new AttemptLauncher(this.#ctx, this.#shipper, this.#reaper);
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
      worker.#reconciler = new Reconciler(
        worker.#ctx,
        worker.#launcher,
        {
          registered: () => worker.#markRegistered(),
          refused: (e) => worker.#refused(e),
          drained: () => {
            if (worker.#ctx.stopping) return;
            worker.#emit({ type: "drained" });
            void worker.stop();
          },
        },
        worker.#ctx.store.list(),
      );
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
    worker.#loopDone = worker.#reconciler.run();
    return worker;
  }

  /** The attempts this worker currently knows about. */
  attempts(): LocalAttemptInfo[] {
    return [...this.#ctx.attempts.values()].map((a) => ({
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
   * elsewhere against the preemption budget), deregisters, and removes a state directory it
   * created. A worker the controller drains stops by itself once idle ({@link Worker.done}).
   * With `preempted` (why, for people: "slurm job 812 is ending (SIGTERM)") the attempts are
   * handed back PREEMPTED instead of lost with the worker: its host is being taken away.
   */
  stop(opts: { preempted?: string } = {}): Promise<void> {
    if (opts.preempted !== undefined && this.#stopped === undefined) this.#ctx.preemptedWhy = opts.preempted;
    this.#stopped ??= this.#shutdown().finally(() => this.#settleDone(this.#fatal));
    return this.#stopped;
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

  async #shutdown(): Promise<void> {
    this.#ctx.stopping = true;
    // A no-op once registered.
    this.#failRegistered(this.#fatal ?? new IrisError("FAILED_PRECONDITION", "the worker was stopped before it registered"));
    this.#reconciler.interrupt();
    // Readers paused by log backpressure read their attempts' pipes to the end now.
    this.#shipper.unpause();
    await this.#loopDone;
    // Each attempt ends and is classified; then its last lines go out (a bounded wait: the
    // controller may be gone), and the last report says how they all ended.
    await this.#launcher.stopAll(this.#ctx.preemptedWhy !== undefined ? "WORKER_PREEMPTED" : "WORKER_STOPPING");
    clearInterval(this.#heartbeat);
    await this.#shipper.drain(2000);
    await this.#reconciler.finalReport();
    // A stopped worker leaves the cluster at once rather than being declared lost later.
    if (this.#ctx.isRegistered) {
      await unary(this.#ctx.client, "deregisterWorker", { workerId: this.id }, { deadlineMs: 1000 }).catch(() => undefined);
    }
    this.#ctx.client.close();
    this.#reaper.close();
    await this.#sweep;
    releaseStateDir(this.stateDir);
    if (this.#ownsStateDir) fs.rmSync(this.stateDir, { recursive: true, force: true });
    else fs.rmSync(path.join(this.stateDir, OWNER_FILE), { force: true });
  }

  #emit(event: WorkerEvent): void {
    try {
      this.#opts.onEvent?.(event);
    } catch {
      // A faulty listener must not take the worker down.
    }
  }
}

/** Where bundles are cached without `bundleCacheDir`: `$IRIS_BUNDLE_CACHE`, else `~/.cache/iris/bundles`. */
export function defaultBundleCacheDir(): string {
  const env = process.env.IRIS_BUNDLE_CACHE;
  return env !== undefined && env !== "" ? env : path.join(os.homedir(), ".cache", "iris", "bundles");
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
