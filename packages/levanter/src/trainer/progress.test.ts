// train's human output: progress bar, progress lines, the summary line.
import { describe, expect, it } from "vitest";
import type { TrainStepInfo, TrainLmResult } from "../trainer/trainLm.ts";
import { TrainProgress, type ProgressMode } from "./progress.ts";
import { stripWordTags } from "@marin/iris/toolkit";

function fakeStream(columns?: number) {
  const chunks: string[] = [];
  return { chunks, stream: { write: (t: string) => chunks.push(t), columns } };
}

const step = (n: number, total: number, extra: Record<string, number> = {}) =>
  ({
    step: n,
    totalSteps: total,
    loss: 3 - n / 10,
    learningRate: 0.1,
    final: false,
    metrics: { "throughput/duration": 0.5, "throughput/tokens_per_second": 2000, "throughput/mfu": 1.5, ...extra },
  }) as unknown as TrainStepInfo;

async function drive(mode: ProgressMode, total: number, clock: { t: number }, columns?: number) {
  const out = fakeStream(columns);
  const p = new TrainProgress(out.stream, mode, () => clock.t);
  for (let i = 1; i <= total; i++) {
    clock.t += 500;
    await p.hook.fn(step(i, total, i === total ? { "eval/loss": 2.5, "eval/bpb": 3.25 } : {}));
  }
  return { out, p };
}

describe("TrainProgress (levanter train's human output)", () => {
  it("bar mode redraws one line in place (step, loss, tok/s, ETA) and prints evaluations above it", async () => {
    const clock = { t: 0 };
    const { out, p } = await drive("bar", 4, clock, 0);
    // ESC made visible: lint forbids control characters in regular expressions.
    const text = out.chunks.join("").replaceAll("\x1b", "<ESC>");
    expect(text).toMatch(/^\r<ESC>\[2K(█+)(░+) step 1\/4 \(25\.0%\) · loss 2\.9000 · 2,000 tok\/s · MFU 1\.50% · ETA 2s\r/);
    expect(text).toMatch(/\r<ESC>\[2K█{5,} step 4\/4/);
    expect(text.split(/\r<ESC>\[2K|\n/).every((l) => l.length <= 79)).toBe(true);
    expect(text).toContain("\r<ESC>[2Keval at step 4: loss 2.5000 · bpb 3.2500\n");
    expect(text.endsWith("step 4/4 (100.0%) · loss 2.6000 · 2,000 tok/s · MFU 1.50% · ETA 0s")).toBe(true);
    p.logRecord({ time: "t", level: "warn", pkg: "levanter", msg: "checkpoint skipped: /r/step-9/metadata.json is damaged", checkpoint: "/r/step-9" });
    expect(out.chunks.at(-1)!.replaceAll("\x1b", "<ESC>")).toMatch(/^\r<ESC>\[2Klevanter: WARNING: checkpoint skipped: \/r\/step-9\/metadata.json is damaged\n.*step 4\/4/);
    p.end();
    expect(out.chunks.at(-1)).toBe("\n");
    const result = {
      step: 4,
      resumedFrom: 2,
      stoppedEarly: false,
      skippedSteps: 0,
      finalLoss: 2.6,
      eval: { loss: 2.5, bpb: 3.25, tokens: 10 },
      parameterCount: 1,
      checkpoint: "/r/step-4",
    } as unknown as TrainLmResult;
    expect(p.summary(result, 4, "/r/log.jsonl")).toBe(
      "levanter: finished step 4/4 (resumed from step 2) · loss 2.6000 · eval loss 2.5000 · bpb 3.2500 · 2,000 tok/s · 2s · checkpoint /r/step-4 · log /r/log.jsonl",
    );
    expect(p.summary({ ...result, stoppedEarly: true, step: 3 }, 4)).toMatch(
      /^levanter: stopped at step 3\/4 \(resumed from step 2\); a checkpoint was saved, run the same command to resume/,
    );
    expect(p.summary({ ...result, resumedFrom: 4 }, 4)).toMatch(/^levanter: already finished: step 4\/4, nothing to train/);
  });

  it("lines mode prints a line per tenth of the run (and the last); none prints no progress", async () => {
    const lines = await drive("lines", 40, { t: 0 });
    const printed = lines.out.chunks.filter((c) => c.startsWith("step "));
    expect(printed).toHaveLength(11);
    expect(printed.at(-1)).toMatch(/^step 40\/40 \(100\.0%\)/);
    expect((await drive("none", 5, { t: 0 })).out.chunks).toEqual([]);
  });
});

describe("stripWordTags", () => {
  it("drops Brown's tags, re-attaches punctuation and turns `` '' into quotes", () => {
    const brown = "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ,/, and/cc (/( so/rb )/) on/in ./.\n\n\tIt's/pps+bez 1/2/cd done/vbn ./.\n";
    expect(stripWordTags(brown)).toBe('The jury said "no evidence", and (so) on. It\'s 1/2 done.');
  });
});
