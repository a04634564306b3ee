// loadExperiment: importing experiment scripts, and the errors for scripts that are not ones.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadExperiment } from "./experiment.ts";

let tmp: string;
const saved = { ...process.env };
beforeEach(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "marin-exp-"));
  await fs.writeFile(path.join(tmp, "package.json"), JSON.stringify({ type: "module" }));
});
afterEach(async () => {
  process.env = { ...saved };
  await fs.rm(tmp, { recursive: true, force: true });
});

describe("experiment scripts", () => {
  it("imports a script without running it and calls its default export", async () => {
    const marin = path.resolve(import.meta.dirname, "../index.ts");
    const file = path.join(tmp, "exp.ts");
    await fs.writeFile(
      file,
      `import { defineStep, runIfMain } from ${JSON.stringify(marin)};
       globalThis.__imported = (globalThis.__imported ?? 0) + 1;
       export default function build() { return [defineStep({ name: "only", config: { a: 1 }, fn: () => undefined })]; }
       await runIfMain(import.meta.url, build);`,
    );
    const { script, steps } = await loadExperiment(file);
    expect(script).toBe(file);
    expect(steps.map((s) => s.name)).toEqual(["only"]);
    expect((globalThis as { __imported?: number }).__imported).toBe(1);
  });

  it("explains what is wrong with a script that exports no build function", async () => {
    const file = path.join(tmp, "bad.ts");
    await fs.writeFile(file, "export const steps = [];\n");
    await expect(loadExperiment(file)).rejects.toThrow(/must `export default` a function/);
    await expect(loadExperiment(path.join(tmp, "missing.ts"))).rejects.toThrow(/could not import experiment script/);
    const notSteps = path.join(tmp, "notsteps.ts");
    await fs.writeFile(notSteps, "export default () => [1, 2];\n");
    await expect(loadExperiment(notSteps)).rejects.toThrow(/must return an array of steps/);
  });
});
