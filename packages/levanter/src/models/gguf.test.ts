// The GGUF writer: the file read back by an independent parser (@huggingface/gguf), the f16 and
// q8_0 encodings against a reference decode (numpy where it is installed, else the format's rule),
// the rotary permutation against Hugging Face's rotate-half layout, and the refusal of models
// GGUF's llama cannot hold.
import { gguf } from "@huggingface/gguf";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Rng } from "../rng.ts";
import { byteGgufTokenizer, decodeTensor, encodeTensor, fromHalf, GGUF_ALIGNMENT, ggufLlama, hfGgufTokenizer, permuteRotary, toHalf, writeGguf } from "./gguf.ts";
import { byteLevelAlphabet } from "../data/byteTokenizer.ts";
import { hfTensorShapes, paramsFromHf, type PlainArray } from "./hf.ts";
import { ModelConfigSchema, resolveModelConfig, type ModelConfigInput } from "./modelConfig.ts";

const dir = mkdtempSync(path.join(os.tmpdir(), "lev-gguf-unit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function randn(n: number, rng: Rng, scale = 1): Float32Array {
  return Float32Array.from({ length: n }, () => (rng.next() * 2 - 1) * scale);
}

const LLAMA: ModelConfigInput = {
  vocabSize: 300,
  seqLen: 64,
  dModel: 32,
  nLayers: 2,
  nHeads: 4,
  nKvHeads: 2,
  headDim: 8,
  dFF: 64,
  positions: "rope",
  norm: "rms",
  activation: "swiglu",
  useBias: false,
  tieEmbeddings: false,
  normEps: 1e-5,
  ropeTheta: 5000,
};

async function randomModel(input: ModelConfigInput, seed = 1) {
  const cfg = resolveModelConfig(ModelConfigSchema.parse(input));
  const rng = new Rng(seed);
  const shapes = hfTensorShapes("llama", cfg);
  const hf = new Map<string, PlainArray>(
    [...shapes].map(([n, s]) => [
      n,
      {
        shape: s,
        data: randn(
          s.reduce((a, b) => a * b, 1),
          rng,
        ),
      },
    ]),
  );
  const params = await paramsFromHf("llama", cfg, shapes, async (names) => new Map(names.map((n) => [n, hf.get(n)!])), "test");
  return { cfg, params, hf };
}

describe("GGUF file layout", () => {
  it("header, metadata and tensors read back with @huggingface/gguf: names, ne order, types, aligned offsets, data", async () => {
    const { cfg, params, hf } = await randomModel(LLAMA);
    for (const type of ["f32", "f16", "q8_0"] as const) {
      const file = path.join(dir, `m-${type}.gguf`);
      const { metadata, tensors } = ggufLlama(cfg, params, byteGgufTokenizer(), { type, name: "tiny" });
      await writeGguf(file, metadata, tensors);
      const bytes = readFileSync(file);
      expect(bytes.subarray(0, 4).toString("ascii")).toBe("GGUF");
      expect(bytes.length % GGUF_ALIGNMENT).toBe(0);
      const r = await gguf(file, { allowLocalFile: true });
      const m = r.metadata as Record<string, unknown>;
      expect(m.version).toBe(3);
      expect(m).toMatchObject({
        "general.architecture": "llama",
        "general.name": "tiny",
        "general.alignment": 32,
        "general.file_type": { f32: 0, f16: 1, q8_0: 7 }[type],
        "llama.context_length": 64,
        "llama.embedding_length": 32,
        "llama.block_count": 2,
        "llama.feed_forward_length": 64,
        "llama.attention.head_count": 4,
        "llama.attention.head_count_kv": 2,
        "llama.rope.dimension_count": 8,
        "llama.rope.freq_base": 5000,
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.eos_token_id": 256,
      });
      expect(m["llama.attention.layer_norm_rms_epsilon"] as number).toBeCloseTo(1e-5, 10);
      const tokens = m["tokenizer.ggml.tokens"] as string[];
      expect(tokens).toHaveLength(300);
      expect(tokens[0x41]).toBe("A");
      expect(tokens[0x20]).toBe("Ġ");
      expect(tokens[256]).toBe("<|endoftext|>");
      expect((m["tokenizer.ggml.token_type"] as number[]).slice(255, 258)).toEqual([1, 3, 5]);
      expect(m["tokenizer.ggml.merges"]).toEqual([]);

      const names = r.tensorInfos.map((t) => t.name);
      expect(names.slice(0, 10)).toEqual([
        "token_embd.weight",
        "blk.0.attn_norm.weight",
        "blk.0.attn_q.weight",
        "blk.0.attn_k.weight",
        "blk.0.attn_v.weight",
        "blk.0.attn_output.weight",
        "blk.0.ffn_norm.weight",
        "blk.0.ffn_gate.weight",
        "blk.0.ffn_up.weight",
        "blk.0.ffn_down.weight",
      ]);
      expect(names.slice(-2)).toEqual(["output_norm.weight", "output.weight"]);
      expect(names).toHaveLength(1 + 9 * 2 + 2);
      const info = (n: string) => r.tensorInfos.find((t) => t.name === n)!;
      // ne[0] is the innermost (input) width: HF's [out, in] appears as [in, out].
      expect(info("blk.1.attn_k.weight").shape.map(Number)).toEqual([32, 16]);
      expect(info("blk.1.ffn_down.weight").shape.map(Number)).toEqual([64, 32]);
      expect(info("output.weight").shape.map(Number)).toEqual([32, 300]);
      const ggml = { f32: 0, f16: 1, q8_0: 8 }[type];
      expect(Number(info("blk.0.ffn_up.weight").dtype)).toBe(ggml);
      expect(Number(info("blk.0.attn_norm.weight").dtype)).toBe(0); // norm scales stay f32
      expect(Number(r.tensorDataOffset) % GGUF_ALIGNMENT).toBe(0);
      for (const t of r.tensorInfos) expect(Number(t.offset) % GGUF_ALIGNMENT).toBe(0);

      // The data: v_proj as written (no permutation), q_proj with its rows permuted per head.
      const at = (n: string) => Number(r.tensorDataOffset) + Number(info(n).offset);
      const kind = type === "f32" ? "F32" : type === "f16" ? "F16" : "Q8_0";
      const v = hf.get("model.layers.0.self_attn.v_proj.weight")!.data;
      const vBack = decodeTensor(kind, bytes.subarray(at("blk.0.attn_v.weight")), v.length);
      const q = hf.get("model.layers.1.self_attn.q_proj.weight")!.data;
      const qBack = decodeTensor(kind, bytes.subarray(at("blk.1.attn_q.weight")), q.length);
      const tol = type === "f32" ? 0 : type === "f16" ? 1e-3 : 1 / 127;
      const worst = (a: Float32Array, b: Float32Array) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));
      expect(worst(vBack, v)).toBeLessThanOrEqual(tol);
      expect(worst(qBack, permuteRotary(q, 4, 8, 32))).toBeLessThanOrEqual(tol);
      expect(worst(qBack, q)).toBeGreaterThan(0.1);
    }
  });

  it("a tied head writes no output.weight; the vocabulary pads with unused tokens", async () => {
    const { cfg, params } = await randomModel({ ...LLAMA, tieEmbeddings: true });
    const { tensors, metadata } = ggufLlama(cfg, params, byteGgufTokenizer(), { type: "f32", name: "tied" });
    expect(tensors.map((t) => t.name)).not.toContain("output.weight");
    expect(tensors.at(-1)!.name).toBe("output_norm.weight");
    const types = metadata.find(([k]) => k === "tokenizer.ggml.token_type")![1].value as number[];
    expect(types).toHaveLength(300);
    expect(types.slice(257).every((t) => t === 5)).toBe(true);
  });
});

