// The step task in-process: its return value is the step's, bad args and an edited script are refused for good.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MarinError } from "../errors.ts";
import { loadExperiment } from "../experiment/experiment.ts";
import { resolveGraph } from "../step/graph.ts";
import { plannedIdentity } from "./stepIdentity.ts";
import { runStepTask } from "./stepTask.ts";

let tmp: string;
beforeEach(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "marin-steptask-"));
  await fs.writeFile(path.join(tmp, "package.json"), JSON.stringify({ type: "module" }));
});
afterEach(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

async function script(n: number): Promise<string> {
  const marin = path.resolve(import.meta.dirname, "../index.ts");
  const file = path.join(tmp, `exp-${n}.ts`);
  await fs.writeFile(
    file,
    `import { writeFile } from "node:fs/promises";
     import path from "node:path";
     import { defineStep } from ${JSON.stringify(marin)};
     export default () => [defineStep({ name: "s", config: { n: ${n} }, fn: async (ctx) => {
       await writeFile(path.join(ctx.outputPath, "out.txt"), String(ctx.config.n));
       return { n: ctx.config.n, where: ctx.outputPath };
     } })];`,
  );
  return file;
}

async function rejection(p: Promise<unknown>): Promise<MarinError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(MarinError);
  return e as MarinError;
}

describe("runStepTask", () => {
  it("runs the step into the staging folder and returns what the step returned", async () => {
    const file = await script(3);
    const prefix = path.join(tmp, "out");
    const rs = resolveGraph((await loadExperiment(file)).steps, prefix).byName.get("s")!;
    const staging = path.join(tmp, "staging");
    await fs.mkdir(staging);
    const result = await runStepTask({ script: file, step: "s", planned: plannedIdentity(rs), prefix, staging });
    expect(result).toEqual({ n: 3, where: staging });
    expect(await fs.readFile(path.join(staging, "out.txt"), "utf8")).toBe("3");
    // The task writes nothing but the step's outputs: no result file, nothing at the prefix.
    expect(await fs.readdir(staging)).toEqual(["out.txt"]);
    await expect(fs.stat(prefix)).rejects.toThrow();
  });

  it("refuses bad args and a step whose identity moved, as non-retryable errors", async () => {
    const bad = await rejection(runStepTask({ script: "", step: "s" } as never));
    expect(bad.code).toBe("INVALID_CONFIG");
    expect(bad.retryable).toBe(false);
    expect(bad.message).toMatch(/marin step task: bad args:[\s\S]*planned/);

    const prefix = path.join(tmp, "out");
    const planned = plannedIdentity(resolveGraph((await loadExperiment(await script(1))).steps, prefix).byName.get("s")!);
    const moved = await rejection(runStepTask({ script: await script(2), step: "s", planned, prefix, staging: path.join(tmp, "st") }));
    expect(moved.code).toBe("FINGERPRINT_MISMATCH");
    expect(moved.retryable).toBe(false);
    expect(moved.message).toContain("n: 1 → 2");
  });
});
