// The worker's reconciler: registration (with backoff), the assignment stream, and the reconcile
// loop — observed attempts up, the complete desired set down, applied: new attempts started,
// unwanted ones stopped, finished ones forgotten once acknowledged, a previous run's leftovers
// settled. The protocol is specified in proto/README.md ("Worker protocol").
import os from "node:os";
import type * as grpc from "@grpc/grpc-js";
import { IrisError } from "../errors.ts";
import type { AttemptObservation } from "../internal/generated/iris/v1/AttemptObservation.ts";
import type { ReconcileResponse__Output } from "../internal/generated/iris/v1/ReconcileResponse.ts";
import type { RunAttempt__Output } from "../internal/generated/iris/v1/RunAttempt.ts";
import { observationToWire } from "./workerTypes.ts";
import { unary } from "../internal/rpc.ts";
import { DEFAULT_ADVERTISE_HOST } from "../process/taskEnv.ts";
import { Backoff } from "../toolkit/backoff.ts";
import type { AttemptLauncher } from "./attemptLauncher.ts";
import { killRecordedAttempt, type AttemptRecord } from "./attemptStore.ts";
import { errorText, isTerminal, RPC_DEADLINE_MS, type LocalAttempt, type LocalState, type WorkerContext } from "./workerTypes.ts";

/** The first retry delay of registration and reconcile while the controller is unreachable. */
export const REGISTER_BACKOFF_START_MS = 100;
/** Issue 3: while the controller is unreachable, retry at least every 2 s. */
export const REGISTER_BACKOFF_MAX_MS = 2000;
/** A finished attempt is reported finished only once its lines are in, or after this long. */
const LOG_HOLD_MS = 10_000;
/** How many forgotten attempt uids are remembered, so that none is ever started twice. */
const FORGOTTEN_UIDS_KEPT = 10_000;
/** The least silence from the controller after which a worker ends its attempts. */
const MIN_CONTROLLER_SILENCE_MS = 60_000;

/** What the reconciler tells its worker. */
export interface ReconcilerHooks {
  /** The first registration succeeded. */
  registered(): void;
  /** The controller refused the worker's credentials. */
  refused(e: IrisError): void;
  /** The controller is draining this worker and nothing of it runs any more. */
  drained(): void;
}

/** Keeps a worker's attempts in line with the controller's desired set. */
export class Reconciler {
  #ctx: WorkerContext;
  #launcher: AttemptLauncher;
  #hooks: ReconcilerHooks;
  #forgotten = new Set<string>();
  /** Records a previous run of this worker left in the state directory, settled on the first response. */
  #leftovers: AttemptRecord[] | undefined;
  /** When the controller last answered (registration or reconcile). */
  #lastContactMs = 0;
  #silenceMs = 60_000;
  #kicked = false;
  #wake: (() => void) | undefined;
  #watch: grpc.ClientReadableStream<unknown> | undefined;

  constructor(ctx: WorkerContext, launcher: AttemptLauncher, hooks: ReconcilerHooks, leftovers: AttemptRecord[]) {
    this.#ctx = ctx;
    this.#launcher = launcher;
    this.#hooks = hooks;
    this.#leftovers = leftovers.length > 0 ? leftovers : undefined;
  }

  /** Ends the loop's wait and the assignment stream (the worker is stopping). */
  interrupt(): void {
    this.#wake?.();
    this.#watch?.cancel();
  }

