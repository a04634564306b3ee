// Training progress for people, one format everywhere (`levanter train` and the console tracker):
// a progress bar on a TTY (a line per tenth elsewhere), warnings as text, evaluations, and the one
// summary line printed when training ends.
import type { LogRecord } from "../internal/log.ts";
import { formatHms, formatStatus } from "./status.ts";
import type { TrainHook, TrainLmResult, TrainStepInfo } from "./trainTypes.ts";

/** How progress is shown: a redrawn bar (TTY), a line per tenth of the run, or not at all. */
export type ProgressMode = "bar" | "lines" | "none";

/** Where progress goes (stderr); `columns` sizes the bar. */
export interface ProgressStream {
  write(text: string): unknown;
  columns?: number | undefined;
}

const CLEAR_LINE = "\r\x1b[2K";
const REDRAW_MS = 100;

/**
 * Draws training progress from a {@link TrainHook} (`hook`, every step) and formats the summary.
 * In `bar` mode the bar (step/total, percent, loss, tok/s, MFU, ETA) is redrawn in place at most
 * every 100 ms and always on the last step; other lines (evaluations, warnings) are printed above
 * it. Call {@link TrainProgress.end} before printing anything else.
 */
export class TrainProgress {
  readonly #stream: ProgressStream;
  readonly #mode: ProgressMode;
  readonly #now: () => number;
  readonly #startMs: number;
  #barText: string | undefined;
  #lastDrawMs = Number.NEGATIVE_INFINITY;
  #lastTenth = -1;
  #seconds = 0;
  #tokens = 0;
  #secondsPerStep: number | undefined;
  #lastLoss: number | undefined;
  #lastTokensPerSecond: number | undefined;

  /** The hook to pass to `trainLm` (every step). */
  readonly hook: TrainHook = { every: 1, fn: (info) => this.#onStep(info) };

  constructor(stream: ProgressStream, mode: ProgressMode, now: () => number = () => performance.now()) {
    this.#stream = stream;
    this.#mode = mode;
    this.#now = now;
    this.#startMs = now();
  }

  /** Mean tokens per second over the steps this process trained (undefined before the first). */
  get tokensPerSecond(): number | undefined {
    return this.#seconds > 0 ? this.#tokens / this.#seconds : undefined;
  }

  #onStep(info: TrainStepInfo): void {
    if (!info.final) this.update(info.step, info.totalSteps, info.metrics, info.loss);
  }

  /** Shows step `step` of `totalSteps` from its metrics (`train/loss` unless `loss` is given). */
  update(step: number, totalSteps: number, m: Record<string, number>, loss: number | undefined = m["train/loss"]): void {
    const seconds = m["throughput/duration"] ?? 0;
    this.#seconds += seconds;
    this.#tokens += (m["throughput/tokens_per_second"] ?? 0) * seconds;
    if (m["throughput/tokens_per_second"] !== undefined) this.#lastTokensPerSecond = m["throughput/tokens_per_second"];
    if (seconds > 0) this.#secondsPerStep = this.#secondsPerStep === undefined ? seconds : 0.8 * this.#secondsPerStep + 0.2 * seconds;
    if (loss !== undefined && Number.isFinite(loss)) this.#lastLoss = loss;
    const tps = this.tokensPerSecond ?? this.#lastTokensPerSecond;
    const status = formatStatus({
      step,
      totalSteps,
      ...(this.#lastLoss !== undefined ? { loss: this.#lastLoss } : {}),
      ...(tps !== undefined ? { tokensPerSecond: tps } : {}),
      ...(m["throughput/mfu"] !== undefined ? { mfu: m["throughput/mfu"] } : {}),
      ...(this.#secondsPerStep !== undefined ? { secondsPerStep: this.#secondsPerStep } : {}),
    });
    const evalLoss = m["eval/loss"];
    if (evalLoss !== undefined && this.#mode !== "none") {
      this.line(`eval at step ${step}: loss ${evalLoss.toFixed(4)}${m["eval/bpb"] !== undefined ? ` · bpb ${m["eval/bpb"].toFixed(4)}` : ""}`);
    }
    const last = step === totalSteps;
    if (this.#mode === "bar") {
      const now = this.#now();
      if (last || now - this.#lastDrawMs >= REDRAW_MS) {
        this.#lastDrawMs = now;
        this.#draw(this.#bar(step, totalSteps, status));
      }
    } else if (this.#mode === "lines") {
      const tenth = Math.floor((step * 10) / totalSteps);
      if (tenth !== this.#lastTenth || last) {
        this.#lastTenth = tenth;
        this.#stream.write(`${status}\n`);
      }
    }
  }

  #bar(step: number, total: number, status: string): string {
    // A pseudo-terminal without a size reports 0 columns.
    const columns = this.#stream.columns !== undefined && this.#stream.columns >= 40 ? this.#stream.columns : 80;
    const width = Math.max(5, Math.min(30, columns - status.length - 2));
    const filled = Math.round((width * step) / total);
    const text = `${"█".repeat(filled)}${"░".repeat(width - filled)} ${status}`;
    return text.length > columns - 1 ? text.slice(0, Math.max(0, columns - 1)) : text;
  }

  #draw(text: string): void {
    this.#barText = text;
    this.#stream.write(`${CLEAR_LINE}${text}`);
  }

