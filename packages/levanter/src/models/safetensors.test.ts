// Safetensors and Hugging Face folders without a reference: hostile files are clear errors naming
// the file; refused configs name the field; a GPT-2-family model exports and imports back exactly;
// the byte tokenizer's export encodes to the bytes.
import { tf } from "../tf.ts";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { loadHfTokenizer } from "../data/hfTokenizer.ts";
import { Rng } from "../rng.ts";
import { AdamW } from "../optim/adamw.ts";
import { loadModelFromCheckpoint, saveTrainState } from "../checkpoint/trainState.ts";
import { exportHf, importHf, parseByteSize } from "../checkpoint/hfCheckpoint.ts";
import { ModelConfigSchema, resolveModelConfig, type ModelConfigInput } from "./modelConfig.ts";
import { readSafetensors, readSafetensorsHeader, writeSafetensors } from "./safetensors.ts";
import { defaultDecayMask, TransformerLm } from "./transformer.ts";

let dir: string;
beforeAll(async () => {
  process.env.LEVANTER_LOG = "warn";
  dir = mkdtempSync(path.join(os.tmpdir(), "lev-st-"));
  await selectBackend({ force: "wasm" });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A file with a hand-written header and `data` bytes after it.
function rawFile(name: string, header: unknown, dataBytes: number, lengthOverride?: bigint): string {
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(lengthOverride ?? BigInt(json.length));
  const file = path.join(dir, name);
  writeFileSync(file, Buffer.concat([len, json, Buffer.alloc(dataBytes, 7)]));
  return file;
}

describe("safetensors", () => {
  it("writes and reads F32 exactly and BF16 rounded to nearest even", async () => {
    const data = Float32Array.from([1, -2.5, 3.1415927, 1e-30, -0, 65504, 1.00390625, 1.01171875]);
    const file = path.join(dir, "ok.safetensors");
    await writeSafetensors(
      file,
      [
        { name: "a", shape: [2, 4], data },
        { name: "empty", shape: [0], data: new Float32Array(0) },
      ],
      "F32",
      { format: "pt" },
    );
    const h = await readSafetensorsHeader(file);
    expect((h.tensors.get("a")!.begin - 8) % 8).toBe(0); // header padded to 8 bytes
    expect(h.metadata).toEqual({ format: "pt" });
    const back = await readSafetensors(file);
    expect(Array.from(back.get("a")!.data)).toEqual(Array.from(data));
    expect(back.get("a")!.shape).toEqual([2, 4]);
    const bf = path.join(dir, "bf.safetensors");
    await writeSafetensors(bf, [{ name: "a", shape: [8], data }], "BF16");
    const b = (await readSafetensors(bf)).get("a")!;
    expect(b.dtype).toBe("BF16");
    // 1.00390625 = 1 + 2⁻⁸ is a tie between 1 and 1 + 2⁻⁷: even (1) wins; 1.01171875 = 1 + 3·2⁻⁸ rounds up to 1 + 2⁻⁶.
    expect(Array.from(b.data).slice(0, 2)).toEqual([1, -2.5]);
    expect(b.data[6]).toBe(1);
    expect(b.data[7]).toBe(1.015625);
    expect(Math.abs(b.data[2]! - 3.1415927)).toBeLessThan(0.02);
  });

  it("reads F16, subnormals and infinities included", async () => {
    const halves = [0x3c00, 0xc000, 0x0001, 0x7c00, 0x3555];
    const buf = Buffer.alloc(halves.length * 2);
    halves.forEach((h, i) => buf.writeUInt16LE(h, i * 2));
    const json = Buffer.from(JSON.stringify({ h: { dtype: "F16", shape: [5], data_offsets: [0, buf.length] } }));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    const file = path.join(dir, "f16.safetensors");
    writeFileSync(file, Buffer.concat([len, json, buf]));
    const t = (await readSafetensors(file)).get("h")!;
    expect(Array.from(t.data)).toEqual([1, -2, 2 ** -24, Infinity, Math.fround(0.333251953125)]);
  });

  const hostile: [string, () => string, RegExp][] = [
    [
      "a truncated file",
      () => {
        const f = path.join(dir, "trunc.safetensors");
        writeFileSync(f, readFileSync(path.join(dir, "ok.safetensors")).subarray(0, 60));
        return f;
      },
      /trunc\.safetensors: .*(extend past the end|truncated)/,
    ],
    [
      "a file shorter than the length prefix",
      () => {
        const f = path.join(dir, "tiny.safetensors");
        writeFileSync(f, Buffer.alloc(5));
        return f;
      },
      /tiny\.safetensors: .*shorter than the 8-byte header length/,
    ],
    [
      "offsets past the end",
      () => rawFile("past.safetensors", { a: { dtype: "F32", shape: [4], data_offsets: [0, 16] } }, 8),
      /past\.safetensors: tensor "a": data_offsets \[0, 16\] extend past the end/,
    ],
    [
      "overlapping ranges",
      () => rawFile("overlap.safetensors", { a: { dtype: "F32", shape: [4], data_offsets: [0, 16] }, b: { dtype: "F32", shape: [2], data_offsets: [8, 16] } }, 16),
      /overlap\.safetensors: tensors "a" and "b" overlap/,
    ],
    [
      "an unknown dtype",
      () => rawFile("dtype.safetensors", { a: { dtype: "F128", shape: [1], data_offsets: [0, 16] } }, 16),
      /dtype\.safetensors: tensor "a": unknown dtype "F128"/,
    ],
    ["a header larger than the file", () => rawFile("big.safetensors", {}, 0, 1n << 40n), /big\.safetensors: header length 1099511627776 is larger than the file/],
    [
      "a shape that does not match its bytes",
      () => rawFile("shape.safetensors", { a: { dtype: "F32", shape: [3], data_offsets: [0, 16] } }, 16),
      /shape\.safetensors: tensor "a": shape \[3\] of F32 needs 12 bytes, data_offsets give 16/,
    ],
    [
      "a header that is not JSON",
      () => {
        const f = path.join(dir, "json.safetensors");
        const len = Buffer.alloc(8);
        len.writeBigUInt64LE(4n);
        writeFileSync(f, Buffer.concat([len, Buffer.from("{no}")]));
        return f;
      },
      /json\.safetensors: header is not valid UTF-8 JSON/,
    ],
  ];
  for (const [what, make, message] of hostile) {
    it(`refuses ${what} with an error naming the file`, async () => {
      const file = make();
      await expect(readSafetensors(file)).rejects.toThrow(message);
    });
  }

  it("parses shard sizes", () => {
    expect(parseByteSize("2GB")).toBe(2e9);
    expect(parseByteSize("500MiB")).toBe(500 * 2 ** 20);
    expect(parseByteSize("1234")).toBe(1234);
    expect(() => parseByteSize("lots")).toThrow(/--max-shard-size/);
  });
});

// A Hugging Face folder holding `config` and the byte tokenizer, weights as given.
async function hfFolder(name: string, config: Record<string, unknown>, tensors: { name: string; shape: number[]; data: Float32Array }[]): Promise<string> {
  const d = path.join(dir, name);
  rmSync(d, { recursive: true, force: true });
  await exportByteTokenizer(d);
  writeFileSync(path.join(d, "config.json"), JSON.stringify(config));
  await writeSafetensors(path.join(d, "model.safetensors"), tensors, "F32");
  return d;
}

// The byte tokenizer's export, from a tiny exported model.
async function exportByteTokenizer(d: string): Promise<void> {
  const ck = await saveTiny("tok-src", { positions: "rope", norm: "rms", activation: "swiglu" });
  await exportHf(ck, d);
}

async function saveTiny(name: string, over: ModelConfigInput, seed = 1): Promise<string> {
  const cfg = resolveModelConfig(ModelConfigSchema.parse({ nLayers: 2, dModel: 16, nHeads: 2, seqLen: 16, dFF: 24, ...over }), 257);
  const model = TransformerLm.init(cfg, new Rng(seed));
  // Norm scales and biases start as ones and zeros: perturb them so that their mapping is checked.
  let s = 0;
  for (const [n, p] of model.params) if (/\/(bias|scale)$/.test(n)) p.assign(tf.tidy(() => p.add(tf.randomNormal(p.shape, 0, 0.3, "float32", ++s))));
  const optimizer = new AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 0, decayMask: defaultDecayMask });
  const ck = path.join(dir, name, "step-0");
  await saveTrainState(ck, false, { step: 0, model, optimizer, rng: new Rng(0), tokenizer: "byte", loader: { seed: 0, step: 0, batchSize: 1, seqLen: 16 } });
  model.dispose();
  optimizer.dispose();
  return ck;
}

