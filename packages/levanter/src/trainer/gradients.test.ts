// Gradient computation: micro-batch accumulation equals the full batch.
import * as tf from "@tensorflow/tfjs";
import { describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { Rng } from "../rng.ts";
import { ModelConfigSchema, resolveModelConfig } from "../models/modelConfig.ts";
import { TransformerLm } from "../models/transformer.ts";
import { computeGradients } from "./gradients.ts";

describe("computeGradients", () => {
  it("accumulated micro-batch gradients equal the full batch's (max |Δg| ≤ 1e-5 · max |g|)", async () => {
    await selectBackend({ force: "wasm" });
    const cfg = resolveModelConfig(ModelConfigSchema.parse({ nLayers: 2, dModel: 16, nHeads: 2, seqLen: 8, vocabSize: 20 }));
    const model = TransformerLm.init(cfg, new Rng(5));
    const rng = new Rng(9);
    const rows = 8;
    const inputs = Int32Array.from({ length: rows * 8 }, () => rng.int(20));
    const targets = Int32Array.from({ length: rows * 8 }, () => rng.int(20));
    const full = computeGradients(model, inputs, targets, rows);
    for (const micro of [1, 2, 4]) {
      const before = tf.memory().numTensors;
      const acc = computeGradients(model, inputs, targets, rows, micro);
      expect(Math.abs(acc.loss - full.loss)).toBeLessThanOrEqual(1e-5 * full.loss);
      expect(tf.memory().numTensors).toBe(before + full.grads.size); // only the returned gradients
      for (const [name, g] of full.grads) {
        const [maxG, maxDiff] = tf.tidy(() => [g.abs().max().dataSync()[0]!, g.sub(acc.grads.get(name)!).abs().max().dataSync()[0]!]);
        expect(maxG).toBeGreaterThan(0);
        expect(maxDiff, `${name} with micro-batch ${micro}`).toBeLessThanOrEqual(1e-5 * maxG!);
      }
      tf.dispose([...acc.grads.values()]);
    }
    model.dispose();
  });
});
