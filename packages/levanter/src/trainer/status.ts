// Training status: the one-line progress text and the reporter that sends it to iris.
import { log } from "../internal/log.ts";

/** What a status line is made of. */
export interface StatusInput {
  step: number;
  totalSteps: number;
  loss?: number;
  tokensPerSecond?: number;
  mfu?: number;
  /** Seconds per step, for the ETA. */
  secondsPerStep?: number;
}

const int = (n: number) => Math.round(n).toLocaleString("en-US");

/** Seconds as a compact clock: `42s`, `5m03s`, `2h07m` (ETA, elapsed; iris's `formatMillis` writes `5 min`). */
export function formatHms(s: number): string {
  const h = Math.floor(s / 3600),
    m = Math.floor((s % 3600) / 60),
    sec = Math.round(s % 60);
  return h > 0 ? `${h}h${String(m).padStart(2, "0")}m` : m > 0 ? `${m}m${String(sec).padStart(2, "0")}s` : `${sec}s`;
}

/** `step 100/1,000 (10.0%) · loss 2.5000 · 2,048 tok/s · MFU 4.50% · ETA 5m03s`. */
export function formatStatus(s: StatusInput): string {
  const parts = [`step ${int(s.step)}/${int(s.totalSteps)} (${((100 * s.step) / s.totalSteps).toFixed(1)}%)`];
  if (s.loss !== undefined) parts.push(`loss ${s.loss.toFixed(4)}`);
  if (s.tokensPerSecond !== undefined && s.tokensPerSecond > 0) parts.push(`${int(s.tokensPerSecond)} tok/s`);
  if (s.mfu !== undefined && s.tokensPerSecond) parts.push(`MFU ${s.mfu.toFixed(2)}%`);
  if (s.secondsPerStep !== undefined && s.secondsPerStep > 0) parts.push(`ETA ${formatHms((s.totalSteps - s.step) * s.secondsPerStep)}`);
  return parts.join(" · ");
}

/** Sends status to a sink (iris' `reportStatus`). */
export type StatusSink = (text: string, metrics: Record<string, number>) => Promise<void>;

/**
 * Rate-limited status reports: the first report and forced ones always go out, others at most
 * every `intervalMs`. A failing sink is logged, never raised (reporting must not kill training).
 */
export class StatusReporter {
  readonly #sink: StatusSink;
  readonly #intervalMs: number;
  readonly #now: () => number;
  #last: number | undefined;
  #pending: Promise<void> = Promise.resolve();

  constructor(sink: StatusSink, intervalMs: number, now: () => number = Date.now) {
    this.#sink = sink;
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  /** Reports `text` with `metrics` (which carry `step`) if due or `force`d; returns whether it did. */
  maybeReport(text: string, metrics: Record<string, number>, force = false): boolean {
    const now = this.#now();
    if (!force && this.#last !== undefined && now - this.#last < this.#intervalMs) return false;
    this.#last = now;
    this.#pending = this.#pending.then(() => this.#sink(text, metrics)).catch((e: unknown) => log("warn", "status report failed", { error: String(e) }));
    return true;
  }

  /** Waits for reports in flight. */
  flush(): Promise<void> {
    return this.#pending;
  }
}
