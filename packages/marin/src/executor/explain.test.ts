// explainStep: why a step would run, the changed fields, and the upstream steps that moved it.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveGraph } from "../step/graph.ts";
import { defineStep, ignore, outputOf } from "../step/step.ts";
import { diffIdentity } from "./diff.ts";
import { explainStep, formatExplanation } from "./explain.ts";
import { runGraph } from "./runner.ts";

let prefix: string;
beforeEach(async () => {
  prefix = await fs.mkdtemp(path.join(os.tmpdir(), "marin-explain-"));
});
afterEach(async () => {
  await fs.rm(prefix, { recursive: true, force: true });
});

function pipeline(opts: { lr: number; layers: number[]; extra?: string; verbose?: boolean }) {
  const data = defineStep({ name: "data", config: { n: 10 }, fn: () => undefined });
  const train = defineStep({
    name: "train",
    config: { data: outputOf(data), opt: { lr: opts.lr }, layers: opts.layers, ...(opts.extra ? { extra: opts.extra } : {}), verbose: ignore(opts.verbose ?? false) },
    fn: () => undefined,
  });
  const report = defineStep({ name: "report", config: { model: outputOf(train, "ckpt") }, fn: () => undefined });
  return [report];
}

describe("explain", () => {
  it("names the changed fields with old and new values, and the upstream step that changed", async () => {
    await runGraph(resolveGraph(pipeline({ lr: 0.1, layers: [64, 64] }), prefix));
    const x = await explainStep(resolveGraph(pipeline({ lr: 0.2, layers: [64, 32], extra: "x", verbose: true }), prefix), "report");
    expect(x.action).toBe("run");
    expect(x.upstream.map((u) => u.name)).toEqual(["train"]);
    expect(x.upstream[0].changes).toEqual([
      { path: "extra", old: undefined, new: '"x"' },
      { path: "layers[1]", old: "64", new: "32" },
      { path: "opt.lr", old: "0.1", new: "0.2" },
    ]);
    const text = formatExplanation(x).join("\n");
    expect(text).toContain("opt.lr: 0.1 → 0.2");
    expect(text).toContain('extra: (absent) → "x"');
    expect(text).toContain("because upstream step train changed");

    const same = await explainStep(resolveGraph(pipeline({ lr: 0.1, layers: [64, 64], verbose: true }), prefix), "train");
    expect(same.action).toBe("skip");
    expect(same.reason).toBe("already succeeded");
    await expect(explainStep(resolveGraph(pipeline({ lr: 0.1, layers: [64] }), prefix), "nope")).rejects.toThrow(/no step named "nope"/);
  });

  it("diffs versions and removed fields", () => {
    const changes = diffIdentity({ config: { a: 1, b: { c: 2 } }, version: "1", deps: [] }, { config: { a: 1 }, version: "2", deps: [] });
    expect(changes).toEqual([
      { path: "b.c", old: "2", new: undefined },
      { path: "version", old: '"1"', new: '"2"' },
    ]);
  });
});
