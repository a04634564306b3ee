// A 50-step training run on the native backend against the wasm backend's loss curve, and its
// bitwise independence from the thread count (what checkpoints and exact resume rely on).
import { describe, expect, it } from "vitest";
import { quietSuiteBackToWasm } from "./testing.ts";
import { selectBackend } from "../../backend.ts";
import { ModelConfigSchema, resolveModelConfig } from "../../models/modelConfig.ts";
import { TransformerLm, defaultDecayMask } from "../../models/transformer.ts";
import { AdamW } from "../../optim/adamw.ts";
import { Rng } from "../../rng.ts";
import { computeGradients } from "../../trainer/gradients.ts";
import { loadNativeAddon } from "./addon.ts";

const load = loadNativeAddon();

// Llama-shaped: grouped-query heads (4 on 2), rotary positions, SwiGLU, RMSNorm, untied head —
// on native through the fused rotary and attention kernels.
const LLAMA = { nLayers: 2, dModel: 32, nHeads: 4, nKvHeads: 2, seqLen: 16, positions: "rope", norm: "rms", activation: "swiglu" } as const;

function train(steps: number, shape: object = { nLayers: 2, dModel: 32, nHeads: 2, seqLen: 16 }): number[] {
  const cfg = resolveModelConfig(ModelConfigSchema.parse(shape), 257);
  const batch = 4;
  const text = Buffer.from("the quick brown fox jumps over the lazy dog; ".repeat(20));
  const model = TransformerLm.init(cfg, new Rng(0));
  const opt = new AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1, maxGradNorm: 1, decayMask: defaultDecayMask });
  const losses: number[] = [];
  try {
    for (let s = 0; s < steps; s++) {
      const off = (s * 37) % (text.length - batch * cfg.seqLen - 1);
      const ids = Int32Array.from(text.subarray(off, off + batch * cfg.seqLen));
      const targets = Int32Array.from(text.subarray(off + 1, off + 1 + batch * cfg.seqLen));
      const { loss, grads } = computeGradients(model, ids, targets, batch);
      losses.push(loss);
      opt.apply(grads, 3e-3);
      for (const g of grads.values()) g.dispose();
    }
  } finally {
    model.dispose();
    opt.dispose();
  }
  return losses;
}

describe.skipIf(!load.ok)("native training", () => {
  quietSuiteBackToWasm();

  it("follows the wasm backend's 50-step loss curve to float32 tolerance, with the same bits for 1 and 2 threads", async () => {
    await selectBackend({ force: "wasm", threads: 1 });
    const wasm = train(50);
    await selectBackend({ force: "native", threads: 1 });
    const native1 = train(50);
    await selectBackend({ force: "native", threads: 2 });
    const native2 = train(50);
    expect(wasm[49]!).toBeLessThan(wasm[0]! - 1); // it learns
    for (let s = 0; s < 50; s++) expect(Math.abs(native1[s]! - wasm[s]!), `step ${s}`).toBeLessThan(2e-3 * Math.max(1, wasm[s]!));
    expect(native2).toEqual(native1);
  });

  it("a Llama-shaped model (GQA, rotary, SwiGLU, RMSNorm) follows the wasm op-by-op curve, with the same bits for 1 and 3 threads", async () => {
    await selectBackend({ force: "wasm", threads: 1 });
    const wasm = train(30, LLAMA);
    await selectBackend({ force: "native", threads: 1 });
    const native1 = train(30, LLAMA);
    await selectBackend({ force: "native", threads: 3 });
    const native3 = train(30, LLAMA);
    expect(wasm[29]!).toBeLessThan(wasm[0]! - 1);
    for (let s = 0; s < 30; s++) expect(Math.abs(native1[s]! - wasm[s]!), `step ${s}`).toBeLessThan(2e-3 * Math.max(1, wasm[s]!));
    expect(native3).toEqual(native1);
  });
});
