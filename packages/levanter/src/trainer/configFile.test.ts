// Config files and overrides: YAML scalars, nested keys, errors naming the key.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyOverrides, loadTrainLmConfig } from "./configFile.ts";

describe("loadTrainLmConfig", () => {
  let dir: string;
  let file: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-cfg-"));
    file = path.join(dir, "c.yaml");
    writeFileSync(file, "model:\n  dModel: 64\ndata:\n  trainCache: cache/train\ntrainer:\n  numTrainSteps: 10\n");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads YAML, fills defaults and applies typed dotted overrides", () => {
    const c = loadTrainLmConfig(file, ["--trainer.numTrainSteps=20", "--model.activation=swiglu", "--optimizer.cycles=[100, 200]", "--trainer.checkpointer.keep=[{every: 5}]"]);
    expect(c.trainer.numTrainSteps).toBe(20);
    expect(c.model).toMatchObject({ dModel: 64, activation: "swiglu", nLayers: 2 });
    expect(c.optimizer.cycles).toEqual([100, 200]);
    expect(c.optimizer.learningRate).toBe(6e-4);
    expect(c.trainer.checkpointer).toEqual({ keep: [{ every: 5 }] });
  });

  it("names the path of a bad field", () => {
    expect(() => loadTrainLmConfig(file, ["--trainer.numTrainSteps=-3"])).toThrow(/trainer\.numTrainSteps: .*got -3/);
    expect(() => loadTrainLmConfig(file, ["--model.dModel=abc"])).toThrow(/model\.dModel: .*got "abc"/);
    expect(() => loadTrainLmConfig(file, ["--trainer.checkpointer.keep=[{every: 0}]"])).toThrow(/trainer\.checkpointer\.keep\.0\.every/);
    expect(() => loadTrainLmConfig(file, ["--model.bogus=1"])).toThrow(/model: .*bogus/);
    expect(() => loadTrainLmConfig(file, ["--optimizer.warmup=2.5"])).toThrow(/optimizer\.warmup/);
    expect(() => applyOverrides({ model: 3 }, ["--model.dModel=1"])).toThrow(/model is not a section/);
    expect(() => loadTrainLmConfig(path.join(dir, "missing.yaml"))).toThrow(/cannot read/);
  });
});
