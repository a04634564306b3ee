// test/setup/sequencer.ts: the listed end-to-end files start first within their group, every
// other file keeps Vitest's order, and groups still run in their order.
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { TestSpecification, Vitest } from "vitest/node";
import { describe, expect, it } from "vitest";
import ListedFirst, { FIRST } from "./setup/sequencer.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function spec(project: string, groupOrder: number, file: string): TestSpecification {
  return { project: { name: project, config: { sequence: { groupOrder }, isolate: false } }, moduleId: path.join(root, file) } as unknown as TestSpecification;
}

describe("ListedFirst", () => {
  it("starts the listed files first within a group, in the listed order, and keeps the groups' order", async () => {
    // No cached results; file sizes as Vitest would read them (larger first among unknown heavy-ness).
    const sizes: Record<string, number> = { "a.e2e.test.ts": 10, "b.e2e.test.ts": 20, "u.test.ts": 5 };
    const ctx = {
      config: { root },
      cache: { getFileTestResults: () => undefined, getFileStats: (key: string) => ({ size: sizes[path.basename(key)] ?? 1 }) },
    } as unknown as Vitest;
    const files = [
      spec("zephyr-e2e", 1, "packages/zephyr/src/a.e2e.test.ts"),
      spec("iris-e2e", 1, "packages/iris/src/b.e2e.test.ts"),
      spec("repo-e2e", 1, FIRST[0]),
      spec("iris", 0, "packages/iris/src/u.test.ts"),
      spec("marin-e2e", 1, FIRST[1]),
      spec("iris-e2e-solo", 2, "packages/iris/src/controller/fairness.e2e.test.ts"),
    ];
    const sorted = await new ListedFirst(ctx).sort(files);
    expect(sorted.map((s) => path.relative(root, s.moduleId))).toEqual([
      "packages/iris/src/u.test.ts",
      FIRST[0],
      FIRST[1],
      "packages/iris/src/b.e2e.test.ts",
      "packages/zephyr/src/a.e2e.test.ts",
      "packages/iris/src/controller/fairness.e2e.test.ts",
    ]);
  });
});
