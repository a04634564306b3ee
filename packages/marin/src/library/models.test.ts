// importHfModel and exportModel: their bodies round-trip a model (import → export gives the same
// tensors), export a GGUF file (and refuse a model GGUF's llama cannot hold, naming the field),
// and trainLmStep takes initializeFrom.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { AdamW, defaultDecayMask, exportHf, ModelConfigSchema, resolveModelConfig, Rng, saveTrainState, selectBackend, TransformerLm } from "@marin/levanter";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveGraph } from "../step/graph.ts";
import { defineStep, outputOf } from "../step/step.ts";
import type { StepContext } from "../step/step.ts";
import { EXPORTED_GGUF, EXPORTED_MODEL, exportModel, importHfModel } from "./models.ts";
import { trainLmStep } from "./trainLmStep.ts";

function ctx(config: unknown, outputPath: string): StepContext<any> {
  return {
    name: "t",
    id: "t-0",
    config,
    outputPath,
    finalPath: outputPath,
    prefix: path.dirname(outputPath),
    signal: new AbortController().signal,
    log: () => {},
    reportStatus: () => {},
  };
}

describe("importHfModel / exportModel", () => {
  let dir: string;
  let hf: string;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    await selectBackend({ force: "wasm" });
    dir = mkdtempSync(path.join(os.tmpdir(), "marin-models-"));
    const cfg = resolveModelConfig(
      ModelConfigSchema.parse({ positions: "rope", norm: "rms", activation: "swiglu", nLayers: 1, dModel: 16, nHeads: 2, nKvHeads: 1, seqLen: 16 }),
      257,
    );
    const rng = new Rng(2);
    const model = TransformerLm.init(cfg, rng);
    const optimizer = new AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 0, decayMask: defaultDecayMask });
    await saveTrainState(path.join(dir, "src", "step-0"), false, { step: 0, model, optimizer, rng, tokenizer: "byte", loader: { seed: 0, step: 0, batchSize: 1, seqLen: 16 } });
    model.dispose();
    optimizer.dispose();
    // A GPT-2-shaped checkpoint (layer norm, gelu, learned positions): GGUF's llama cannot hold it.
    const gpt = TransformerLm.init(
      resolveModelConfig(ModelConfigSchema.parse({ positions: "learned", norm: "layer", activation: "gelu", nLayers: 1, dModel: 16, nHeads: 2, seqLen: 16 }), 257),
      rng,
    );
    const gptOpt = new AdamW(gpt.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 0, decayMask: defaultDecayMask });
    await saveTrainState(path.join(dir, "gpt", "step-0"), false, {
      step: 0,
      model: gpt,
      optimizer: gptOpt,
      rng,
      tokenizer: "byte",
      loader: { seed: 0, step: 0, batchSize: 1, seqLen: 16 },
    });
    gpt.dispose();
    gptOpt.dispose();
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

  it("trainLmStep takes initializeFrom without a model section; configs without it keep their identity", () => {
    const prefix = path.join(dir, "never");
    const data = defineStep({ name: "tokenize", config: {}, fn: () => undefined });
    const imp = importHfModel({ source: hf });
    const g = resolveGraph([trainLmStep({ data: outputOf(data), initializeFrom: outputOf(imp, "checkpoints"), trainer: { numTrainSteps: 5 } })], prefix);
    expect((g.byName.get("train")!.config as { initializeFrom: string }).initializeFrom).toMatch(/import-model-[0-9a-f]+\/checkpoints$/);
    const plain = resolveGraph([trainLmStep({ data: outputOf(data), model: { dModel: 32, nHeads: 4 }, trainer: { numTrainSteps: 5 } })], prefix).byName.get("train")!;
    expect(plain.config).not.toHaveProperty("initializeFrom");
  });

  it("exports the newest checkpoint as one GGUF v3 file, model.gguf, with export.json; the result says where", async () => {
    const exp = exportModel({ checkpoints: outputOf(defineStep({ name: "train", config: {}, fn: () => undefined }), "checkpoints"), format: "gguf", type: "q8_0" });
    expect(exp.name).toBe("export-gguf");
    const out = path.join(dir, "gguf-out");
    const sizes: Record<string, number> = {};
    for (const type of ["f32", "q8_0"] as const) {
      const o = path.join(out, type);
      const r = (await exp.fn(ctx({ checkpoints: path.join(dir, "src"), format: "gguf", type }, o))) as { format: string; type: string; bytes: number; path: string };
      expect(r).toMatchObject({ format: "gguf", type, path: path.join(o, EXPORTED_GGUF) });
      const file = readFileSync(path.join(o, EXPORTED_GGUF));
      expect(file.length).toBe(r.bytes);
      // The header: magic "GGUF", version 3 (u32 LE), then tensor and metadata counts (u64 LE).
      expect(file.subarray(0, 4).toString("latin1")).toBe("GGUF");
      expect(file.readUInt32LE(4)).toBe(3);
      const tensors = Number(file.readBigUInt64LE(8));
      expect(tensors).toBeGreaterThan(0);
      expect(file.includes(Buffer.from("general.architecture"))).toBe(true);
      expect(file.includes(Buffer.from("llama"))).toBe(true);
      const meta = JSON.parse(readFileSync(path.join(o, "export.json"), "utf8"));
      expect(meta).toMatchObject({ format: "gguf", type, checkpoint: "step-0", file: EXPORTED_GGUF, tensors, bytes: file.length });
      sizes[type] = file.length;
    }
    // q8_0 keeps ~8.5 bits of 32 for the matrices: the file is clearly smaller than f32's.
    expect(sizes.q8_0).toBeLessThan(sizes.f32 * 0.8);
  });

  it("a model GGUF's llama cannot hold fails the export naming the field", async () => {
    const exp = exportModel({ checkpoints: outputOf(defineStep({ name: "train", config: {}, fn: () => undefined }), "checkpoints"), format: "gguf" });
    const o = path.join(dir, "gguf-gpt");
    await expect(exp.fn(ctx({ checkpoints: path.join(dir, "gpt"), format: "gguf", type: "f32" }, o))).rejects.toThrow(/model\.positions: "learned" cannot be exported to GGUF/);
    expect(existsSync(path.join(o, EXPORTED_GGUF))).toBe(false);
  });

  it("checks exportModel's options when the graph is defined; the format's options are part of its identity", () => {
    const prefix = path.join(dir, "never");
    const train = defineStep({ name: "train", config: {}, fn: () => undefined });
    const checkpoints = outputOf(train, "checkpoints");
    expect(() => exportModel({ checkpoints, format: "onnx" as "hf" })).toThrow(/format "onnx" is not one of "hf", "gguf"/);
    expect(() => exportModel({ checkpoints, format: "gguf", type: "q4_0" as "f32" })).toThrow(/type "q4_0" is not one of f32, f16, q8_0/);
    expect(() => exportModel({ checkpoints, format: "gguf", dtype: "bfloat16" })).toThrow(/dtype is an option of format "hf", not of "gguf"/);
    expect(() => exportModel({ checkpoints, format: "hf", type: "f16" })).toThrow(/type is an option of format "gguf", not of "hf"/);
    const g = resolveGraph([exportModel({ checkpoints, format: "gguf" }), exportModel({ checkpoints, format: "hf" })], prefix);
    expect(g.byName.get("export-gguf")!.config).toEqual({ checkpoints: expect.stringMatching(/train-[0-9a-f]+\/checkpoints$/), format: "gguf", type: "f32" });
    expect(g.byName.get("export-hf")!.config).toMatchObject({ format: "hf", dtype: "float32", maxShardSize: "2GB" });
    const f16 = resolveGraph([exportModel({ checkpoints, format: "gguf", type: "f16" })], prefix).byName.get("export-gguf")!;
    expect(f16.id).not.toBe(g.byName.get("export-gguf")!.id);
  });
});
