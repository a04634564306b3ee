// The native decode step (native/src/decode.cc): a row's values are the same bits alone and in any batch, in the AVX2 and the baseline builds; bad rows are refused by name.
import { beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { loadNativeAddon, type NativeAddon } from "../kernels/native/addon.ts";
import { sameBits } from "../kernels/native/testing.ts";
import { ModelConfigSchema, resolveModelConfig, type ModelConfigInput } from "../models/modelConfig.ts";
import { TransformerLm } from "../models/transformer.ts";
import { Rng } from "../rng.ts";
import { BatchDecoder, type DecodeRow } from "./decoder.ts";
import { KvPool, type SeqKv } from "./kvPool.ts";

const load = loadNativeAddon();
// CI builds the addon at install: there, a missing addon is a failure, not a skip.
const required = process.env.CI === "true" || process.env.LEVANTER_NATIVE_REQUIRED === "1";
if (!load.ok && required) throw new Error(`levanter native addon required but unavailable: ${load.reason}`);

// dModel 48 / 4 heads: head size 12 (not a multiple of 8) and vocabulary 257 (not of 16) reach every tail loop.
const SMALL: ModelConfigInput = { nLayers: 2, dModel: 48, nHeads: 4, seqLen: 64, initStd: 0.5 };

describe.skipIf(!load.ok)("native decode step", () => {
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    await selectBackend({ force: "wasm" });
  });

  const prompt = (n: number, from: number) => Array.from({ length: n }, (_, i) => (from + 7 * i) % 257);

  // Prefills `tokens` into a fresh buffer of `kv`'s pool, one chunk; returns the last row's logits.
  const prefill = (dec: BatchDecoder, kv: SeqKv, tokens: number[]) => dec.step(tokens.map((token, pos) => ({ kv, token, pos, logits: pos === tokens.length - 1 })));

  for (const [name, extra] of [
    ["learned positions, layer norm, gelu", {}],
    ["rope, rms norm, swiglu, biases, tied", { positions: "rope", norm: "rms", activation: "swiglu", useBias: true, tieEmbeddings: true }],
    // An MLP width of 20 / 36 (not a multiple of 8 or 16): a row's activations fall on vector lanes
    // or on the scalar tail depending on its place in the batch, and the two must agree bit for bit.
    ["gelu, MLP width 20", { dFF: 20 }],
    ["rope, swiglu, MLP width 36", { positions: "rope", activation: "swiglu", dFF: 36 }],
    // Llama-shaped: grouped-query heads (4 query heads on 2 or 1 key/value heads) and a head width
    // other than dModel / nHeads; the cache holds the key/value heads only.
    ["Llama: GQA 4/2, headDim 10, rope, rms, swiglu, untied", { positions: "rope", norm: "rms", activation: "swiglu", nKvHeads: 2, headDim: 10 }],
    ["Llama: GQA 4/1, rope, rms, swiglu, tied", { positions: "rope", norm: "rms", activation: "swiglu", nKvHeads: 1, tieEmbeddings: true }],
  ] as [string, ModelConfigInput][]) {
    it(`a sequence's logits and cache are the same bits alone and in a busy batch (${name})`, () => {
      const model = TransformerLm.init(resolveModelConfig(ModelConfigSchema.parse({ ...SMALL, ...extra }), 257), new Rng(9));
      const dec = new BatchDecoder(model);
      expect(dec.projections).toBe("native");
      const pool = new KvPool(dec.layout, 1 << 22);
      try {
        const v = 257;
        const a = prompt(11, 3);
        // Alone: prefill, then three decode steps with only this sequence.
        const alone = pool.allocate(20);
        const aloneLogits = [prefill(dec, alone, a)];
        for (let t = 0; t < 3; t++) aloneLogits.push(dec.step([{ kv: alone, token: 40 + t, pos: alone.length, logits: true }]));
        // Busy: the same sequence beside 5 others (one prefilling a chunk in the same step), in a different row order each step.
        const busy = pool.allocate(20);
        const others = Array.from({ length: 5 }, (_, i) => pool.allocate(30 + i));
        others.forEach((kv, i) => prefill(dec, kv, prompt(3 + 2 * i, 50 + i)));
        const late = pool.allocate(40);
        const busyLogits = [prefill(dec, busy, a)];
        for (let t = 0; t < 3; t++) {
          const rows: DecodeRow[] = others.map((kv, i) => ({ kv, token: 100 + i + t, pos: kv.length, logits: true }));
          const mine: DecodeRow = { kv: busy, token: 40 + t, pos: busy.length, logits: true };
          rows.splice(t * 2, 0, mine);
          if (t === 1) rows.push(...prompt(9, 200).map((token, pos) => ({ kv: late, token, pos, logits: pos === 8 })));
          const out = dec.step(rows);
          const at = rows.filter((r) => r.logits).indexOf(mine);
          busyLogits.push(out.slice(at * v, (at + 1) * v));
        }
        aloneLogits.forEach((l, i) => expect(sameBits(busyLogits[i]!, l), `step ${i}`).toBe(true));
        expect(sameBits(busy.data, alone.data)).toBe(true);
        expect(busy.length).toBe(a.length + 3);
      } finally {
        dec.dispose();
        model.dispose();
      }
    });
  }

  it("the AVX2 and the baseline builds of the step give the same bits", () => {
    const addon = (load as { addon: NativeAddon }).addon;
    const model = TransformerLm.init(resolveModelConfig(ModelConfigSchema.parse({ ...SMALL, positions: "rope", activation: "swiglu" }), 257), new Rng(4));
    const dec = new BatchDecoder(model);
    const pool = new KvPool(dec.layout, 1 << 22);
    const run = () => {
      const kvs = [pool.allocate(24), pool.allocate(24)];
      const out = [prefill(dec, kvs[0]!, prompt(13, 1)), prefill(dec, kvs[1]!, prompt(6, 2))];
      out.push(dec.step(kvs.map((kv, i) => ({ kv, token: 9 + i, pos: kv.length, logits: true }))));
      const cache = kvs.map((kv) => kv.data.slice());
      kvs.forEach((kv) => pool.free(kv));
      return [...out, ...cache];
    };
    try {
      const auto = run();
      if (!addon.setIsa("scalar")) throw new Error("internal: the scalar ISA is always available");
      const base = run();
      auto.forEach((x, i) => expect(sameBits(base[i]!, x), `array ${i}`).toBe(true));
    } finally {
      addon.setIsa("auto");
      dec.dispose();
      model.dispose();
    }
  });

  // The SMALL model's decoder with one 4-position buffer; disposes both after `fn` (dispose is idempotent).
  const withSmallDecoder = (fn: (dec: BatchDecoder, kv: SeqKv) => void) => {
    const model = TransformerLm.init(resolveModelConfig(ModelConfigSchema.parse(SMALL), 257), new Rng(2));
    const dec = new BatchDecoder(model);
    try {
      fn(dec, new KvPool(dec.layout, 1 << 20).allocate(4));
    } finally {
      dec.dispose();
      model.dispose();
    }
  };

  it("refuses a token outside the vocabulary and a position outside the buffer, naming them", () => {
    withSmallDecoder((dec, kv) => {
      expect(() => dec.step([{ kv, token: 257, pos: 0, logits: true }])).toThrow(/token 257 outside the vocabulary/);
      expect(() => dec.step([{ kv, token: 1, pos: 4, logits: true }])).toThrow(/position 4 outside a KV buffer of 4/);
      expect(kv.length).toBe(0);
    });
  });

  it("dispose frees the native weights at once: a later step throws a clear error, a second dispose is harmless", () => {
    withSmallDecoder((dec, kv) => {
      expect(dec.projections).toBe("native");
      expect(dec.step([{ kv, token: 1, pos: 0, logits: true }]).length).toBe(257);
      dec.dispose();
      expect(() => dec.step([{ kv, token: 2, pos: 1, logits: true }])).toThrow(/model that was freed \(the decoder was disposed\)/);
      expect(() => dec.dispose()).not.toThrow();
    });
  });

  it("falls back to the packed JS path where the addon is off", () => {
    const before = process.env.LEVANTER_NATIVE;
    process.env.LEVANTER_NATIVE = "off";
    const model = TransformerLm.init(resolveModelConfig(ModelConfigSchema.parse(SMALL), 257), new Rng(2));
    try {
      const dec = new BatchDecoder(model);
      expect(dec.projections).toBe("packed");
      dec.dispose();
    } finally {
      if (before === undefined) delete process.env.LEVANTER_NATIVE;
      else process.env.LEVANTER_NATIVE = before;
      model.dispose();
    }
  });
});
