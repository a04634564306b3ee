// InferenceEngine: cached decode vs full recomputation, seeded sampling in a busy batch, cancellation, the KV budget, chunked prefill, prompt scoring.
import { tf } from "../tf.ts";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { byteTokenizer } from "../data/byteTokenizer.ts";
import { generate } from "../generate.ts";
import { ModelConfigSchema, resolveModelConfig, type ModelConfigInput } from "../models/modelConfig.ts";
import { TransformerLm, defaultDecayMask } from "../models/transformer.ts";
import { AdamW } from "../optim/adamw.ts";
import { Rng } from "../rng.ts";
import { loadModelFromCheckpoint, saveTrainState } from "../checkpoint/trainState.ts";
import { loadNativeAddon } from "../kernels/native/addon.ts";
import { InferenceEngine, logprobOf } from "./engine.ts";

const TINY: ModelConfigInput = { nLayers: 2, dModel: 32, nHeads: 4, seqLen: 64, initStd: 0.5 };

function tinyModel(extra: ModelConfigInput = {}, seed = 3): TransformerLm {
  return TransformerLm.init(resolveModelConfig(ModelConfigSchema.parse({ ...TINY, ...extra }), 257), new Rng(seed));
}

function fullLogits(model: TransformerLm, ids: number[]): Float32Array {
  return tf.tidy(() => model.logits(tf.tensor2d(ids, [1, ids.length], "int32")).dataSync() as Float32Array);
}

// Greedy decoding by a full forward per token (no cache), stopping at the end-of-document token or
// the context's end: the reference cached decoding must match (generate() is an engine request).
async function greedyByRecompute(checkpoint: string, prompt: string, maxTokens: number): Promise<number[]> {
  const { model } = await loadModelFromCheckpoint(checkpoint);
  try {
    const ids = byteTokenizer.encode(prompt);
    const out: number[] = [];
    const v = model.config.vocabSize;
    while (out.length < maxTokens && ids.length < model.config.seqLen) {
      const row = fullLogits(model, ids).subarray((ids.length - 1) * v, ids.length * v);
      let best = 0;
      for (let i = 1; i < v; i++) if (row[i]! > row[best]!) best = i;
      if (best === byteTokenizer.eosId) break;
      out.push(best);
      ids.push(best);
    }
    return out;
  } finally {
    model.dispose();
  }
}

