// Run identities: what counts as the same model and data across a run directory's checkpoints.
import { describe, expect, it } from "vitest";
import { resolveModelConfig, ModelConfigSchema } from "../models/modelConfig.ts";
import { checkContinuesRun, runDifferences, type RunIdentity } from "./runIdentity.ts";

const model = resolveModelConfig(ModelConfigSchema.parse({ dModel: 32, nHeads: 2 }), 257);
const cache = { path: "/a/cache", tokenizer: "byte", vocabSize: 257, totalTokens: 1000, totalDocuments: 10 };
const run: RunIdentity = { data: { trainCache: cache, validationCache: null, seed: 0, shuffle: true } };
const stored = { model: model as unknown as Record<string, unknown>, tokenizer: "byte", loader: { seed: 0 }, run };

describe("runDifferences / checkContinuesRun", () => {
  it("the same model and data contents continue the run, even from a moved cache", () => {
    expect(runDifferences(stored, { model, run: { data: { ...run.data, trainCache: { ...cache, path: "/b/cache" } } } })).toEqual([]);
  });

  it("names each differing model and data field", () => {
    const now = resolveModelConfig(ModelConfigSchema.parse({ dModel: 32, nHeads: 4 }), 257);
    const diffs = runDifferences(stored, { model: now, run: { data: { ...run.data, seed: 3, trainCache: { ...cache, totalTokens: 5 } } } });
    expect(diffs).toHaveLength(3);
    expect(diffs[0]).toBe("model.nHeads: 2 in the run, 4 now");
    expect(diffs[1]).toMatch(/^data\.trainCache: \/a\/cache \(10 documents, 1,000 tokens, tokenizer byte\) in the run, \/a\/cache \(10 documents, 5 tokens/);
    expect(diffs[2]).toMatch(/^data\.seed: 0 in the run, 3 now/);
  });

  it("a checkpoint written before the run was recorded is compared by model, tokenizer and data seed", () => {
    const { run: _run, ...old } = stored;
    expect(runDifferences(old, { model, run })).toEqual([]);
    expect(runDifferences({ ...old, loader: { seed: 1 } }, { model, run })).toEqual(["data.seed: 1 in the run, 0 now"]);
  });

  it("refuses differences and a run already past numTrainSteps, with what to do", () => {
    const base = { runDir: "runs/x", checkpoint: "runs/x/checkpoints/step-9", checkpointStep: 9, numTrainSteps: 9, differences: [] };
    expect(() => checkContinuesRun(base)).not.toThrow();
    expect(() => checkContinuesRun({ ...base, differences: ["model.dModel: 1 in the run, 2 now"] })).toThrow(/model\.dModel.*Pick another trainer\.runDir/);
    expect(() => checkContinuesRun({ ...base, numTrainSteps: 5 })).toThrow(/numTrainSteps is 5, but the run in runs\/x is already past it, at step 9/);
  });
});
