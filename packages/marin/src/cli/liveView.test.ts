// The live view's line-per-change output and the run summary's text.
import { describe, expect, it } from "vitest";
import type { RunSummary } from "../executor/runner.ts";
import { formatSummary, LiveView } from "./liveView.ts";

function fakeStream(isTTY: boolean): NodeJS.WriteStream & { text: string } {
  const s = {
    text: "",
    isTTY,
    write(chunk: string) {
      s.text += chunk;
      return true;
    },
  };
  return s as unknown as NodeJS.WriteStream & { text: string };
}

describe("live view and summary", () => {
  it("prints one line per state change when not on a TTY", () => {
    const out = fakeStream(false);
    const view = new LiveView(out);
    view.handle({ type: "step", name: "a", state: "running" });
    view.handle({ type: "step", name: "b", state: "waiting", detail: "held by host:1" });
    view.handle({ type: "log", name: "a", line: "hidden unless verbose" });
    view.handle({ type: "step-done", report: { name: "a", id: "a-1", outputPath: "/p/a-1", outcome: "ran", durationMs: 1500 } });
    view.handle({ type: "step-done", report: { name: "c", id: "c-1", outputPath: "/p/c-1", outcome: "failed", durationMs: 10, error: "boom\nstack" } });
    view.stop();
    expect(out.text.split("\n").filter(Boolean)).toEqual(["  a: running", "  b: waiting (held by host:1)", "  a: ran in 1.5s", "  c: FAILED — boom"]);
  });

  it("shows a running step's progress (step/total, loss, tok/s, ETA), at most every 10 s without a TTY", () => {
    const out = fakeStream(false);
    const view = new LiveView(out);
    view.handle({ type: "step", name: "train", state: "running" });
    view.handle({ type: "progress", name: "train", text: "step 5/20 (25.0%) · loss 3.1000 · 900 tok/s · ETA 12s" });
    view.handle({ type: "progress", name: "train", text: "step 6/20 (30.0%) · loss 3.0000 · 910 tok/s · ETA 11s" });
    view.stop();
    expect(out.text.split("\n").filter(Boolean)).toEqual(["  train: running", "  train: step 5/20 (25.0%) · loss 3.1000 · 900 tok/s · ETA 12s"]);
  });

  it("summarises outcomes, times, paths and returned values", () => {
    const summary: RunSummary = {
      runId: "r",
      prefix: "/p",
      ok: false,
      wallMs: 2500,
      startedAt: 0,
      logDir: "/p/.marin/runs/r/logs",
      steps: [
        { name: "eval", id: "eval-1", outputPath: "/p/eval-1", outcome: "ran", durationMs: 1200, result: { loss: 2.3456789, bpb: 3.2 } },
        { name: "gen", id: "gen-1", outputPath: "/p/gen-1", outcome: "skipped", durationMs: 0, result: { sample: "The jury said no" } },
        { name: "bad", id: "bad-1", outputPath: "/p/bad-1", outcome: "failed", durationMs: 5, error: "it broke" },
      ],
    };
    const text = formatSummary(summary).join("\n");
    expect(text).toMatch(/eval\s+ran\s+1\.2s\s+\/p\/eval-1/);
    expect(text).toMatch(/gen\s+skipped \(cached\)\s+-\s+\/p\/gen-1/);
    expect(text).toContain("loss: 2.346");
    expect(text).toContain('sample: "The jury said no"');
    expect(text).toContain("error in bad:\nit broke");
    expect(text).toMatch(/^FAILED: 1 step\(s\) ran, 2 did not, in 2\.5s\nlogs: \/p\/\.marin\/runs\/r\/logs$/m);
    // An all-cached run's tens of milliseconds are shown as such, not as "0.0s".
    const cached = formatSummary({ ...summary, ok: true, wallMs: 48.4, steps: [summary.steps[1]], logDir: undefined }).join("\n");
    expect(cached).toMatch(/^ok: 0 step\(s\) ran, 1 did not, in 48 ms$/m);
  });
});