const numpy = spawnSync("/usr/bin/python3", ["-c", "import numpy"], { stdio: "ignore" }).status === 0;

/** numpy's reading of our bytes: f16 as numpy float16, q8_0 as blocks of (f16 scale, 32 × int8). */
function numpyDecode(kind: "F16" | "Q8_0", bytes: Buffer): number[] {
  const code =
    kind === "F16"
      ? "import sys,numpy as np,json;b=sys.stdin.buffer.read();print(json.dumps(np.frombuffer(b,dtype='<f2').astype(np.float64).tolist()))"
      : "import sys,numpy as np,json;b=sys.stdin.buffer.read();a=np.frombuffer(b,dtype=np.dtype([('d','<f2'),('q','i1',(32,))]));print(json.dumps((a['d'].astype(np.float64)[:,None]*a['q']).reshape(-1).tolist()))";
  const r = spawnSync("/usr/bin/python3", ["-c", code], { input: bytes, encoding: "utf8" });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout.replace(/Infinity/g, "1e999")) as number[];
}

describe("encodings", () => {
  const rng = new Rng(7);
  const values = Float32Array.from([...randn(96, rng, 3), 0, -0, 1, -2, 65504, 1e5, 6e-8, 3e-5, 0.1, 1 / 3, -7.5, 1e-9, ...randn(20, rng, 1e-4)]);

  it("f16: IEEE half, round to nearest; matches numpy's float16", () => {
    const enc = encodeTensor("F16", values);
    expect(enc.length).toBe(2 * values.length);
    expect(toHalf(1)).toBe(0x3c00);
    expect(toHalf(-2)).toBe(0xc000);
    expect(toHalf(65504)).toBe(0x7bff);
    expect(toHalf(1e5)).toBe(0x7c00);
    expect(toHalf(2 ** -24)).toBe(0x0001);
    expect(fromHalf(0x3555)).toBeCloseTo(1 / 3, 3);
    const dec = decodeTensor("F16", enc, values.length);
    for (let i = 0; i < values.length; i++) {
      const x = values[i]!;
      if (Math.abs(x) <= 65504) expect(Math.abs(dec[i]! - x)).toBeLessThanOrEqual(Math.max(Math.abs(x) * 2 ** -11, 2 ** -25));
    }
    if (numpy) {
      const ref = numpyDecode("F16", enc);
      expect(ref).toEqual(Array.from(dec));
      // numpy rounds float32 → float16 the same way.
      const r = spawnSync(
        "/usr/bin/python3",
        ["-c", "import sys,numpy as np;sys.stdout.buffer.write(np.frombuffer(sys.stdin.buffer.read(),dtype='<f4').astype('<f2').tobytes())"],
        { input: Buffer.from(values.buffer) },
      );
      expect(Buffer.from(r.stdout).equals(enc)).toBe(true);
    } else console.warn("gguf.test: numpy absent — f16 checked against the format's rule only");
  });

  it("q8_0: blocks of 32 int8 with an f16 scale amax/127; decode within half a step; matches numpy's reading", () => {
    const data = values.slice(0, 128);
    const enc = encodeTensor("Q8_0", data);
    expect(enc.length).toBe(4 * 34);
    for (let b = 0; b < 4; b++) {
      const block = data.subarray(32 * b, 32 * b + 32);
      const amax = Math.max(...block.map(Math.abs));
      const d = fromHalf(enc.readUInt16LE(34 * b));
      expect(Math.abs(d - amax / 127)).toBeLessThanOrEqual((amax / 127) * 2 ** -11);
      // The largest element quantizes to ±127.
      const qs = Array.from({ length: 32 }, (_, j) => enc.readInt8(34 * b + 2 + j));
      expect(Math.max(...qs.map(Math.abs))).toBe(127);
    }
    const dec = decodeTensor("Q8_0", enc, data.length);
    for (let i = 0; i < data.length; i++) {
      const d = fromHalf(enc.readUInt16LE(34 * Math.floor(i / 32)));
      // Half a step, plus the scale's own f16 rounding (at most 2^-11 relative) over 127 steps.
      expect(Math.abs(dec[i]! - data[i]!)).toBeLessThanOrEqual(d * (0.5 + 127 * 2 ** -11));
    }
    if (numpy) expect(numpyDecode("Q8_0", enc).map((x) => Math.fround(x))).toEqual(Array.from(dec));
    expect(() => encodeTensor("Q8_0", data.slice(0, 40))).toThrow(/not whole blocks of 32/);
  });
});

