// The transformer LM: FLOP counts, shapes, causal masking, parameter names.
import { tf } from "../tf.ts";
import { beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { Rng } from "../rng.ts";
import { flopsPerToken, ModelConfigSchema, resolveModelConfig, type ModelConfigInput } from "./modelConfig.ts";
import { defaultDecayMask, TransformerLm } from "./transformer.ts";

const tiny = (over: ModelConfigInput = {}) => resolveModelConfig(ModelConfigSchema.parse({ nLayers: 2, dModel: 8, nHeads: 2, seqLen: 4, dFF: 32, vocabSize: 10, ...over }));

describe("flopsPerToken", () => {
  it("matches a hand count for a tiny config", () => {
    // Per layer: QKV 2·8·24 = 384, out 2·8·8 = 128, attention 2·(4·8) + 2·(4·8) = 128, MLP 2·8·32 + 2·32·8 = 1024.
    // Two layers = 3,328; head 2·8·10 = 160.
    expect(flopsPerToken(tiny())).toBe(3488);
    // SwiGLU adds the gate projection: MLP 3 · 2·8·16 = 768 per layer.
    expect(flopsPerToken(tiny({ activation: "swiglu", dFF: 16 }))).toBe(2 * (384 + 128 + 128 + 768) + 160);
    // GQA (1 key/value head of width 6 for 2 query heads): QKV 2·8·(2 + 2)·6 = 384, out 2·12·8 = 192,
    // attention 4·4·12 = 192.
    expect(flopsPerToken(tiny({ nKvHeads: 1, headDim: 6 }))).toBe(2 * (384 + 192 + 192 + 1024) + 160);
  });

  it("equals the matMul FLOPs the forward pass actually runs", async () => {
    await selectBackend({ force: "cpu" });
    for (const over of [{}, { activation: "swiglu", positions: "rope", tieEmbeddings: true, dFF: 16 }, { positions: "rope", nKvHeads: 1, headDim: 6 }] as ModelConfigInput[]) {
      const cfg = tiny(over);
      const model = TransformerLm.init(cfg, new Rng(1));
      const b = 3;
      const profile = await tf.profile(() => tf.tidy(() => void model.logits(tf.zeros([b, cfg.seqLen], "int32") as tf.Tensor2D)));
      let flops = 0;
      for (const k of profile.kernels) {
        if (k.name !== "BatchMatMul") continue;
        const [a, w] = k.inputShapes as number[][];
        const out = k.outputShapes[0] as number[];
        // The forward pass uses no transpose flags: inner dimension = a's last = w's second last.
        expect(a!.at(-1)).toBe(w!.at(-2));
        flops += 2 * out.reduce((x, y) => x * y, 1) * a!.at(-1)!;
      }
      expect(flops / (b * cfg.seqLen)).toBe(flopsPerToken(cfg));
      model.dispose();
    }
  });

  it("validates the attention shape: nKvHeads divides nHeads; headDim frees dModel from nHeads", () => {
    expect(ModelConfigSchema.safeParse({ nHeads: 4, nKvHeads: 3 }).success).toBe(false);
    expect(ModelConfigSchema.safeParse({ dModel: 10, nHeads: 4 }).success).toBe(false);
    expect(ModelConfigSchema.safeParse({ dModel: 10, nHeads: 4, headDim: 4 }).success).toBe(true);
    expect(ModelConfigSchema.safeParse({ dModel: 10, nHeads: 4, headDim: 3, positions: "rope" }).success).toBe(false);
    const m = TransformerLm.init(tiny({ nKvHeads: 1, headDim: 6 }), new Rng(0));
    expect(m.params.get("layers/0/attn/qkv/kernel")!.shape).toEqual([8, (2 + 2) * 6]);
    expect(m.params.get("layers/0/attn/out/kernel")!.shape).toEqual([12, 8]);
    m.dispose();
  });
});

describe("TransformerLm", () => {
  beforeAll(async () => {
    await selectBackend({ force: "wasm" });
  });

  it("names its parameters and excludes norms, biases and embeddings from decay", () => {
    const model = TransformerLm.init(tiny({ useBias: true }), new Rng(0));
    const names = [...model.params.keys()];
    expect(names).toContain("layers/1/attn/qkv/kernel");
    expect(names).toContain("head/kernel");
    expect(names.filter(defaultDecayMask).sort()).toEqual(names.filter((n) => n.endsWith("/kernel")).sort());
    expect(model.parameterCount()).toBe(names.reduce((s, n) => s + model.params.get(n)!.size, 0));
    model.dispose();
  });

  it("same seed, same parameters; every variant gives a finite loss and a gradient for every parameter", () => {
    const variants: ModelConfigInput[] = [
      {},
      { norm: "rms", activation: "swiglu", positions: "rope", tieEmbeddings: true },
      { useBias: true, norm: "layer", positions: "rope" },
      { norm: "rms", activation: "swiglu", positions: "rope", nKvHeads: 1, headDim: 6 },
      { nKvHeads: 1 },
    ];
    for (const v of variants) {
      const cfg = tiny(v);
      const a = TransformerLm.init(cfg, new Rng(7));
      const b = TransformerLm.init(cfg, new Rng(7));
      for (const [n, p] of a.params) expect(p.dataSync()).toEqual(b.params.get(n)!.dataSync());
      const x = tf.tensor2d(
        [
          [1, 2, 3, 4],
          [5, 6, 7, 8],
        ],
        [2, 4],
        "int32",
      );
      const y = tf.tensor2d(
        [
          [2, 3, 4, 5],
          [6, 7, 8, 9],
        ],
        [2, 4],
        "int32",
      );
      const { value, grads } = tf.variableGrads(() => a.loss(x, y), [...a.params.values()]);
      expect(Number.isFinite(value.dataSync()[0])).toBe(true);
      // Close to ln(10) at init: small random weights predict nearly uniformly.
      expect(Math.abs(value.dataSync()[0]! - Math.log(10))).toBeLessThan(0.5);
      for (const p of a.params.values()) expect(grads[p.name]!.abs().sum().dataSync()[0]).toBeGreaterThan(0);
      tf.dispose([x, y, value, ...Object.values(grads)]);
      a.dispose();
      b.dispose();
    }
  });

  it("is causal: changing a later token leaves earlier logits unchanged", () => {
    for (const positions of ["learned", "rope"] as const) {
      const model = TransformerLm.init(tiny({ positions, nKvHeads: positions === "rope" ? 1 : 2 }), new Rng(3));
      const l1 = model.logits(tf.tensor2d([[1, 2, 3, 4]], [1, 4], "int32")).arraySync();
      const l2 = model.logits(tf.tensor2d([[1, 2, 9, 4]], [1, 4], "int32")).arraySync();
      expect(l1.slice(0, 2)).toEqual(l2.slice(0, 2));
      expect(l1[2]).not.toEqual(l2[2]);
      model.dispose();
    }
  });

  it("validates the attention shape: nKvHeads divides nHeads; headDim frees dModel from nHeads", () => {
    expect(ModelConfigSchema.safeParse({ nHeads: 4, nKvHeads: 3 }).success).toBe(false);
    expect(ModelConfigSchema.safeParse({ dModel: 10, nHeads: 4 }).success).toBe(false);
    expect(ModelConfigSchema.safeParse({ dModel: 10, nHeads: 4, headDim: 4 }).success).toBe(true);
    expect(ModelConfigSchema.safeParse({ dModel: 10, nHeads: 4, headDim: 3, positions: "rope" }).success).toBe(false);
    const m = TransformerLm.init(tiny({ nKvHeads: 1, headDim: 6 }), new Rng(0));
    expect(m.params.get("layers/0/attn/qkv/kernel")!.shape).toEqual([8, (2 + 2) * 6]);
    expect(m.params.get("layers/0/attn/out/kernel")!.shape).toEqual([12, 8]);
    m.dispose();
  });
});
