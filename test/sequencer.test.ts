// The test order's one change to Vitest's: end-to-end files that mostly wait are spread out.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { TestSpecification, Vitest } from "vitest/node";
import { describe, expect, it } from "vitest";
import SpreadWaitingSequencer, { spread, WAITING_FILES } from "./setup/sequencer.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function spec(project: string, groupOrder: number, file: string): TestSpecification {
  return { project: { name: project, config: { sequence: { groupOrder }, isolate: false } }, moduleId: path.join(root, file) } as unknown as TestSpecification;
}

describe("spread", () => {
  it("keeps both orders and puts the waiting files evenly among the busy ones, the first one first", () => {
    expect(spread(["b1", "b2", "b3", "b4"], ["w1", "w2"])).toEqual(["w1", "b1", "b2", "w2", "b3", "b4"]);
    expect(spread(["b1", "b2", "b3"], ["w1", "w2", "w3"])).toEqual(["w1", "b1", "w2", "b2", "w3", "b3"]);
  });

  it("never pairs two waiting files when there are enough busy ones, and loses none", () => {
    const busy = Array.from({ length: 23 }, (_, i) => `b${i}`);
    const waiting = ["w0", "w1", "w2"];
    const out = spread(busy, waiting);
    expect([...out].sort()).toEqual([...busy, ...waiting].sort());
    for (let i = 1; i < out.length; i++) expect(out[i - 1]!.startsWith("w") && out[i]!.startsWith("w")).toBe(false);
  });

  it("handles no waiting files, and more waiting files than busy ones", () => {
    expect(spread(["b1", "b2"], [])).toEqual(["b1", "b2"]);
    expect([...spread(["b1"], ["w1", "w2", "w3"])].sort()).toEqual(["b1", "w1", "w2", "w3"]);
  });
});

describe("WAITING_FILES", () => {
  it("names files that exist (a renamed file would silently lose its place)", () => {
    for (const f of WAITING_FILES) expect(existsSync(path.join(root, f)), f).toBe(true);
  });
});

describe("SpreadWaitingSequencer", () => {
  it("keeps groups and projects in Vitest's order and spreads a project's waiting files among its busy ones", async () => {
    // No cached results: Vitest orders a project's files by size, larger first.
    const sizes: Record<string, number> = {
      "a.e2e.test.ts": 40,
      "b.e2e.test.ts": 30,
      "c.e2e.test.ts": 20,
      [path.basename(WAITING_FILES[0]!)]: 35,
      [path.basename(WAITING_FILES[1]!)]: 34,
    };
    const ctx = {
      config: { root },
      cache: { getFileTestResults: () => undefined, getFileStats: (key: string) => ({ size: sizes[path.basename(key)] ?? 1 }) },
    } as unknown as Vitest;
    const files = [
      spec("zephyr-e2e", 1, "packages/zephyr/src/z.e2e.test.ts"),
      spec("iris-e2e", 1, "packages/iris/src/a.e2e.test.ts"),
      spec("iris-e2e", 1, WAITING_FILES[1]!),
      spec("iris-e2e", 1, "packages/iris/src/c.e2e.test.ts"),
      spec("iris-e2e", 1, WAITING_FILES[0]!),
      spec("iris-e2e", 1, "packages/iris/src/b.e2e.test.ts"),
      spec("iris", 0, "packages/iris/src/u.test.ts"),
      spec("iris-e2e-solo", 2, "packages/iris/src/controller/fairness.e2e.test.ts"),
    ];
    const sorted = await new SpreadWaitingSequencer(ctx).sort(files);
    // By size alone the two waiting files (35, 34) would run together, second and third.
    expect(sorted.map((s) => path.relative(root, s.moduleId))).toEqual([
      "packages/iris/src/u.test.ts",
      WAITING_FILES[0],
      "packages/iris/src/a.e2e.test.ts",
      WAITING_FILES[1],
      "packages/iris/src/b.e2e.test.ts",
      "packages/iris/src/c.e2e.test.ts",
      "packages/zephyr/src/z.e2e.test.ts",
      "packages/iris/src/controller/fairness.e2e.test.ts",
    ]);
  });
});
