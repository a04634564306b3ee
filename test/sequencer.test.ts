// The test order's one change to Vitest's: the end-to-end files that mostly wait start first in
// their group (the unit group).
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { TestSpecification, Vitest } from "vitest/node";
import { describe, expect, it } from "vitest";
import WaitingFirstSequencer, { waitingFirst } from "./setup/sequencer.ts";
import { WAITING_FILES } from "./setup/waitingFiles.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function spec(project: string, groupOrder: number, file: string): TestSpecification {
  return { project: { name: project, config: { sequence: { groupOrder }, isolate: false } }, moduleId: path.join(root, file) } as unknown as TestSpecification;
}

describe("waitingFirst", () => {
  it("puts each group's waiting items first, keeping both orders and every group in place", () => {
    const items = [
      { g: 0, n: "u1" },
      { g: 0, n: "w1" },
      { g: 0, n: "u2" },
      { g: 0, n: "w2" },
      { g: 1, n: "e1" },
      { g: 1, n: "w3" },
      { g: 2, n: "s1" },
    ];
    const out = waitingFirst(
      items,
      (x) => x.g,
      (x) => x.n.startsWith("w"),
    );
    expect(out.map((x) => x.n)).toEqual(["w1", "w2", "u1", "u2", "w3", "e1", "s1"]);
    expect(
      waitingFirst(
        [],
        () => 0,
        () => true,
      ),
    ).toEqual([]);
  });
});

describe("the waiting projects", () => {
  it("name files that exist (a renamed file would silently lose its place)", () => {
    expect(WAITING_FILES.length).toBeGreaterThan(0);
    for (const f of WAITING_FILES) expect(existsSync(path.join(root, f)), f).toBe(true);
  });
});

describe("WaitingFirstSequencer", () => {
  it("keeps Vitest's order of groups and projects and starts the unit group with its waiting files", async () => {
    // No cached results: Vitest orders a project's files by size, larger first.
    const sizes: Record<string, number> = { "a.test.ts": 40, "b.test.ts": 30, [path.basename(WAITING_FILES[0]!)]: 35, [path.basename(WAITING_FILES[1]!)]: 34 };
    const ctx = {
      config: { root },
      cache: { getFileTestResults: () => undefined, getFileStats: (key: string) => ({ size: sizes[path.basename(key)] ?? 1 }) },
    } as unknown as Vitest;
    const files = [
      spec("zephyr-e2e", 1, "packages/zephyr/src/z.e2e.test.ts"),
      spec("iris", 0, "packages/iris/src/b.test.ts"),
      spec("iris-e2e-waiting", 0, WAITING_FILES[1]!),
      spec("iris", 0, "packages/iris/src/a.test.ts"),
      spec("iris-e2e-waiting", 0, WAITING_FILES[0]!),
      spec("zephyr", 0, "packages/zephyr/src/c.test.ts"),
      spec("iris-e2e", 1, "packages/iris/src/d.e2e.test.ts"),
      spec("iris-e2e-solo", 2, "packages/iris/src/controller/fairness.e2e.test.ts"),
    ];
    const sorted = await new WaitingFirstSequencer(ctx).sort(files);
    // By Vitest's order alone the waiting project (after "iris" by name) would start after every iris unit file.
    expect(sorted.map((s) => path.relative(root, s.moduleId))).toEqual([
      WAITING_FILES[0],
      WAITING_FILES[1],
      "packages/iris/src/a.test.ts",
      "packages/iris/src/b.test.ts",
      "packages/zephyr/src/c.test.ts",
      "packages/iris/src/d.e2e.test.ts",
      "packages/zephyr/src/z.e2e.test.ts",
      "packages/iris/src/controller/fairness.e2e.test.ts",
    ]);
  });
});
