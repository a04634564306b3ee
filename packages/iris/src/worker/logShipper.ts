// The worker's log shipper: attempts' output lines queued, sent in order as PushLogs batches
// (one at a time), counted once the controller acknowledges them, retried while it is away.
import type { LogLine as WireLogLine } from "../internal/generated/iris/v1/LogLine.ts";
import type { PushLogsRequest } from "../internal/generated/iris/v1/PushLogsRequest.ts";
import { logLineToWire } from "../internal/codec.ts";
import type { LogLine } from "./attemptProcess.ts";
import { isTerminal, RPC_DEADLINE_MS, type LocalAttempt, type WorkerContext } from "./workerTypes.ts";

const LOG_FLUSH_MS = 20;
const LOG_BATCH_LINES = 500;
/** Lines kept while no log stream can be opened; older ones are dropped first. */
const MAX_PENDING_LOG_LINES = 20_000;

/**
 * Ships the output of a worker's attempts. Each attempt's `logLines` counts the lines the
 * controller has acknowledged and `unackedLines` those queued or in flight; when a finished
 * attempt's last line is acknowledged the worker is kicked, so that it reports the end at once.
 */
export class LogShipper {
  #ctx: WorkerContext;
  /** A PushLogs batch is on its way (one at a time, so that lines stay in order). */
  #inFlight: Promise<void> | undefined;
  #pending: { local: LocalAttempt; line: WireLogLine }[] = [];
  #flushTimer: NodeJS.Timeout | undefined;

  constructor(ctx: WorkerContext) {
    this.#ctx = ctx;
  }

  /** Queues one line of an attempt's output. */
  queue(local: LocalAttempt, line: LogLine): void {
    this.#pending.push({
      local,
      line: logLineToWire(local.uid, line),
    });
    local.unackedLines++;
    if (this.#pending.length > MAX_PENDING_LOG_LINES) this.#pending.shift()!.local.unackedLines--;
    if (this.#pending.length >= LOG_BATCH_LINES) this.flush();
    else this.#flushTimer ??= setTimeout(() => this.flush(), LOG_FLUSH_MS);
  }

  /**
   * Sends the next batch of lines as one PushLogs call and counts them once the controller has
   * answered. A failed batch goes back to the head of the queue and is retried a tick later, so
   * lines printed while the controller is away are delivered when it is back (bounded by
   * MAX_PENDING_LOG_LINES, oldest dropped first).
   */
  flush(): void {
    const ctx = this.#ctx;
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#inFlight !== undefined || this.#pending.length === 0) return;
    if (!ctx.isRegistered) {
      this.#flushTimer = setTimeout(() => this.flush(), ctx.tickMs);
      return;
    }
    const batch = this.#pending.splice(0, LOG_BATCH_LINES);
    this.#inFlight = new Promise<void>((resolve) => {
      const call = ctx.client.pushLogs({ deadline: Date.now() + RPC_DEADLINE_MS }, (err) => {
        this.#inFlight = undefined;
        resolve();
        if (err !== null) {
          this.#pending.unshift(...batch);
          while (this.#pending.length > MAX_PENDING_LOG_LINES) this.#pending.shift()!.local.unackedLines--;
          if (!ctx.stopping) this.#flushTimer = setTimeout(() => this.flush(), ctx.tickMs);
          return;
        }
        let released = false;
        for (const c of batch) {
          c.local.logLines++;
          c.local.unackedLines--;
          if (c.local.unackedLines === 0 && isTerminal(c.local.state)) released = true;
        }
        // A finished attempt whose lines are now all in can be reported finished.
        if (released) ctx.kick();
        if (this.#pending.length > 0) this.flush();
      });
      call.on("error", () => undefined);
      call.write({ lines: batch.map((c) => c.line) } satisfies PushLogsRequest);
      call.end();
    });
  }

  /** Sends what is queued, waiting at most `timeoutMs` (the controller may be gone), then stops. */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#ctx.isRegistered && Date.now() < deadline && (this.#pending.length > 0 || this.#inFlight)) {
      this.flush();
      await Promise.race([this.#inFlight, new Promise((resolve) => setTimeout(resolve, 100))]);
    }
    clearTimeout(this.#flushTimer);
  }
}
