// One progress bar per stage on a TTY (cli-progress); nothing at all otherwise.
import cliProgress from "cli-progress";
import type { Stage } from "../plan/planner.ts";

/** A stage's bar: advance per finished shard. */
export interface StageBar {
  advance(n: number): void;
  done(): void;
}

const QUIET: StageBar = { advance: () => undefined, done: () => undefined };

/** The bars of one run. */
export class StageProgress {
  private readonly multi: cliProgress.MultiBar | undefined;

  /** Draws on `stream` (default stderr) when `enabled`; the coordinator enables it on a TTY. */
  constructor(enabled: boolean, stream: NodeJS.WritableStream = process.stderr) {
    this.multi = enabled
      ? new cliProgress.MultiBar({ format: " {bar} {value}/{total} shards | {stage}", hideCursor: true, clearOnComplete: false, stream }, cliProgress.Presets.shades_classic)
      : undefined;
  }

  /** A bar for `stage` with `shards` shards. */
  stage(stage: Stage, shards: number): StageBar {
    if (!this.multi) return QUIET;
    const label = stage.name.length > 60 ? `${stage.name.slice(0, 59)}…` : stage.name;
    const bar = this.multi.create(shards, 0, { stage: `stage ${stage.id}: ${label}` });
    return { advance: (n) => bar.increment(n), done: () => bar.stop() };
  }

  /** Stops drawing. */
  stop(): void {
    this.multi?.stop();
  }
}
