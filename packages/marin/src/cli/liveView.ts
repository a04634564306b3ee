// What `marin run` draws while it works (a progress bar on a TTY, lines otherwise) and its closing summary.
import cliProgress from "cli-progress";
import type { RunEvent, RunSummary, StepReport } from "../executor/runner.ts";

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

const OUTCOME_TEXT: Record<StepReport["outcome"], string> = {
  ran: "ran",
  skipped: "skipped (cached)",
  reused: "reused (another runner)",
  failed: "FAILED",
  dep_failed: "DEP_FAILED",
  not_selected: "not selected",
  cancelled: "CANCELLED",
};

/** How often, without a TTY, a running step's progress is printed (the first report always is). */
const PROGRESS_LINE_MS = 10_000;

/**
 * Draws a run as it happens: on a TTY a progress bar with the running steps and a line per finished
 * step; elsewhere one line per state change (good for logs and CI).
 */
export class LiveView {
  private readonly out: NodeJS.WriteStream;
  private readonly verbose: boolean;
  private multi: cliProgress.MultiBar | undefined;
  private bar: cliProgress.SingleBar | undefined;
  private readonly running = new Map<string, number>();
  private readonly progress = new Map<string, string>();
  private readonly progressPrinted = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private done = 0;
  private total = 0;

  constructor(out: NodeJS.WriteStream = process.stderr, opts: { verbose?: boolean } = {}) {
    this.out = out;
    this.verbose = opts.verbose ?? false;
  }

  private line(text: string): void {
    if (this.multi) this.multi.log(`${text}\n`);
    else this.out.write(`${text}\n`);
  }

  private redraw(): void {
    const now = Date.now();
    const running = [...this.running].map(([name, since]) => {
      const p = this.progress.get(name);
      return `${name} ${Math.round((now - since) / 1000)}s${p ? ` [${p}]` : ""}`;
    });
    this.bar?.update(this.done, { running: running.join(", ") || "-" });
  }

  /** Feeds one runner event. */
  handle(e: RunEvent): void {
    switch (e.type) {
      case "plan": {
        const toRun = e.plan.entries.filter((x) => x.action !== "skip").length;
        this.total = e.plan.entries.length;
        this.line(`marin: ${this.total} step(s), ${toRun} to run, ${this.total - toRun} cached or not selected`);
        for (const u of e.plan.unmatched) this.line(`warning: --only ${JSON.stringify(u)} matched no step`);
        for (const x of e.plan.entries) if (x.codeChanged) this.line(`warning: ${x.step.name}: ${x.reason}`);
        if (this.out.isTTY && toRun > 0) {
          this.multi = new cliProgress.MultiBar(
            { format: "steps {bar} {value}/{total} | running: {running}", hideCursor: true, clearOnComplete: true, stream: this.out },
            cliProgress.Presets.shades_classic,
          );
          this.bar = this.multi.create(this.total, 0, { running: "-" });
          this.timer = setInterval(() => this.redraw(), 1000);
          this.timer.unref();
        }
        return;
      }
      case "step":
        if (e.state === "running") this.running.set(e.name, Date.now());
        if (!this.multi || e.state === "waiting") this.line(`  ${e.name}: ${e.state}${e.detail ? ` (${e.detail})` : ""}`);
        this.redraw();
        return;
      case "step-done": {
        const r = e.report;
        this.running.delete(r.name);
        this.progress.delete(r.name);
        this.done++;
        if (r.outcome !== "not_selected" && (r.outcome !== "skipped" || !this.multi)) {
          this.line(
            `  ${r.name}: ${OUTCOME_TEXT[r.outcome]}${r.outcome === "ran" || r.outcome === "reused" ? ` in ${seconds(r.durationMs)}` : ""}${r.error ? ` — ${r.error.split("\n")[0]}` : ""}`,
          );
        }
        this.redraw();
        return;
      }
      case "log":
        if (this.verbose) this.line(`  [${e.name}] ${e.line}`);
        return;
      case "progress": {
        this.progress.set(e.name, e.text);
        if (this.multi) {
          this.redraw();
          return;
        }
        const now = Date.now();
        const last = this.progressPrinted.get(e.name);
        if (last === undefined || now - last >= PROGRESS_LINE_MS) {
          this.progressPrinted.set(e.name, now);
          this.line(`  ${e.name}: ${e.text}`);
        }
        return;
      }
    }
  }

  /** Removes the bar (call before printing the summary). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    // Lines logged since the last frame are buffered until the next render: flush them first.
    (this.multi as unknown as { update?: () => void } | undefined)?.update?.();
    this.multi?.stop();
    this.multi = undefined;
    this.bar = undefined;
  }
}

function formatValue(v: unknown): string {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toPrecision(4);
  if (typeof v === "string") return v.length > 300 ? `${JSON.stringify(v.slice(0, 300))}…` : JSON.stringify(v);
  return JSON.stringify(v);
}

/** The end-of-run summary: each step's outcome, time and output path, then what steps returned. */
export function formatSummary(summary: RunSummary): string[] {
  const width = Math.max(...summary.steps.map((s) => s.name.length), 4);
  const lines = [`summary (prefix ${summary.prefix}):`];
  for (const s of summary.steps) {
    const time = s.outcome === "ran" || s.outcome === "reused" ? seconds(s.durationMs) : "-";
    lines.push(`  ${s.name.padEnd(width)}  ${OUTCOME_TEXT[s.outcome].padEnd(23)} ${time.padStart(7)}  ${s.outputPath}`);
  }
  for (const s of summary.steps) {
    if (s.result === undefined || s.result === null) continue;
    if (typeof s.result === "object" && !Array.isArray(s.result)) {
      const entries = Object.entries(s.result as Record<string, unknown>);
      if (entries.length === 0) continue;
      lines.push(`  ${s.name}:`);
      for (const [k, v] of entries) lines.push(`    ${k}: ${formatValue(v)}`);
    } else {
      lines.push(`  ${s.name}: ${formatValue(s.result)}`);
    }
  }
  for (const s of summary.steps) if (s.outcome === "failed") lines.push(`error in ${s.name}:\n${s.error ?? ""}`);
  const ran = summary.steps.filter((s) => s.outcome === "ran").length;
  // Milliseconds below a second: an all-cached run takes tens of ms, which "0.0s" would hide.
  const took = summary.wallMs < 1000 ? `${Math.round(summary.wallMs)} ms` : seconds(summary.wallMs);
  const cancelled = summary.steps.some((s) => s.outcome === "cancelled");
  lines.push(`${summary.ok ? "ok" : cancelled ? "CANCELLED" : "FAILED"}: ${ran} step(s) ran, ${summary.steps.length - ran} did not, in ${took}`);
  if (summary.logDir) lines.push(`logs: ${summary.logDir}`);
  return lines;
}
