// The worker's log shipper: attempts' output lines queued (bounded in lines and bytes, with
// backpressure on the attempts' pipes), sent in order as PushLogs batches bounded in bytes (one at
// a time), counted once the controller acknowledges them, retried while it is away; a batch the
// controller refuses is replaced by a `[iris: N lines dropped …]` marker so later ones still go.
import type { LogLine as WireLogLine } from "../internal/generated/iris/v1/LogLine.ts";
import type { PushLogsRequest } from "../internal/generated/iris/v1/PushLogsRequest.ts";
import { logLineToWire } from "../internal/codec.ts";
import type { LogLine } from "./attemptProcess.ts";
import { isTerminal, RPC_DEADLINE_MS, type LocalAttempt, type LogLimits, type WorkerContext } from "./workerTypes.ts";

/** The default {@link LogLimits}. */
export const DEFAULT_LOG_LIMITS: LogLimits = {
  batchLines: 2000,
  batchBytes: 1024 * 1024,
  maxPendingLines: 20_000,
  maxPendingBytes: 16 * 1024 * 1024,
  refusedTries: 3,
  flushMs: 20,
};

/** gRPC status codes that mean "the controller is away or slow": retried without limit. */
const TRANSIENT_CODES = new Set([4 /* DEADLINE_EXCEEDED */, 14 /* UNAVAILABLE */, 1 /* CANCELLED */]);

interface Pending {
  local: LocalAttempt;
  line: WireLogLine;
  bytes: number;
}

/**
 * Ships the output of a worker's attempts. Each attempt's `logLines` counts the lines the
 * controller has acknowledged and `unackedLines` those queued or in flight; when a finished
 * attempt's last line is acknowledged the worker is kicked, so that it reports the end at once.
 *
 * Nothing is dropped silently: while the queue is over its bounds, {@link LogShipper.backpressure}
 * pauses the attempts' pipes (their writes block). A batch the controller refuses
 * `refusedTries` times (it should never happen: batches are bounded in bytes) is replaced by one
 * marker line per attempt, `[iris: N lines dropped: CODE …]`, stored where the lines were lost.
 */
export class LogShipper {
  #ctx: WorkerContext;
  #limits: LogLimits;
  /** A PushLogs batch is on its way (one at a time, so that lines stay in order). */
  #inFlight: Promise<void> | undefined;
  #pending: Pending[] = [];
  /** Index of the first element of #pending still queued (shifting a big array is quadratic). */
  #head = 0;
  #pendingBytes = 0;
  #flushTimer: NodeJS.Timeout | undefined;
  /** Readers paused by backpressure, released once the queue is back under half its bounds. */
  #waiters: (() => void)[] = [];
  #room: Promise<void> | undefined;
  /** At most this many lines per batch while retrying one that timed out. */
  #cap = Infinity;
  /** Consecutive refusals of the batch at the head. */
  #refusals = 0;
  /** Lines dropped by refusals so far (for tests and the soak benchmark). */
  droppedLines = 0;

  constructor(ctx: WorkerContext) {
    this.#ctx = ctx;
    this.#limits = { ...DEFAULT_LOG_LIMITS, ...ctx.opts.logLimits };
  }

