// How `marin run` tells an iris dashboard about its run: the run's DAG and each step's state,
// PUT as one JSON record to `<dashboard>/api/pipelines/<run id>` whenever a step changes. The
// record is iris's `PipelineRecord` (its zod schema is what the dashboard checks): each step is
// one of its nodes.
import type { PipelineNode, PipelineNodeState, PipelineRecord } from "@marin/iris";
import type { PlanEntry, RunPlan } from "../executor/plan.ts";
import { formatExplanation } from "../executor/explain.ts";
import type { Explanation } from "../executor/explain.ts";
import type { RunEvent, RunSummary, StepOutcome } from "../executor/runner.ts";

const OUTCOME_STATE: Record<StepOutcome, PipelineNodeState> = {
  ran: "done",
  skipped: "cached",
  reused: "cached",
  failed: "failed",
  dep_failed: "dep_failed",
  not_selected: "not_selected",
  cancelled: "cancelled",
};

/** The `marin explain` text of a plan entry (with upstream changes), from the plan already made. */
function explainText(plan: RunPlan, entry: PlanEntry): string {
  const explain = (e: PlanEntry): Explanation => {
    const last = e.lastRun;
    const upstream =
      last && last.id !== e.step.id
        ? e.step.deps.filter((d) => !last.identity.deps.includes(d.id) && last.dependencies.some((o) => o.name === d.name)).map((d) => explain(plan.byName.get(d.name)!))
        : [];
    return { name: e.step.name, id: e.step.id, outputPath: e.step.outputPath, action: e.action, reason: e.reason, changes: e.changes, lastRunId: last?.id, upstream };
  };
  return formatExplanation(explain(entry)).join("\n");
}

/**
 * Reports one run to a dashboard: call `handle` with every runner event and `finish` with the
 * summary. At most one PUT is in flight; the latest state always goes out. A dashboard that cannot
 * be reached never fails the run (reports are dropped).
 */
export class PipelineReporter {
  private readonly url: string;
  private readonly authorization: string | undefined;
  private readonly record: PipelineRecord;
  private readonly byName = new Map<string, PipelineNode>();
  private inFlight: Promise<void> | undefined;
  private dirty = false;

  /** `dashboard`: the controller's HTTP URL (`http://host:port/`); `token`: its bearer token, if any. */
  constructor(dashboard: string, runId: string, prefix: string, token: string | undefined) {
    this.url = new URL(`api/pipelines/${encodeURIComponent(runId)}`, dashboard.endsWith("/") ? dashboard : `${dashboard}/`).href;
    this.authorization = token ? `Bearer ${token}` : undefined;
    this.record = { runId, prefix, state: "running", startedAtMs: Date.now(), steps: [] };
  }

  /** Folds one runner event into the record and sends it. */
  handle(e: RunEvent): void {
    if (e.type === "plan") {
      this.record.steps = e.plan.entries.map((entry) => {
        const s: PipelineNode = {
          name: entry.step.name,
          id: entry.step.id,
          outputPath: entry.step.outputPath,
          deps: entry.step.deps.map((d) => d.name),
          state: !entry.selected ? "not_selected" : entry.action === "skip" ? "cached" : entry.action === "wait" ? "waiting" : "planned",
          explain: explainText(e.plan, entry),
        };
        this.byName.set(s.name, s);
        return s;
      });
    } else {
      const s = this.byName.get(e.type === "step-done" ? e.report.name : e.name);
      if (!s) return;
      if (e.type === "step") {
        s.state = e.state;
        if (e.state === "running" && s.startedAtMs === undefined) s.startedAtMs = Date.now();
      } else if (e.type === "step-done") {
        s.state = OUTCOME_STATE[e.report.outcome];
        s.durationMs = e.report.durationMs;
        if (e.report.error) s.error = e.report.error.slice(0, 20_000);
      } else if (e.type === "progress") {
        s.progress = e.text.slice(0, 2000);
      } else if (e.type === "log") {
        // The iris launcher logs the job it submitted: the dashboard links the step to that job.
        const m = /^submitted iris job (\S+)/.exec(e.line);
        if (m) s.job = m[1];
        else return;
      }
    }
    this.send();
  }

  /** Marks the run finished and waits (briefly) until the last record went out. */
  async finish(summary: RunSummary | undefined): Promise<void> {
    this.record.state = "finished";
    this.record.finishedAtMs = Date.now();
    if (summary) this.record.ok = summary.ok;
    this.send();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.drain(), new Promise<void>((r) => (timer = setTimeout(r, 5000)))]);
    clearTimeout(timer);
  }

  private async drain(): Promise<void> {
    while (this.inFlight) await this.inFlight;
  }

  private send(): void {
    if (this.inFlight) {
      this.dirty = true;
      return;
    }
    const body = JSON.stringify(this.record);
    this.inFlight = fetch(this.url, { method: "PUT", headers: { "content-type": "application/json", ...(this.authorization ? { authorization: this.authorization } : {}) }, body })
      .then((r) => r.body?.cancel())
      .catch(() => undefined)
      .finally(() => {
        this.inFlight = undefined;
        if (this.dirty) {
          this.dirty = false;
          this.send();
        }
      });
  }
}
