// Metric trackers: console, JSONL file, TensorBoard, and a composite of several.
import { appendFileSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { writeFileAtomicSync } from "@marin/iris/toolkit";
import { log } from "../internal/log.ts";
import { TrainProgress } from "./progress.ts";
import { TensorBoardWriter } from "./tensorboard.ts";

/** Where metrics go: `log` a map of metric names (`train/loss`, …) at a step, `finish` at the end. */
export interface Tracker {
  log(step: number, metrics: Record<string, number>): void;
  finish(): void;
}

/** Appends one JSON object per `log` (`{"step", "time", ...metrics}`) to a file. */
export class JsonlTracker implements Tracker {
  readonly file: string;

  /**
   * `resumeFrom`: the step the run starts from (a resume, or a rerun from 0): rows of later steps,
   * left by an interrupted or failed attempt, are dropped first (and a torn last line), so the
   * file holds each step once whatever was rerun.
   */
  constructor(file: string, opts: { resumeFrom?: number } = {}) {
    mkdirSync(path.dirname(file), { recursive: true });
    this.file = file;
    if (opts.resumeFrom !== undefined) truncateAfter(file, opts.resumeFrom);
  }

  log(step: number, metrics: Record<string, number>): void {
    appendFileSync(this.file, `${JSON.stringify({ step, time: Date.now(), ...metrics })}\n`);
  }

  finish(): void {}
}

// Keeps the complete rows of `file` whose step is at most `step` (atomically: a crash leaves the old file).
function truncateAfter(file: string, step: number): void {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
    throw e;
  }
  const lines = text.split("\n");
  const keep = lines.slice(0, -1).filter((line) => {
    try {
      const row = JSON.parse(line) as { step?: unknown };
      return typeof row.step === "number" && row.step <= step;
    } catch {
      return false;
    }
  });
  if (keep.length === lines.length - 1 && lines.at(-1) === "") return;
  writeFileAtomicSync(file, keep.map((l) => `${l}\n`).join(""), { durable: false });
}

/** Scalars into a TensorBoard event file under `dir`. */
export class TensorBoardTracker implements Tracker {
  readonly writer: TensorBoardWriter;

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true });
    this.writer = new TensorBoardWriter(dir);
  }

  log(step: number, metrics: Record<string, number>): void {
    this.writer.add(step, metrics);
  }

  finish(): void {
    this.writer.close();
  }
}

/**
 * Progress for people: a bar (step/total, loss, tok/s, MFU, ETA) on a TTY; elsewhere one line per
 * tenth of the run and per evaluation, so CI logs stay short.
 */
export class ConsoleTracker implements Tracker {
  readonly #total: number;
  readonly #bar: TrainProgress | undefined;
  #lastLine = -1;

  constructor(totalSteps: number, _startStep: number, stream: NodeJS.WriteStream = process.stderr) {
    this.#total = totalSteps;
    // On a terminal: the same bar as `levanter train` draws (step/total, percent, loss, tok/s, MFU, ETA).
    if (stream.isTTY) this.#bar = new TrainProgress(stream, "bar");
  }

  log(step: number, metrics: Record<string, number>): void {
    const loss = metrics["train/loss"];
    if (this.#bar) {
      if (loss !== undefined) this.#bar.update(step, this.#total, metrics, loss);
      return;
    }
    const tenth = Math.floor((step * 10) / this.#total);
    if (metrics["eval/loss"] !== undefined) {
      log("info", "eval", { step, loss: metrics["eval/loss"], bpb: metrics["eval/bpb"] });
    } else if (loss !== undefined && (tenth !== this.#lastLine || step === this.#total)) {
      this.#lastLine = tenth;
      log("info", "train", { step, total: this.#total, loss, tokensPerSecond: Math.round(metrics["throughput/tokens_per_second"] ?? 0) });
    }
  }

  finish(): void {
    this.#bar?.end();
  }
}

/** Sends every call to each tracker; one tracker's failure is logged, not fatal. */
export class CompositeTracker implements Tracker {
  readonly trackers: Tracker[];

  constructor(trackers: Tracker[]) {
    this.trackers = trackers;
  }

  log(step: number, metrics: Record<string, number>): void {
    for (const t of this.trackers) {
      try {
        t.log(step, metrics);
      } catch (e) {
        log("warn", "tracker failed", { tracker: t.constructor.name, error: String(e) });
      }
    }
  }

  finish(): void {
    for (const t of this.trackers) {
      try {
        t.finish();
      } catch (e) {
        log("warn", "tracker failed to finish", { tracker: t.constructor.name, error: String(e) });
      }
    }
  }
}