  /** Lines and bytes queued (not yet in flight). */
  get queued(): { lines: number; bytes: number } {
    return { lines: this.#pending.length - this.#head, bytes: this.#pendingBytes };
  }

  /** Queues one line of an attempt's output. */
  queue(local: LocalAttempt, line: LogLine): void {
    this.#push({ local, line: logLineToWire(local.uid, line), bytes: Buffer.byteLength(line.line) });
    local.unackedLines++;
    if (this.#pending.length - this.#head >= this.#limits.batchLines || this.#pendingBytes >= this.#limits.batchBytes) this.flush();
    else this.#flushTimer ??= setTimeout(() => this.flush(), this.#limits.flushMs);
  }

  /**
   * While the queue is over its bounds, a promise that resolves once it is back under half of
   * them (or the worker stops): the attempts' readers pause until then.
   */
  backpressure(): Promise<void> | undefined {
    if (!this.#full() || this.#ctx.stopping) return undefined;
    this.#room ??= new Promise<void>((resolve) => this.#waiters.push(resolve));
    return this.#room;
  }

  #full(): boolean {
    return this.#pending.length - this.#head >= this.#limits.maxPendingLines || this.#pendingBytes >= this.#limits.maxPendingBytes;
  }

  /** Releases the readers paused by backpressure (the worker is stopping). */
  unpause(): void {
    this.#release();
  }

  #release(): void {
    if (this.#waiters.length === 0) return;
    const lines = this.#pending.length - this.#head;
    if (!this.#ctx.stopping && (lines > this.#limits.maxPendingLines / 2 || this.#pendingBytes > this.#limits.maxPendingBytes / 2)) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    this.#room = undefined;
    for (const w of waiters) w();
  }

  #push(p: Pending): void {
    this.#pending.push(p);
    this.#pendingBytes += p.bytes;
  }

  /** Takes the next batch off the queue: at most batchLines lines and batchBytes bytes (at least one line). */
  #take(): Pending[] {
    const batch: Pending[] = [];
    let bytes = 0;
    while (this.#head < this.#pending.length && batch.length < Math.min(this.#limits.batchLines, this.#cap)) {
      const p = this.#pending[this.#head]!;
      if (batch.length > 0 && bytes + p.bytes > this.#limits.batchBytes) break;
      batch.push(p);
      bytes += p.bytes;
      this.#head++;
    }
    this.#pendingBytes -= bytes;
    if (this.#head > 4096 && this.#head * 2 > this.#pending.length) {
      this.#pending = this.#pending.slice(this.#head);
      this.#head = 0;
    }
    // Each line's index (its position in its attempt's log) lets the controller drop resends.
    for (const p of batch) if (p.line.index === undefined) p.line.index = p.local.nextLogIndex++;
    return batch;
  }

  /** Puts a batch back at the head of the queue (in order). */
  #putBack(batch: Pending[]): void {
    this.#pending = [...batch, ...this.#pending.slice(this.#head)];
    this.#head = 0;
    for (const p of batch) this.#pendingBytes += p.bytes;
  }

  /** Replaces a refused batch by one marker line per attempt, stored where its lines were lost. */
  #dropWithMarkers(batch: Pending[], why: string): Pending[] {
    const byAttempt = new Map<LocalAttempt, Pending[]>();
    for (const p of batch) {
      const l = byAttempt.get(p.local) ?? [];
      l.push(p);
      byAttempt.set(p.local, l);
    }
    const markers: Pending[] = [];
    for (const [local, lines] of byAttempt) {
      const first = lines[0]!.line;
      const text = `[iris: ${lines.length} lines dropped: ${why}]`;
      // The marker takes the first lost line's place in the attempt's log (and index).
      local.nextLogIndex = Number(first.index);
      local.unackedLines -= lines.length - 1;
      local.droppedLogLines += lines.length;
      this.droppedLines += lines.length;
      markers.push({ local, line: { attemptUid: local.uid, stream: "stderr", line: text, timeMs: Number(first.timeMs) }, bytes: text.length });
    }
    // Later lines of these attempts have no index yet (they were never in a batch): renumbered.
    return markers;
  }

  /**
   * Sends the next batch of lines as one PushLogs call and counts them once the controller has
   * answered. A failed batch goes back to the head of the queue and is retried a tick later, so
   * lines printed while the controller is away are delivered when it is back (the attempts'
   * pipes wait meanwhile); one the controller refuses `refusedTries` times is replaced by markers.
   */
  flush(): void {
    const ctx = this.#ctx;
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#inFlight !== undefined || this.#head >= this.#pending.length) return;
    if (!ctx.isRegistered) {
      this.#flushTimer = setTimeout(() => this.flush(), ctx.tickMs);
      return;
    }
    const batch = this.#take();
    this.#release();
    this.#inFlight = new Promise<void>((resolve) => {
      const call = ctx.client.pushLogs({ deadline: Date.now() + RPC_DEADLINE_MS }, (err) => {
        this.#inFlight = undefined;
        resolve();
        if (err !== null) {
          const transient = err.code === undefined || TRANSIENT_CODES.has(err.code);
          // A batch that could not go within the deadline is retried in halves, down to one line.
          if (err.code === 4 && batch.length > 1) this.#cap = Math.ceil(batch.length / 2);
          this.#refusals = transient ? 0 : this.#refusals + 1;
          const isMarkers = batch.every((p) => String(p.line.line).startsWith("[iris: "));
          if (!transient && this.#refusals >= this.#limits.refusedTries) {
            this.#refusals = 0;
            if (!isMarkers) this.#putBack(this.#dropWithMarkers(batch, `${err.details || err.message}`.slice(0, 200)));
            else for (const p of batch) p.local.unackedLines--;
          } else {
            this.#putBack(batch);
          }
          if (!ctx.stopping) this.#flushTimer = setTimeout(() => this.flush(), ctx.tickMs);
          return;
        }
        this.#refusals = 0;
        this.#cap = Infinity;
        let released = false;
        for (const c of batch) {
          c.local.logLines++;
          c.local.unackedLines--;
          if (c.local.unackedLines === 0 && isTerminal(c.local.state)) released = true;
        }
        // A finished attempt whose lines are now all in can be reported finished.
        if (released) ctx.kick();
        if (this.#head < this.#pending.length) this.flush();
      });
      call.on("error", () => undefined);
      call.write({ lines: batch.map((c) => c.line) } satisfies PushLogsRequest);
      call.end();
    });
  }

  /** Sends what is queued, waiting at most `timeoutMs` (the controller may be gone), then stops. */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#ctx.isRegistered && Date.now() < deadline && (this.#head < this.#pending.length || this.#inFlight)) {
      this.flush();
      await Promise.race([this.#inFlight, new Promise((resolve) => setTimeout(resolve, 100))]);
    }
    clearTimeout(this.#flushTimer);
    this.#release();
  }
}