describe("InferenceEngine", () => {
  let dir: string;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    await selectBackend({ force: "wasm" });
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-engine-"));
    const rng = new Rng(3);
    const model = TransformerLm.init(resolveModelConfig(ModelConfigSchema.parse(TINY), 257), rng);
    const optimizer = new AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 0, decayMask: defaultDecayMask });
    await saveTrainState(path.join(dir, "step-0"), false, { step: 0, model, optimizer, rng, tokenizer: "byte", loader: { seed: 0, step: 0, batchSize: 1, seqLen: 64 } });
    model.dispose();
    optimizer.dispose();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const positions of ["learned", "rope", "rope + GQA"] as const) {
    it(`cached prefill + decode logits match a full forward (${positions} positions)`, () => {
      const model = tinyModel(
        positions === "rope + GQA"
          ? { positions: "rope", norm: "rms", activation: "swiglu", nKvHeads: 2, headDim: 6 }
          : { positions, norm: positions === "rope" ? "rms" : "layer" },
      );
      try {
        const ids = byteTokenizer.encode("The cat sat on the mat");
        const pre = model.extend(ids.slice(0, 10));
        const full = fullLogits(model, ids);
        const v = 257;
        const preLogits = pre.logits.dataSync();
        for (let i = 0; i < 10 * v; i++) expect(preLogits[i]).toBeCloseTo(full[i]!, 4);
        pre.logits.dispose();
        // Two sequences decoded together, of different lengths: the second is the first 4 tokens.
        const short = model.extend(ids.slice(0, 4));
        short.logits.dispose();
        let caches = [pre.cache, short.cache];
        for (let step = 0; step < ids.length - 10; step++) {
          const out = model.decodeStep([ids[10 + step]!, ids[4 + step]!], caches);
          const got = out.logits.dataSync();
          for (let j = 0; j < v; j++) expect(got[j]).toBeCloseTo(full[(10 + step) * v + j]!, 4);
          for (let j = 0; j < v; j++) expect(got[v + j]).toBeCloseTo(full[(4 + step) * v + j]!, 4);
          out.logits.dispose();
          for (const c of caches) [...c.keys, ...c.values].forEach((t) => t.dispose());
          caches = out.caches;
        }
        for (const c of caches) [...c.keys, ...c.values].forEach((t) => t.dispose());
      } finally {
        model.dispose();
      }
    });
  }

  it("greedy cached decoding gives the tokens of generate() (full recomputation per token)", async () => {
    const engine = await InferenceEngine.load({ checkpoint: dir });
    try {
      for (const prompt of ["Hello", "The jury said that"]) {
        const want = await generate({ checkpoint: dir, prompt, maxTokens: 30, temperature: 0 });
        const got = await engine.submit({ prompt: byteTokenizer.encode(prompt), maxTokens: 30, temperature: 0 });
        expect(got.choices[0]!.tokens).toEqual(want.tokens);
        expect(got.choices[0]!.text).toBe(want.text);
        expect(got.choices[0]!.tokens).toEqual(await greedyByRecompute(dir, prompt, 30));
      }
    } finally {
      engine.close();
    }
  });

  it("a Llama-shaped model (GQA, rotary, SwiGLU, RMSNorm) decodes on the native step where the addon loads, batched as alone", async () => {
    const model = tinyModel({ positions: "rope", norm: "rms", activation: "swiglu", nKvHeads: 2, headDim: 10, tieEmbeddings: false }, 11);
    const engine = new InferenceEngine(model, byteTokenizer, "llama-tiny");
    try {
      expect(engine.decodePath).toBe(loadNativeAddon().ok ? "native" : "packed");
      const prompts = ["The jury", "A", "Once upon a time there", "xyz"];
      const alone = [];
      for (const p of prompts) alone.push((await engine.submit({ prompt: byteTokenizer.encode(p), maxTokens: 24, temperature: 0 })).choices[0]!.tokens);
      // Continuous batching: all four at once, one arriving while the others decode.
      const first = prompts.slice(0, 3).map((p) => engine.submit({ prompt: byteTokenizer.encode(p), maxTokens: 24, temperature: 0 }));
      const late = engine.submit({ prompt: byteTokenizer.encode(prompts[3]!), maxTokens: 24, temperature: 0 });
      const together = (await Promise.all([...first, late])).map((r) => r.choices[0]!.tokens);
      expect(together).toEqual(alone);
      expect(alone[0]!.length).toBe(24);
      // Greedy decoding agrees with the model's full forward (no cache) for the first prompt.
      const ids = byteTokenizer.encode(prompts[0]!);
      const seq = [...ids];
      for (let i = 0; i < 6; i++) {
        const l = fullLogits(model, seq);
        const row = l.subarray((seq.length - 1) * 257, seq.length * 257);
        seq.push(row.indexOf(Math.max(...row)));
      }
      expect(alone[0]!.slice(0, 6)).toEqual(seq.slice(ids.length));
    } finally {
      engine.close();
      model.dispose();
    }
  });

  it("a seeded request gives the same text alone and inside a busy batch; n samples differ", async () => {
    const engine = await InferenceEngine.load({ checkpoint: dir });
    try {
      const req = { prompt: byteTokenizer.encode("Once upon"), maxTokens: 40, temperature: 1, topK: 100, topP: 0.95, seed: 7 };
      const alone = await engine.submit(req);
      const others = ["a", "bbbbbbbbbbbbbbbb", "The quick brown fox", "x"].map((p, i) =>
        engine.submit({ prompt: byteTokenizer.encode(p), maxTokens: 20 + 5 * i, temperature: 1.2, seed: 100 + i, n: 2 }),
      );
      const busy = engine.submit(req);
      expect(engine.stats().queued).toBe(5);
      const [b] = await Promise.all([busy, ...others]);
      expect(b.choices[0]!.tokens).toEqual(alone.choices[0]!.tokens);
      expect(alone.choices[0]!.tokens.length).toBeGreaterThan(0);
      expect(engine.stats().decodeSteps).toBeGreaterThan(0);
      const n3 = await engine.submit({ ...req, n: 3 });
      expect(n3.choices.map((c) => c.index)).toEqual([0, 1, 2]);
      expect(n3.choices[0]!.tokens).toEqual(alone.choices[0]!.tokens);
      expect(new Set(n3.choices.map((c) => c.tokens.join())).size).toBeGreaterThan(1);
      expect(engine.stats()).toMatchObject({ active: 0, queued: 0, kvReservedBytes: 0 });
    } finally {
      engine.close();
    }
  });

  it("cancelling a running request frees its slot for the next one", async () => {
    const engine = await InferenceEngine.load({ checkpoint: dir, maxBatch: 1 });
    try {
      const ac = new AbortController();
      let deltas = 0;
      const first = engine.submit(
        { prompt: byteTokenizer.encode("abc"), maxTokens: 60, temperature: 1, seed: 1 },
        {
          signal: ac.signal,
          onDelta: () => {
            // Abort as soon as it runs: it holds the only slot.
            if (++deltas === 1) {
              expect(engine.stats()).toMatchObject({ active: 1, queued: 1 });
              ac.abort(new Error("client gone"));
            }
          },
        },
      );
      const second = engine.submit({ prompt: byteTokenizer.encode("xyz"), maxTokens: 5, temperature: 0 });
      await expect(first).rejects.toThrow("client gone");
      const r = await second;
      expect(r.choices[0]!.finishReason).toBeDefined();
      expect(engine.stats()).toMatchObject({ active: 0, queued: 0, kvReservedBytes: 0 });
      // A queued request cancelled before it runs never runs.
      engine.pause();
      const ac2 = new AbortController();
      const queued = engine.submit({ prompt: [1, 2], maxTokens: 5 }, { signal: ac2.signal });
      expect(engine.stats().queued).toBe(1);
      ac2.abort(new Error("never mind"));
      await expect(queued).rejects.toThrow("never mind");
      expect(engine.stats().queued).toBe(0);
      engine.resume();
    } finally {
      engine.close();
    }
  });

  it("admits only what the preallocated KV buffers' budget holds, and frees every buffer", async () => {
    // Per token: 2 (keys, values) × 2 layers × 32 × 4 bytes = 512; each request below needs
    // min(prompt 3 + 20, 64) = 23 positions per sample, so 100 positions fit 4 single samples.
    const engine = await InferenceEngine.load({ checkpoint: dir, kvBudgetBytes: 100 * 512 });
    try {
      let maxActive = 0;
      let maxBytes = 0;
      const probe = () => {
        const s = engine.stats();
        maxActive = Math.max(maxActive, s.active);
        maxBytes = Math.max(maxBytes, s.kvReservedBytes);
        expect(s.kvReservedBytes).toBeLessThanOrEqual(s.kvBudgetBytes);
      };
      const reqs = Array.from({ length: 7 }, (_, i) => engine.submit({ prompt: byteTokenizer.encode(`r${i}!`), maxTokens: 20, temperature: 1, seed: i }, { onDelta: probe }));
      const done = await Promise.all(reqs);
      expect(done.every((r) => r.choices[0]!.finishReason !== undefined)).toBe(true);
      expect(maxActive).toBe(4);
      expect(maxBytes).toBeGreaterThan(0);
      expect(maxBytes).toBeLessThanOrEqual(4 * 23 * 512);
      expect(engine.stats()).toMatchObject({ active: 0, queued: 0, kvReservedBytes: 0 });
      // Two samples of 23 positions each never fit a budget of 40: refused up front, naming the field.
      const small = await InferenceEngine.load({ checkpoint: dir, kvBudgetBytes: 40 * 512 });
      try {
        await expect(small.submit({ prompt: [1, 2, 3], maxTokens: 20, n: 2 })).rejects.toMatchObject({ name: "EngineRequestError", param: "max_tokens" });
      } finally {
        small.close();
      }
    } finally {
      engine.close();
    }
  });

  it("a prompt prefilled in small chunks beside running decoders gives the same tokens and scores", async () => {
    const whole = await InferenceEngine.load({ checkpoint: dir });
    const chunked = await InferenceEngine.load({ checkpoint: dir, prefillChunk: 3 });
    try {
      const prompt = byteTokenizer.encode("A longer prompt, prefilled three tokens a step.");
      const req = { prompt, maxTokens: 12, temperature: 0.8, seed: 11, echo: true, logprobs: 1 };
      const a = await whole.submit(req);
      // In the chunked engine, a decoder is already running when the long prompt joins.
      const running = chunked.submit({ prompt: byteTokenizer.encode("x"), maxTokens: 40, temperature: 1, seed: 3 });
      const b = await chunked.submit(req);
      await running;
      expect(b.choices[0]!.tokens).toEqual(a.choices[0]!.tokens);
      const la = a.promptLogprobs!.token_logprobs;
      const lb = b.promptLogprobs!.token_logprobs;
      expect(lb.length).toBe(prompt.length);
      expect(lb[0]).toBeNull();
      // Equal to float32 rounding (the chunks' softmax rows are the same; their products too).
      for (let i = 1; i < prompt.length; i++) expect(lb[i]).toBeCloseTo(la[i]!, 4);
      // 47 prompt tokens at 3 a step, then 11 decode steps (the first token comes from the prefill).
      expect(prompt.length).toBe(47);
      expect(a.choices[0]!.tokens.length).toBe(12);
      expect(whole.stats().decodeSteps).toBe(1 + 11);
      expect(chunked.stats().decodeSteps).toBeGreaterThanOrEqual(16 + 11);
    } finally {
      whole.close();
      chunked.close();
    }
  });

  it("scores a prompt with echo and max_tokens 0: token logprobs, first null", async () => {
    const engine = await InferenceEngine.load({ checkpoint: dir });
    try {
      const ids = byteTokenizer.encode("Scoring text.");
      const r = await engine.submit({ prompt: ids, maxTokens: 0, echo: true, logprobs: 2 });
      expect(r.completionTokens).toBe(0);
      const lp = r.promptLogprobs!;
      expect(lp.tokens.join("")).toBe("Scoring text.");
      expect(lp.token_logprobs[0]).toBeNull();
      expect(lp.top_logprobs[0]).toBeNull();
      const full = fullLogits(engine.model, ids);
      for (let i = 1; i < ids.length; i++) {
        expect(lp.token_logprobs[i]).toBeCloseTo(logprobOf(full.subarray((i - 1) * 257, i * 257), ids[i]!), 4);
        expect(Object.keys(lp.top_logprobs[i]!).length).toBe(2);
      }
    } finally {
      engine.close();
    }
  });

  it("scores a prompt one token longer than the context (a whole training window), and no longer", async () => {
    const engine = await InferenceEngine.load({ checkpoint: dir });
    try {
      const T = engine.maxContext;
      const ids = Array.from({ length: T + 1 }, (_, i) => byteTokenizer.encode("abcdefgh ")[i % 9]!);
      const r = await engine.submit({ prompt: ids, maxTokens: 0, echo: true, logprobs: 1 });
      const lp = r.promptLogprobs!.token_logprobs;
      expect(lp).toHaveLength(T + 1);
      // The model sees the first T tokens; their logits score tokens 1..T.
      const full = fullLogits(engine.model, ids.slice(0, T));
      for (const i of [1, Math.floor(T / 2), T]) expect(lp[i]).toBeCloseTo(logprobOf(full.subarray((i - 1) * 257, i * 257), ids[i]!), 4);
      await expect(engine.submit({ prompt: [...ids, ids[0]!], maxTokens: 0, echo: true, logprobs: 1 })).rejects.toThrow(
        /context is \d+; a prompt scored with echo and max_tokens 0 may have/,
      );
      await expect(engine.submit({ prompt: ids, maxTokens: 1 })).rejects.toThrow(/context is/);
    } finally {
      engine.close();
    }
  });

  it("stops before a stop string and at the context limit", async () => {
    const engine = await InferenceEngine.load({ checkpoint: dir });
    try {
      const base = await engine.submit({ prompt: byteTokenizer.encode("Hi"), maxTokens: 30, temperature: 0 });
      const text = base.choices[0]!.text;
      expect(text.length).toBeGreaterThan(4);
      const stop = text.slice(3, 5);
      let streamed = "";
      const cut = await engine.submit({ prompt: byteTokenizer.encode("Hi"), maxTokens: 30, temperature: 0, stop: [stop] }, { onDelta: (d) => (streamed += d.text) });
      expect(cut.choices[0]!.text).toBe(text.slice(0, text.indexOf(stop)));
      expect(cut.choices[0]!.finishReason).toBe("stop");
      expect(streamed).toBe(cut.choices[0]!.text);
      const long = await engine.submit({ prompt: Array.from({ length: 60 }, () => 97), maxTokens: 50, temperature: 1, seed: 2 });
      expect(long.choices[0]!.tokens.length).toBeLessThanOrEqual(4);
      await expect(engine.submit({ prompt: Array.from({ length: 65 }, () => 97), maxTokens: 1 })).rejects.toThrow(/context is 64/);
    } finally {
      engine.close();
    }
  });
});