  /** The worker's last report before it goes away (bounded: the controller may be gone). */
  async finalReport(): Promise<void> {
    if (!this.#ctx.isRegistered) return;
    try {
      await unary(this.#ctx.client, "reconcile", this.reconcileRequest(), { deadlineMs: 1000 });
    } catch {
      // The controller will find out from the silence.
    }
  }

  // ---- the loop -------------------------------------------------------------------------------

  async run(): Promise<void> {
    const backoff = new Backoff({ initialMs: REGISTER_BACKOFF_START_MS, maxMs: REGISTER_BACKOFF_MAX_MS });
    const retryLater = async (error: unknown): Promise<void> => {
      this.#fenceIfSilent();
      this.#ctx.emit({ type: "controllerUnreachable", error: errorText(error), retryInMs: backoff.delayMs });
      await this.#sleep(backoff.next());
    };
    while (!this.#ctx.stopping) {
      if (!this.#ctx.isRegistered) {
        try {
          await this.#register();
        } catch (e) {
          if (isRefusal(e) && this.#ctx.session !== undefined && this.#ctx.opts.token !== undefined) {
            // The session is gone (the controller lost it, or another process replaced it): the
            // worker token, if it still works, opens a new one; a spent one is refused next time.
            this.#ctx.session = undefined;
            continue;
          }
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
        backoff.reset();
      } catch (e) {
        if (e instanceof IrisError && (e.code === "NOT_FOUND" || (e.code === "UNAUTHENTICATED" && this.#ctx.session !== undefined))) {
          // The controller forgot this worker (or declared it lost), or its session: register
          // again, same id (with the session, else the worker token).
          this.#ctx.isRegistered = false;
          continue;
        }
        if (isRefusal(e)) return this.#refused(e);
        await retryLater(e);
        continue;
      }
      if (!this.#kicked) await this.#sleep(this.#ctx.tickMs);
    }
  }

  /** The controller refused the token: retrying cannot help, so the worker stops (see Worker.done). */
  #refused(e: IrisError): void {
    this.#hooks.refused(e);
  }

  /** Ends the running attempts once the controller has been silent for too long (see controllerSilenceMs). */
  #fenceIfSilent(): void {
    if (this.#lastContactMs === 0 || Date.now() - this.#lastContactMs < this.#silenceMs) return;
    for (const a of this.#ctx.attempts.values()) {
      if (!isTerminal(a.state)) this.#launcher.stop(a, "CONTROLLER_SILENT");
    }
  }

  /** Reconciles as soon as possible (a notice arrived, or a local attempt changed state). */
  kick(): void {
    this.#kicked = true;
    this.#wake?.();
  }

  #sleep(ms: number): Promise<void> {
    if (this.#ctx.stopping) return Promise.resolve();
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
      this.#ctx.client,
      "registerWorker",
      {
        workerId: this.#ctx.id,
        host: this.#ctx.opts.advertiseHost ?? DEFAULT_ADVERTISE_HOST,
        attributes: this.#ctx.opts.attributes ?? {},
        capacity: {
          cpuMillis: this.#ctx.opts.cpuMillis ?? os.availableParallelism() * 1000,
          memoryBytes: this.#ctx.opts.memoryBytes ?? os.totalmem(),
          devices: [],
        },
        instanceId: this.#ctx.instanceId,
      },
      { deadlineMs: RPC_DEADLINE_MS },
    );
    if (res.workerId !== "" && res.workerId !== this.#ctx.id) {
      throw new IrisError("INTERNAL", `the controller registered this worker as ${res.workerId}, not ${this.#ctx.id}`);
    }
    if (res.sessionToken !== "") {
      // From now on every call presents this worker's own session, never the worker token.
      this.#ctx.session = res.sessionToken;
      this.#watch?.cancel();
      this.#watch = undefined;
    }
    if (this.#ctx.opts.tickMs === undefined && res.reconcileIntervalMs > 0) this.#ctx.tickMs = res.reconcileIntervalMs;
    // At least a minute: a controller restarting (and adopting what runs) must not be mistaken for one
    // that declared this worker lost.
    this.#silenceMs = this.#ctx.opts.controllerSilenceMs ?? Math.max(2 * res.workerTimeoutMs, MIN_CONTROLLER_SILENCE_MS);
    this.#lastContactMs = Date.now();
    this.#ctx.isRegistered = true;
    this.#ctx.emit({ type: "registered", workerId: this.#ctx.id, tickMs: this.#ctx.tickMs });
    this.#hooks.registered();
  }

  #ensureWatch(): void {
    if (this.#watch !== undefined || this.#ctx.stopping) return;
    const call = this.#ctx.client.watchAssignments({ workerId: this.#ctx.id });
    this.#watch = call;
    call.on("data", () => this.kick());
    call.on("error", (err: grpc.ServiceError) => {
      // NOT_FOUND (5): the controller does not know this worker; the next reconcile says so too.
      // Anything else: reopened on the next pass of the loop.
      if (this.#watch === call) this.#watch = undefined;
      if (err.code === 5) this.kick();
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
    const holding = !this.#ctx.stopping && isTerminal(a.state) && a.unackedLines > 0 && Date.now() - a.finishedAtMs < LOG_HOLD_MS;
    return observationToWire(a, holding);
  }

  reconcileRequest(): { workerId: string; observed: AttemptObservation[]; health: { healthy: boolean; error: string } } {
    return {
      workerId: this.#ctx.id,
      observed: [...this.#ctx.attempts.values()].map((a) => this.#observation(a)),
      health: this.#ctx.stopping ? { healthy: false, error: "the worker is stopping" } : { healthy: true, error: "" },
    };
  }

  async #reconcileOnce(): Promise<void> {
    const request = this.reconcileRequest();
    const reportedFinished = new Set(request.observed.filter((o) => isTerminal(o.state as LocalState)).map((o) => o.attemptUid as string));
    const response = await unary(this.#ctx.client, "reconcile", request, { deadlineMs: RPC_DEADLINE_MS });
    if (this.#ctx.stopping) return;
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
      this.kick();
    }

    for (const [uid, spec] of run) {
      if (this.#ctx.attempts.has(uid) || this.#forgotten.has(uid)) continue;
      this.#launcher.start(spec);
    }

    for (const a of [...this.#ctx.attempts.values()]) {
      if (isTerminal(a.state)) {
        if (!run.has(a.uid) && reportedFinished.has(a.uid)) this.#forget(a);
        continue;
      }
      const reason = stop.get(a.uid);
      if (reason !== undefined) this.#launcher.stop(a, reason === "" ? "KILLED" : reason);
      else if (!run.has(a.uid)) this.#launcher.stop(a, "SUPERSEDED");
    }

    // Drained: once every attempt has ended and its end was acknowledged, the worker leaves.
    if (response.draining && run.size === 0 && this.#ctx.attempts.size === 0) this.#hooks.drained();
  }

  /**
   * An attempt a previous run of this worker started. One run under an attempt keeper that the
   * controller still wants is adopted (its output and exit are in the keeper's files). Any other
   * is killed; if the controller still wants it, it is reported lost so that the task is retried.
   */
  #settleLeftover(record: AttemptRecord, wanted: RunAttempt__Output | undefined): void {
    // Run under a keeper and still wanted: adopted, not killed.
    if (wanted !== undefined && this.#launcher.adopt(record, wanted)) return;
    const grace = this.#ctx.opts.killGraceMs ?? 5000;
    if (record.pid !== undefined) {
      const pid = record.pid;
      void killRecordedAttempt(record, grace).then(
        () => this.#ctx.emit({ type: "leftoverKilled", attemptUid: record.attemptUid, pid }),
        () => undefined,
      );
    }
    if (wanted === undefined) {
      this.#ctx.store.remove(record.attemptUid);
      return;
    }
    this.#ctx.attempts.set(record.attemptUid, {
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
      nextLogIndex: 0,
      droppedLogLines: 0,
    });
  }

  #forget(a: LocalAttempt): void {
    this.#ctx.attempts.delete(a.uid);
    this.#forgotten.add(a.uid);
    if (this.#forgotten.size > FORGOTTEN_UIDS_KEPT) {
      this.#forgotten.delete(this.#forgotten.values().next().value as string);
    }
    try {
      this.#ctx.store.remove(a.uid);
    } catch {
      // A record that cannot be removed is settled again after a restart.
    }
  }
}

/** A refusal of the worker's credentials, which no retry can fix. */
function isRefusal(e: unknown): e is IrisError {
  return e instanceof IrisError && (e.code === "UNAUTHENTICATED" || e.code === "PERMISSION_DENIED");
}
