// Gradient computation: micro-batch accumulation equals the full batch, and is bitwise the same
// on one rank and spread over a data-parallel gang (real loopback sockets, ranks in this process).
import { tf } from "../tf.ts";
import { describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { Rng } from "../rng.ts";
import { ModelConfigSchema, resolveModelConfig } from "../models/modelConfig.ts";
import { TransformerLm } from "../models/transformer.ts";
import { localGangs } from "../internal/testGang.ts";
import { computeGradients, dataParallelGradients } from "./gradients.ts";

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

  it("12 micro-batches give the same bits on 1 rank (accumulation) and on 2, 3 and 4 ranks; so do one per rank and ragged splits", async () => {
    process.env.LEVANTER_LOG = "silent";
    await selectBackend({ force: "wasm" });
    const cfg = resolveModelConfig(ModelConfigSchema.parse({ nLayers: 1, dModel: 16, nHeads: 2, seqLen: 8, vocabSize: 20 }));
    const rng = new Rng(4);
    const rows = 12;
    const inputs = Int32Array.from({ length: rows * 8 }, () => rng.int(20));
    const targets = Int32Array.from({ length: rows * 8 }, () => rng.int(20));
    const model = TransformerLm.init(cfg, new Rng(5));
    const one = computeGradients(model, inputs, targets, rows, 1);
    const bits = (g: Map<string, tf.Tensor>) => [...g.values()].map((t) => Buffer.from((t.dataSync() as Float32Array).buffer).toString("base64"));
    const reference = bits(one.grads);
    for (const world of [2, 3, 4]) {
      const gangs = await localGangs(world);
      try {
        const steps = await Promise.all(gangs.map((g) => dataParallelGradients(model, inputs, targets, rows, 12, g)));
        for (const st of steps) {
          expect(st.loss).toBe(one.loss);
          expect(bits(st.grads), `${world} ranks`).toEqual(reference);
          tf.dispose([...st.grads.values()]);
        }
      } finally {
        await Promise.all(gangs.map((g) => g.close()));
      }
    }
    // One micro-batch per rank (each sends its float32 gradient) and a ragged split (6 over 4:
    // two ranks raw, two fixed-point), against accumulation on one rank.
    for (const [world, count] of [
      [2, 2],
      [3, 3],
      [4, 4],
      [4, 6],
    ] as const) {
      const acc = computeGradients(model, inputs, targets, rows, rows / count);
      const gangs = await localGangs(world);
      try {
        const steps = await Promise.all(gangs.map((g) => dataParallelGradients(model, inputs, targets, rows, count, g)));
        for (const st of steps) {
          expect(st.loss).toBe(acc.loss);
          expect(bits(st.grads), `${world} ranks, ${count} micro-batches`).toEqual(bits(acc.grads));
          tf.dispose([...st.grads.values()]);
        }
      } finally {
        await Promise.all(gangs.map((g) => g.close()));
        tf.dispose([...acc.grads.values()]);
      }
    }
    tf.dispose([...one.grads.values()]);
    model.dispose();
  });
});