function logits(model: TransformerLm, ids: number[]): Float32Array {
  return tf.tidy(() => model.logits(tf.tensor2d(ids, [1, ids.length], "int32")).dataSync() as Float32Array);
}

describe("Hugging Face folders", () => {
  const llama = {
    architectures: ["LlamaForCausalLM"],
    vocab_size: 257,
    hidden_size: 16,
    intermediate_size: 24,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    max_position_embeddings: 16,
    rms_norm_eps: 1e-5,
    tie_word_embeddings: true,
  };
  const tensorsOf = (over: Record<string, number[]> = {}, drop: string[] = []) => {
    const shapes: Record<string, number[]> = {
      "model.embed_tokens.weight": [257, 16],
      "model.layers.0.input_layernorm.weight": [16],
      "model.layers.0.self_attn.q_proj.weight": [16, 16],
      "model.layers.0.self_attn.k_proj.weight": [8, 16],
      "model.layers.0.self_attn.v_proj.weight": [8, 16],
      "model.layers.0.self_attn.o_proj.weight": [16, 16],
      "model.layers.0.post_attention_layernorm.weight": [16],
      "model.layers.0.mlp.gate_proj.weight": [24, 16],
      "model.layers.0.mlp.up_proj.weight": [24, 16],
      "model.layers.0.mlp.down_proj.weight": [16, 24],
      "model.norm.weight": [16],
      ...over,
    };
    return Object.entries(shapes)
      .filter(([n]) => !drop.includes(n))
      .map(([name, shape]) => ({ name, shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.01) }));
  };

  it("imports a Llama folder whose tensors are all there", async () => {
    const d = await hfFolder("llama-ok", llama, tensorsOf());
    const r = await importHf(d, path.join(dir, "llama-ok-ckpt"));
    expect(r.family).toBe("llama");
    expect(r.parameters).toBe(257 * 16 + 16 + 16 * 32 + 16 * 16 + 16 + 3 * 24 * 16 + 16);
  });

  const refusals: [string, Record<string, unknown>, RegExp][] = [
    ["rope_scaling", { rope_scaling: { type: "linear", factor: 2 } }, /config\.json: rope_scaling: .* is not supported/],
    ["attention biases", { attention_bias: true }, /attention_bias: true is not supported/],
    ["MLP biases", { mlp_bias: true }, /mlp_bias: true is not supported/],
    ["a sliding window", { sliding_window: 4096 }, /sliding_window: 4096 is not supported/],
    ["mixture of experts", { num_local_experts: 8 }, /num_local_experts: 8 is not supported/],
    ["another architecture", { architectures: ["MistralForCausalLM"] }, /architectures: \["MistralForCausalLM"\] is not supported/],
    ["another activation", { hidden_act: "gelu" }, /hidden_act: "gelu" is not supported/],
  ];
  for (const [what, over, message] of refusals) {
    it(`refuses ${what}, naming the field`, async () => {
      const d = await hfFolder(`refuse-${what.replace(/\W/g, "")}`, { ...llama, ...over }, tensorsOf());
      await expect(importHf(d, path.join(dir, "never"))).rejects.toThrow(message);
    });
  }

  it("names missing, extra and misshapen tensors", async () => {
    const d = await hfFolder("bad-tensors", llama, [
      ...tensorsOf({ "model.layers.0.self_attn.k_proj.weight": [16, 16] }, ["model.norm.weight"]),
      { name: "model.layers.0.self_attn.q_proj.bias", shape: [16], data: new Float32Array(16) },
    ]);
    const err = await importHf(d, path.join(dir, "never")).catch((e: Error) => e);
    expect(String(err)).toMatch(/missing tensors: model\.norm\.weight/);
    expect(String(err)).toMatch(/unexpected tensors: model\.layers\.0\.self_attn\.q_proj\.bias/);
    expect(String(err)).toMatch(/misshapen tensors: model\.layers\.0\.self_attn\.k_proj\.weight is \[16, 16\], expected \[8, 16\]/);
  });

  it("refuses a shard index that points outside its folder", async () => {
    const d = await hfFolder("escape", llama, tensorsOf());
    writeFileSync(path.join(d, "model.safetensors.index.json"), JSON.stringify({ weight_map: { "model.norm.weight": "../escape/model.safetensors" } }));
    await expect(importHf(d, path.join(dir, "never"))).rejects.toThrow(/not a file beside the index/);
  });

  it("exports the byte tokenizer as a byte-level BPE whose ids are the bytes", async () => {
    const d = path.join(dir, "bytetok");
    await exportByteTokenizer(d);
    const tok = await loadHfTokenizer(d);
    const text = "Héllo, wörld!\n\t 🙂";
    expect(tok.encode(text)).toEqual(Array.from(Buffer.from(text, "utf8")));
    expect(tok.decode(tok.encode(text))).toBe(text);
    expect(tok.eosId).toBe(256);
    const json = JSON.parse(readFileSync(path.join(d, "tokenizer.json"), "utf8")) as { model: { merges: unknown[] } };
    expect(json.model.merges).toEqual([]);
  });

  for (const [family, over] of [
    ["GPT-2 (learned positions, layer norm, gelu, biases, tied)", { useBias: true, tieEmbeddings: true }],
    ["Llama (GQA, headDim 6, untied), bf16-free float32", { positions: "rope", norm: "rms", activation: "swiglu", nKvHeads: 1, headDim: 6 }],
  ] as [string, ModelConfigInput][]) {
    it(`${family}: export → import gives bitwise-identical parameters and logits; sharded past --max-shard-size`, async () => {
      const ck = await saveTiny(`rt-${family.slice(0, 5)}`, over, 3);
      const out = path.join(dir, `rt-out-${family.slice(0, 5)}`);
      const r = await exportHf(ck, out, { maxShardBytes: 20_000 });
      expect(r.files).toContain("model.safetensors.index.json");
      expect(r.files.filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f)).length).toBeGreaterThan(1);
      const config = JSON.parse(readFileSync(path.join(out, "config.json"), "utf8")) as { architectures: string[] };
      expect(config.architectures).toEqual([family.startsWith("GPT") ? "GPT2LMHeadModel" : "LlamaForCausalLM"]);
      const back = await importHf(out, path.join(dir, `rt-back-${family.slice(0, 5)}`));
      const a = await loadModelFromCheckpoint(ck);
      const b = await loadModelFromCheckpoint(back.checkpoint);
      try {
        expect([...b.model.params.keys()].sort()).toEqual([...a.model.params.keys()].sort());
        for (const [n, p] of a.model.params)
          expect(Buffer.from((b.model.params.get(n)!.dataSync() as Float32Array).buffer)).toEqual(Buffer.from((p.dataSync() as Float32Array).buffer));
        const ids = [72, 101, 108, 108, 111, 32, 119];
        expect(logits(b.model, ids)).toEqual(logits(a.model, ids));
      } finally {
        a.model.dispose();
        b.model.dispose();
      }
    });
  }

  it("the tiny-brown shape (GPT-2 family without biases) exports with zero biases and comes back to the same logits", async () => {
    const ck = await saveTiny("brown", { activation: "gelu", norm: "layer", positions: "learned" }, 4);
    const out = path.join(dir, "brown-out");
    await exportHf(ck, out);
    const header = await readSafetensorsHeader(path.join(out, "model.safetensors"));
    expect(header.tensors.get("transformer.h.0.attn.c_attn.bias")!.shape).toEqual([48]);
    const back = await importHf(out, path.join(dir, "brown-back"));
    const a = await loadModelFromCheckpoint(ck);
    const b = await loadModelFromCheckpoint(back.checkpoint);
    try {
      expect(b.model.config.useBias).toBe(true);
      for (const [n, p] of b.model.params) {
        if (a.model.params.has(n)) expect(p.dataSync()).toEqual(a.model.params.get(n)!.dataSync());
        else expect(Array.from(p.dataSync()).every((x) => x === 0)).toBe(true);
      }
      const ids = [84, 104, 101, 32, 99, 97, 116];
      const la = logits(a.model, ids);
      const lb = logits(b.model, ids);
      expect(Math.max(...Array.from(la, (x, i) => Math.abs(x - lb[i]!)))).toBeLessThan(1e-5);
    } finally {
      a.model.dispose();
      b.model.dispose();
    }
  });

  it("refuses to export what neither family represents, naming the field", async () => {
    const ck = await saveTiny("mixed", { positions: "rope", norm: "layer", activation: "swiglu" });
    await expect(exportHf(ck, path.join(dir, "never-out"))).rejects.toThrow(/model\.norm: "layer" cannot be exported/);
  });
});
