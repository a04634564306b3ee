// importHfModel and exportModel: their bodies round-trip a model (import → export gives the same
// tensors), trainLmStep takes initializeFrom, and GGUF is refused when the graph is defined.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { AdamW, defaultDecayMask, exportHf, ModelConfigSchema, resolveModelConfig, Rng, saveTrainState, selectBackend, TransformerLm } from "@marin/levanter";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveGraph } from "../step/graph.ts";
import { defineStep, outputOf } from "../step/step.ts";
import type { StepContext } from "../step/step.ts";
import { EXPORTED_MODEL, exportModel, importHfModel } from "./models.ts";
import { trainLmStep } from "./trainLmStep.ts";

function ctx(config: unknown, outputPath: string): StepContext<any> {
  return { name: "t", id: "t-0", config, outputPath, finalPath: outputPath, prefix: path.dirname(outputPath), signal: new AbortController().signal, log: () => {}, reportStatus: () => {} };
}

describe("importHfModel / exportModel", () => {
  let dir: string;
  let hf: string;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    await selectBackend({ force: "wasm" });
    dir = mkdtempSync(path.join(os.tmpdir(), "marin-models-"));
    const cfg = resolveModelConfig(ModelConfigSchema.parse({ positions: "rope", norm: "rms", activation: "swiglu", nLayers: 1, dModel: 16, nHeads: 2, nKvHeads: 1, seqLen: 16 }), 257);
    const rng = new Rng(2);
    const model = TransformerLm.init(cfg, rng);
    const optimizer = new AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 0, decayMask: defaultDecayMask });
    await saveTrainState(path.join(dir, "src", "step-0"), false, { step: 0, model, optimizer, rng, tokenizer: "byte", loader: { seed: 0, step: 0, batchSize: 1, seqLen: 16 } });
    model.dispose();
    optimizer.dispose();
    hf = path.join(dir, "hf");
    await exportHf(path.join(dir, "src"), hf);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("imports a folder as checkpoints/ and exports it back to the same safetensors", async () => {
    const imp = importHfModel({ source: hf });
    const impOut = path.join(dir, "import-out");
    const r = (await imp.fn(ctx({ source: hf, seqLen: null }, impOut))) as { family: string };
    expect(r.family).toBe("llama");
    const exp = exportModel({ checkpoints: outputOf(imp, "checkpoints"), format: "hf" });
    const expOut = path.join(dir, "export-out");
    const e = (await exp.fn(ctx({ checkpoints: path.join(impOut, "checkpoints"), format: "hf", dtype: "float32", maxShardSize: "2GB" }, expOut))) as { path: string };
    expect(e.path).toBe(path.join(expOut, EXPORTED_MODEL));
    expect(readFileSync(path.join(expOut, EXPORTED_MODEL, "model.safetensors")).equals(readFileSync(path.join(hf, "model.safetensors")))).toBe(true);
    expect(JSON.parse(readFileSync(path.join(expOut, "export.json"), "utf8"))).toMatchObject({ format: "hf", family: "llama", checkpoint: "step-0" });
  });

  it("trainLmStep takes initializeFrom without a model section; configs without it keep their identity; gguf is refused", () => {
    const prefix = path.join(dir, "never");
    const data = defineStep({ name: "tokenize", config: {}, fn: () => undefined });
    const imp = importHfModel({ source: hf });
    const g = resolveGraph([trainLmStep({ data: outputOf(data), initializeFrom: outputOf(imp, "checkpoints"), trainer: { numTrainSteps: 5 } })], prefix);
    expect((g.byName.get("train")!.config as { initializeFrom: string }).initializeFrom).toMatch(/import-model-[0-9a-f]+\/checkpoints$/);
    const plain = resolveGraph([trainLmStep({ data: outputOf(data), model: { dModel: 32, nHeads: 4 }, trainer: { numTrainSteps: 5 } })], prefix).byName.get("train")!;
    expect(plain.config).not.toHaveProperty("initializeFrom");
    expect(() => exportModel({ checkpoints: outputOf(imp, "checkpoints"), format: "gguf" })).toThrow(/format "gguf" is not available/);
  });
});