describe("the rotary permutation", () => {
  // Hugging Face's rotary positions: pairs (x_i, x_{i+d/2}) rotated by pos·θ^(-2i/d).
  function ropeHalf(x: Float64Array, d: number, pos: number, theta: number): Float64Array {
    const out = new Float64Array(d);
    for (let i = 0; i < d / 2; i++) {
      const a = pos * theta ** (-(2 * i) / d);
      out[i] = x[i]! * Math.cos(a) - x[i + d / 2]! * Math.sin(a);
      out[i + d / 2] = x[i + d / 2]! * Math.cos(a) + x[i]! * Math.sin(a);
    }
    return out;
  }
  // GGUF llama's (llama.cpp rope type "norm"): adjacent pairs (x_2i, x_2i+1).
  function ropeInterleaved(x: Float64Array, d: number, pos: number, theta: number): Float64Array {
    const out = new Float64Array(d);
    for (let i = 0; i < d / 2; i++) {
      const a = pos * theta ** (-(2 * i) / d);
      out[2 * i] = x[2 * i]! * Math.cos(a) - x[2 * i + 1]! * Math.sin(a);
      out[2 * i + 1] = x[2 * i + 1]! * Math.cos(a) + x[2 * i]! * Math.sin(a);
    }
    return out;
  }
  const matvec = (w: Float32Array, rows: number, cols: number, x: Float64Array) =>
    Float64Array.from({ length: rows }, (_, r) => x.reduce((s, xi, c) => s + w[r * cols + c]! * xi, 0));

  it("moves row j·d/2 + i of each head to 2i + j, and attention scores are unchanged", () => {
    const [heads, d, cols] = [2, 6, 5];
    const w = Float32Array.from({ length: heads * d * cols }, (_, i) => i);
    const p = permuteRotary(w, heads, d, cols);
    // Head 0 rows in HF order 0..5 = [x0 x1 x2 | y0 y1 y2] become [x0 y0 x1 y1 x2 y2].
    const rowOf = (m: Float32Array, r: number) => m[r * cols]! / cols;
    expect(Array.from({ length: heads * d }, (_, r) => rowOf(p, r))).toEqual([0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11]);

    const rng = new Rng(3);
    const wq = randn(heads * d * cols, rng);
    const wk = randn(heads * d * cols, rng);
    const [pq, pk] = [permuteRotary(wq, heads, d, cols), permuteRotary(wk, heads, d, cols)];
    const x1 = Float64Array.from(randn(cols, rng));
    const x2 = Float64Array.from(randn(cols, rng));
    const [m, n, theta] = [5, 2, 10_000];
    for (let h = 0; h < heads; h++) {
      const head = (v: Float64Array) => v.subarray(h * d, (h + 1) * d);
      const qHf = ropeHalf(head(matvec(wq, heads * d, cols, x1)), d, m, theta);
      const kHf = ropeHalf(head(matvec(wk, heads * d, cols, x2)), d, n, theta);
      const qG = ropeInterleaved(head(matvec(pq, heads * d, cols, x1)), d, m, theta);
      const kG = ropeInterleaved(head(matvec(pk, heads * d, cols, x2)), d, n, theta);
      // The rotated query is HF's rotated query in interleaved order…
      for (let i = 0; i < d / 2; i++) {
        expect(qG[2 * i]).toBeCloseTo(qHf[i]!, 9);
        expect(qG[2 * i + 1]).toBeCloseTo(qHf[i + d / 2]!, 9);
      }
      // …so every score q·k is the same.
      const dot = (a: Float64Array, b: Float64Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
      expect(dot(qG, kG)).toBeCloseTo(dot(qHf, kHf), 9);
    }
  });
});

describe("refusals", () => {
  it("models GGUF's llama cannot hold fail naming the field", async () => {
    const { params } = await randomModel(LLAMA);
    const cases: [Partial<ModelConfigInput>, RegExp][] = [
      [{ positions: "learned" }, /model\.positions: "learned" cannot be exported to GGUF/],
      [{ norm: "layer" }, /model\.norm: "layer" cannot be exported to GGUF/],
      [{ activation: "gelu" }, /model\.activation: "gelu" cannot be exported to GGUF/],
      [{ useBias: true }, /model\.useBias: true cannot be exported to GGUF/],
    ];
    for (const [patch, re] of cases) {
      const cfg = resolveModelConfig(ModelConfigSchema.parse({ ...LLAMA, ...patch }));
      expect(() => ggufLlama(cfg, params, byteGgufTokenizer(), { type: "f32", name: "x" })).toThrow(re);
    }
    const small = resolveModelConfig(ModelConfigSchema.parse({ ...LLAMA, vocabSize: 200 }));
    expect(() => ggufLlama(small, params, byteGgufTokenizer(), { type: "f32", name: "x" })).toThrow(/257 tokens, more than the model's vocabSize 200/);
  });
});

describe("an HF byte-level BPE tokenizer in the metadata", () => {
  // 256 byte-level tokens, two merges and their results, then a special <|endoftext|> and <s>.
  const alphabet = byteLevelAlphabet();
  const vocab: Record<string, number> = {};
  alphabet.forEach((ch, i) => (vocab[ch] = i));
  vocab["Ġt"] = 256;
  vocab["he"] = 257;
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: true };
  const special = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const tokenizerJson = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [special(258, "<|endoftext|>"), special(259, "<s>")],
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: null,
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [["Ġ", "t"], "h e"],
    },
  };

  it("tokens by id, control types for special tokens, merges as 'a b', BOS and EOS from tokenizer_config, chat template", async () => {
    const tok = hfGgufTokenizer("t", tokenizerJson, { eos_token: "<|endoftext|>", bos_token: { content: "<s>" }, add_bos_token: true, chat_template: "{{ x }}" }, "tokenizer.json");
    expect(tok.tokens).toHaveLength(260);
    expect(tok.tokens.slice(255)).toEqual([alphabet[255], "Ġt", "he", "<|endoftext|>", "<s>"]);
    expect(tok.types.slice(255)).toEqual([1, 1, 1, 3, 3]);
    expect(tok.merges).toEqual(["Ġ t", "h e"]);
    expect(tok).toMatchObject({ eosId: 258, bosId: 259, addBos: true, chatTemplate: "{{ x }}" });
    const { cfg, params } = await randomModel(LLAMA);
    const { metadata } = ggufLlama(cfg, params, tok, { type: "f32", name: "bpe" });
    const meta = new Map(metadata);
    expect(meta.get("tokenizer.ggml.merges")!.value).toEqual(["Ġ t", "h e"]);
    expect(meta.get("tokenizer.ggml.bos_token_id")!.value).toBe(259);
    expect(meta.get("tokenizer.ggml.add_bos_token")!.value).toBe(true);
    expect(meta.get("tokenizer.chat_template")!.value).toBe("{{ x }}");
  });

  it("a tokenizer that is not a byte-level BPE is refused naming the field", () => {
    expect(() => hfGgufTokenizer("t", { ...tokenizerJson, model: { type: "Unigram", vocab: [] } }, {}, "tokenizer.json")).toThrow(
      /tokenizer\.json: model\.type: "Unigram" cannot go to GGUF/,
    );
    expect(() => hfGgufTokenizer("t", { ...tokenizerJson, pre_tokenizer: { type: "Whitespace" }, decoder: null }, {}, "tokenizer.json")).toThrow(/pre_tokenizer: not byte-level/);
  });
});
