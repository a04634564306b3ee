// BatchDecoder and KvPool: ragged batched steps over preallocated KV buffers equal a full forward; the pool keeps its byte budget.
import { tf } from "../tf.ts";
import { beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { byteTokenizer } from "../data/byteTokenizer.ts";
import { ModelConfigSchema, resolveModelConfig, type ModelConfigInput } from "../models/modelConfig.ts";
import { TransformerLm } from "../models/transformer.ts";
import { Rng } from "../rng.ts";
import { loadNativeAddon } from "../kernels/native/addon.ts";
import { BatchDecoder, type DecodeRow } from "./decoder.ts";
import { KvBudgetError, KvPool } from "./kvPool.ts";

// The native variants run where the addon loads (nativeDecode.test.ts fails without it under CI).
const nativeOk = loadNativeAddon().ok;

const TINY: ModelConfigInput = { nLayers: 2, dModel: 32, nHeads: 4, seqLen: 64, initStd: 0.5 };

function fullLogits(model: TransformerLm, ids: number[]): Float32Array {
  return tf.tidy(() => model.logits(tf.tensor2d(ids, [1, ids.length], "int32")).dataSync() as Float32Array);
}

describe("BatchDecoder", () => {
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    await selectBackend({ force: "wasm" });
  });

  const variants: [string, ModelConfigInput, "native" | "packed" | "tfjs"][] = [
    ["learned positions, layer norm, gelu, untied", {}, "native"],
    ["rope, rms norm, swiglu, tied", { positions: "rope", norm: "rms", activation: "swiglu", tieEmbeddings: true }, "native"],
    ["rope, biases, swiglu, untied", { positions: "rope", useBias: true, activation: "swiglu" }, "native"],
    ["learned positions, biases, gelu, tied", { useBias: true, tieEmbeddings: true }, "native"],
    ["rope, swiglu, MLP width 20 (vector tails)", { positions: "rope", activation: "swiglu", dFF: 20 }, "native"],
    ["learned positions, layer norm, gelu, untied", {}, "packed"],
    ["rope, rms norm, swiglu, tied", { positions: "rope", norm: "rms", activation: "swiglu", tieEmbeddings: true }, "packed"],
    ["learned positions, biases, tied", { useBias: true, tieEmbeddings: true }, "packed"],
    ["rope, biases, swiglu, untied", { positions: "rope", useBias: true, activation: "swiglu" }, "tfjs"],
    ["learned positions, biases, gelu, tied", { useBias: true, tieEmbeddings: true }, "tfjs"],
    ["Llama: GQA 4/2, headDim 6, rope, rms, swiglu, untied", { positions: "rope", norm: "rms", activation: "swiglu", nKvHeads: 2, headDim: 6 }, "native"],
    ["Llama: GQA 4/1, rope, rms, swiglu, tied", { positions: "rope", norm: "rms", activation: "swiglu", nKvHeads: 1, tieEmbeddings: true }, "native"],
    ["Llama: GQA 4/2, headDim 6, rope, rms, swiglu, untied", { positions: "rope", norm: "rms", activation: "swiglu", nKvHeads: 2, headDim: 6 }, "packed"],
    ["Llama: GQA 4/1, rope, rms, swiglu, tied", { positions: "rope", norm: "rms", activation: "swiglu", nKvHeads: 1, tieEmbeddings: true }, "packed"],
    ["Llama: GQA 4/2, headDim 6, rope, rms, swiglu, untied", { positions: "rope", norm: "rms", activation: "swiglu", nKvHeads: 2, headDim: 6 }, "tfjs"],
  ];
  for (const [name, extra, projections] of variants) {
    it.skipIf(projections === "native" && !nativeOk)(`chunked prompts and batched decode rows give the full forward's logits (${name}, ${projections} projections)`, () => {
      const model = TransformerLm.init(resolveModelConfig(ModelConfigSchema.parse({ ...TINY, ...extra }), 257), new Rng(5));
      // Biases and norm scales start as zeros and ones: perturb them so that their use is checked.
      let seed = 0;
      for (const [name, param] of model.params) if (/\/(bias|scale)$/.test(name)) param.assign(tf.tidy(() => param.add(tf.randomNormal(param.shape, 0, 0.3, "float32", ++seed))));
      const dec = new BatchDecoder(model, { projections });
      expect(dec.projections).toBe(projections);
      const pool = new KvPool(dec.layout, 1 << 20);
      try {
        const a = byteTokenizer.encode("The cat sat on the mat");
        const b = byteTokenizer.encode("A dog");
        const fa = fullLogits(model, a);
        const fb = fullLogits(model, b);
        const ka = pool.allocate(a.length);
        const kb = pool.allocate(b.length);
        const v = 257;
        const close = (got: Float32Array, row: number, want: Float32Array, at: number) => {
          for (let j = 0; j < v; j++) expect(got[row * v + j]).toBeCloseTo(want[at * v + j]!, 3);
        };
        // Step 1: a's first 7 prompt tokens (every row's logits) and b's first 2.
        const rows1: DecodeRow[] = [
          ...a.slice(0, 7).map((token, pos) => ({ kv: ka, token, pos, logits: true })),
          ...b.slice(0, 2).map((token, pos) => ({ kv: kb, token, pos, logits: pos === 1 })),
        ];
        const l1 = dec.step(rows1);
        for (let i = 0; i < 7; i++) close(l1, i, fa, i);
        close(l1, 7, fb, 1);
        expect([ka.length, kb.length]).toEqual([7, 2]);
        // Then one token of each per step, as decoding does, until b ends; a's rest in one chunk.
        for (let pos = 2; pos < b.length; pos++) {
          const l = dec.step([
            { kv: kb, token: b[pos]!, pos, logits: true },
            { kv: ka, token: a[pos + 5]!, pos: pos + 5, logits: true },
          ]);
          close(l, 0, fb, pos);
          close(l, 1, fa, pos + 5);
        }
        const rest = a.slice(b.length + 5).map((token, i) => ({ kv: ka, token, pos: b.length + 5 + i, logits: true }));
        const lr = dec.step(rest);
        rest.forEach((r, i) => close(lr, i, fa, r.pos));
        expect(ka.length).toBe(a.length);
        expect(() => dec.step([{ kv: kb, token: 1, pos: b.length, logits: false }])).toThrow(/outside a KV buffer/);
      } finally {
        dec.dispose();
        model.dispose();
      }
    });
  }
});

describe("KvPool", () => {
  it("allocates within its byte budget and frees exactly what it allocated", () => {
    const layout = { nLayers: 2, nHeads: 4, headDim: 8 };
    const pool = new KvPool(layout, 2 * 4 * 8 * 2 * 4 * 100); // 100 positions
    expect(pool.bytesPerToken).toBe(2 * 2 * 4 * 8 * 4);
    const a = pool.allocate(60);
    expect(a.data.byteLength).toBe(60 * pool.bytesPerToken);
    expect(pool.fits([40])).toBe(true);
    expect(pool.fits([20, 21])).toBe(false);
    expect(() => pool.allocate(41)).toThrow(KvBudgetError);
    const b = pool.allocate(40);
    expect(pool.allocatedBytes).toBe(pool.budgetBytes);
    a.data.fill(1);
    a.length = 60;
    const c = (pool.free(b), pool.allocate(60 - 20));
    expect(() => pool.copyInto(a, c)).toThrow(/capacities/);
    pool.free(a);
    pool.free(a);
    pool.free(c);
    expect(pool.allocatedBytes).toBe(0);
    expect(pool.liveBuffers).toBe(0);
  });
});