  /** Prints a whole line (above the bar, which is redrawn below it), whatever the mode. */
  line(text: string): void {
    if (this.#barText !== undefined) this.#stream.write(`${CLEAR_LINE}${text}\n${this.#barText}`);
    else this.#stream.write(`${text}\n`);
  }

  /** A warning or error record of the structured log, as one line for people. */
  logRecord(record: LogRecord): void {
    const { time: _time, level, pkg: _pkg, msg, ...fields } = record;
    const extra = Object.entries(fields)
      .map(([k, v]) => [k, JSON.stringify(v)] as const)
      .filter(([, v]) => v !== undefined && !msg.includes(v.replace(/^"|"$/g, "")))
      .map(([k, v]) => `${k}=${v}`);
    this.line(`levanter: ${level === "error" ? "ERROR" : "WARNING"}: ${msg}${extra.length > 0 ? ` (${extra.join(", ")})` : ""}`);
  }

  /** Ends the bar's line, leaving its last state on screen; idempotent. */
  end(): void {
    if (this.#barText !== undefined) this.#stream.write("\n");
    this.#barText = undefined;
  }

  /** The one line printed when training ends: what happened, loss, eval, speed, time, checkpoint, log file. */
  summary(result: TrainLmResult, totalSteps: number, logFile?: string): string {
    let head: string;
    const resumed = result.resumedFrom !== undefined && result.resumedFrom > 0 ? ` (resumed from step ${result.resumedFrom})` : "";
    if (result.stoppedEarly) head = `stopped at step ${result.step}/${totalSteps}${resumed}; a checkpoint was saved, run the same command to resume`;
    else if (result.resumedFrom === result.step) head = `already finished: step ${result.step}/${totalSteps}, nothing to train`;
    else head = `finished step ${result.step}/${totalSteps}${resumed}`;
    const parts = [`levanter: ${head}`];
    if (result.finalLoss !== undefined) parts.push(`loss ${result.finalLoss.toFixed(4)}`);
    if (result.eval) parts.push(`eval loss ${result.eval.loss.toFixed(4)} · bpb ${result.eval.bpb.toFixed(4)}`);
    const tps = this.tokensPerSecond;
    if (tps !== undefined) parts.push(`${Math.round(tps).toLocaleString("en-US")} tok/s`);
    parts.push(formatHms((this.#now() - this.#startMs) / 1000));
    if (result.skippedSteps > 0) parts.push(`${result.skippedSteps} non-finite steps skipped`);
    if (result.checkpoint) parts.push(`checkpoint ${result.checkpoint}`);
    if (logFile) parts.push(`log ${logFile}`);
    return parts.join(" · ");
  }
}
