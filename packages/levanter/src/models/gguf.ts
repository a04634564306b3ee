// `levanter export gguf`: a checkpoint → one GGUF v3 file (architecture `llama`) that llama.cpp
// loads as it is. A small strict writer: little-endian, general.alignment 32, tensors f32, f16
// (IEEE half) or q8_0 (blocks of 32 int8 with an f16 scale), the tokenizer in the metadata.
//
// GGUF's llama applies rotary positions to adjacent pairs (x0,x1),(x2,x3)…, Hugging Face's (and
// levanter's) to the two halves of each head (x_i, x_{i+d/2}); the query and key rows are permuted
// per head so that the interleaved rotation sees the same pairs.
import { open } from "node:fs/promises";
import { BYTE_EOS_TOKEN, byteLevelAlphabet, byteTokenizer } from "../data/byteTokenizer.ts";
import { HfTokenizer } from "../data/hfTokenizer.ts";
import { LevanterError } from "../errors.ts";
import { hfTensorsFromParams } from "./hf.ts";
import { attentionShape, type ResolvedModelConfig } from "./modelConfig.ts";

/** GGUF metadata value types. */
export const GgufValueType = { UINT8: 0, INT8: 1, UINT16: 2, INT16: 3, UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9, UINT64: 10, INT64: 11, FLOAT64: 12 } as const;
/** ggml tensor types written here. */
export const GgmlType = { F32: 0, F16: 1, Q8_0: 8 } as const;
/** general.file_type values (llama.cpp's LLAMA_FTYPE_*). */
export const FILE_TYPE = { f32: 0, f16: 1, q8_0: 7 } as const;
/** llama.cpp's token types. */
export const TokenType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

export type GgufFileType = keyof typeof FILE_TYPE;
export const GGUF_ALIGNMENT = 32;
export const Q8_0_BLOCK = 32;

/** A metadata value with its GGUF type. */
export type GgufValue =
  | { type: "string"; value: string }
  | { type: "u32" | "i32" | "f32" | "u64"; value: number }
  | { type: "bool"; value: boolean }
  | { type: "string[]"; value: string[] }
  | { type: "i32[]" | "f32[]"; value: number[] };

/** A tensor to write: `shape` row-major as in HF ([rows, cols]); GGUF stores it as ne = [cols, rows]. */
export interface GgufTensor {
  name: string;
  shape: number[];
  data: Float32Array;
  type: keyof typeof GgmlType;
}

export function fail(what: string): LevanterError {
  return new LevanterError("INVALID_CONFIG", what);
}

// ---- encodings ---------------------------------------------------------------------------------

const f32buf = new Float32Array(1);
const u32buf = new Uint32Array(f32buf.buffer);

/** float32 → IEEE binary16 bits (round to nearest even; overflow → ±inf; NaN kept). */
export function toHalf(x: number): number {
  f32buf[0] = x;
  const b = u32buf[0]!;
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
  return sign | h;
}

/** IEEE binary16 bits → number. */
export function fromHalf(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Bytes a tensor of `n` elements takes in `type`. */
export function ggmlBytes(type: keyof typeof GgmlType, n: number): number {
  return type === "F32" ? 4 * n : type === "F16" ? 2 * n : (n / Q8_0_BLOCK) * (2 + Q8_0_BLOCK);
}

/** Encodes float32 values as `type` (q8_0 needs a multiple of 32 values). */
export function encodeTensor(type: keyof typeof GgmlType, data: Float32Array): Buffer {
  const out = Buffer.alloc(ggmlBytes(type, data.length));
  if (type === "F32") {
    for (let i = 0; i < data.length; i++) out.writeFloatLE(data[i]!, 4 * i);
  } else if (type === "F16") {
    for (let i = 0; i < data.length; i++) out.writeUInt16LE(toHalf(data[i]!), 2 * i);
  } else {
    if (data.length % Q8_0_BLOCK !== 0) throw fail(`q8_0: ${data.length} values are not whole blocks of ${Q8_0_BLOCK}`);
    for (let b = 0; b < data.length / Q8_0_BLOCK; b++) {
      let amax = 0;
      for (let j = 0; j < Q8_0_BLOCK; j++) amax = Math.max(amax, Math.abs(data[b * Q8_0_BLOCK + j]!));
      const d = amax / 127;
      const id = d ? 1 / d : 0;
      const at = b * (2 + Q8_0_BLOCK);
      out.writeUInt16LE(toHalf(d), at);
      for (let j = 0; j < Q8_0_BLOCK; j++) out.writeInt8(Math.max(-127, Math.min(127, Math.round(data[b * Q8_0_BLOCK + j]! * id))), at + 2 + j);
    }
  }
  return out;
}

/** Decodes `type` bytes back to float32 (the reference decode: q8_0 value = scale · q). */
export function decodeTensor(type: keyof typeof GgmlType, bytes: Uint8Array, n: number): Float32Array {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(n);
  if (type === "F32") for (let i = 0; i < n; i++) out[i] = buf.readFloatLE(4 * i);
  else if (type === "F16") for (let i = 0; i < n; i++) out[i] = fromHalf(buf.readUInt16LE(2 * i));
  else {
    for (let b = 0; b < n / Q8_0_BLOCK; b++) {
      const at = b * (2 + Q8_0_BLOCK);
      const d = fromHalf(buf.readUInt16LE(at));
      for (let j = 0; j < Q8_0_BLOCK; j++) out[b * Q8_0_BLOCK + j] = d * buf.readInt8(at + 2 + j);
    }
  }
  return out;
}

// ---- the rotary permutation --------------------------------------------------------------------

/**
 * Rows of a [nHeads·headDim, cols] query or key matrix from Hugging Face's rotate-half layout to
 * GGUF's interleaved one: within each head, row `j·(d/2) + i` (half j, pair i) moves to `2i + j`.
 */
export function permuteRotary(rows: Float32Array, nHeads: number, headDim: number, cols: number): Float32Array {
  if (headDim % 2 !== 0) throw fail(`model.headDim: ${headDim} is odd, rotary pairs need an even head width`);
  if (rows.length !== nHeads * headDim * cols) throw fail(`rotary permutation: ${rows.length} values, expected ${nHeads}·${headDim}·${cols}`);
  const half = headDim / 2;
  const out = new Float32Array(rows.length);
  for (let h = 0; h < nHeads; h++) {
    for (let j = 0; j < 2; j++) {
      for (let i = 0; i < half; i++) {
        const from = (h * headDim + j * half + i) * cols;
        const to = (h * headDim + 2 * i + j) * cols;
        out.set(rows.subarray(from, from + cols), to);
      }
    }
  }
  return out;
}

// ---- the writer ----------------------------------------------------------------------------------

class ByteWriter {
  private chunks: Buffer[] = [];
  length = 0;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  i32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }
  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  f32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }
  str(s: string): void {
    const b = Buffer.from(s, "utf8");
    this.u64(b.length);
    this.push(b);
  }
  pad(align: number): void {
    const n = (align - (this.length % align)) % align;
    if (n) this.push(Buffer.alloc(n));
  }
  concat(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }
}

function writeValue(w: ByteWriter, key: string, v: GgufValue): void {
  const int = (n: number, lo: number, hi: number) => {
    if (!Number.isInteger(n) || n < lo || n > hi) throw fail(`gguf metadata ${key}: ${n} is out of range`);
    return n;
  };
  switch (v.type) {
    case "string":
      w.u32(GgufValueType.STRING);
      w.str(v.value);
      return;
    case "u32":
      w.u32(GgufValueType.UINT32);
      w.u32(int(v.value, 0, 2 ** 32 - 1));
      return;
    case "i32":
      w.u32(GgufValueType.INT32);
      w.i32(int(v.value, -(2 ** 31), 2 ** 31 - 1));
      return;
    case "u64":
      w.u32(GgufValueType.UINT64);
      w.u64(int(v.value, 0, Number.MAX_SAFE_INTEGER));
      return;
    case "f32":
      w.u32(GgufValueType.FLOAT32);
      w.f32(v.value);
      return;
    case "bool":
      w.u32(GgufValueType.BOOL);
      w.push(Buffer.from([v.value ? 1 : 0]));
      return;
    case "string[]":
      w.u32(GgufValueType.ARRAY);
      w.u32(GgufValueType.STRING);
      w.u64(v.value.length);
      for (const s of v.value) w.str(s);
      return;
    case "i32[]":
    case "f32[]":
      w.u32(GgufValueType.ARRAY);
      w.u32(v.type === "i32[]" ? GgufValueType.INT32 : GgufValueType.FLOAT32);
      w.u64(v.value.length);
      for (const n of v.value) {
        if (v.type === "i32[]") w.i32(int(n, -(2 ** 31), 2 ** 31 - 1));
        else w.f32(n);
      }
      return;
  }
}

/**
 * Writes a GGUF v3 file: header, metadata (general.alignment added), tensor infos, then the
 * tensors, each at an offset that is a multiple of 32. Names must be unique and at most 64 bytes.
 */
export async function writeGguf(file: string, metadata: [string, GgufValue][], tensors: GgufTensor[]): Promise<{ bytes: number }> {
  const kv: [string, GgufValue][] = [...metadata.filter(([k]) => k !== "general.alignment"), ["general.alignment", { type: "u32", value: GGUF_ALIGNMENT }]];
  const keys = new Set<string>();
  for (const [k] of kv) {
    if (keys.has(k)) throw fail(`gguf metadata: key ${k} given twice`);
    keys.add(k);
  }
  const names = new Set<string>();
  const head = new ByteWriter();
  head.push(Buffer.from("GGUF", "ascii"));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(kv.length);
  for (const [k, v] of kv) {
    head.str(k);
    writeValue(head, k, v);
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    if (names.has(t.name)) throw fail(`gguf: tensor ${t.name} given twice`);
    if (Buffer.byteLength(t.name) > 64) throw fail(`gguf: tensor name ${t.name} is longer than 64 bytes`);
    names.add(t.name);
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw fail(`gguf: tensor ${t.name} has ${t.data.length} values, its shape [${t.shape.join(", ")}] ${n}`);
    if (t.type === "Q8_0" && t.shape.at(-1)! % Q8_0_BLOCK !== 0) throw fail(`gguf: tensor ${t.name}: q8_0 rows of ${t.shape.at(-1)} are not whole blocks of ${Q8_0_BLOCK}`);
    head.str(t.name);
    head.u32(t.shape.length);
    for (const d of [...t.shape].reverse()) head.u64(d);
    head.u32(GgmlType[t.type]);
    head.u64(offset);
    offsets.push(offset);
    offset += ggmlBytes(t.type, n);
    offset += (GGUF_ALIGNMENT - (offset % GGUF_ALIGNMENT)) % GGUF_ALIGNMENT;
  }
  head.pad(GGUF_ALIGNMENT);
  const fh = await open(file, "w");
  try {
    let pos = 0;
    const headBytes = head.concat();
    await fh.write(headBytes, 0, headBytes.length, pos);
    pos += headBytes.length;
    const start = pos;
    for (const [i, t] of tensors.entries()) {
      const bytes = encodeTensor(t.type, t.data);
      await fh.write(bytes, 0, bytes.length, start + offsets[i]!);
      pos = start + offsets[i]! + bytes.length;
    }
    // Trailing padding so the file ends on the alignment, as llama.cpp's writer does.
    const end = start + offset;
    if (end > pos) await fh.write(Buffer.alloc(end - pos), 0, end - pos, pos);
    return { bytes: end };
  } finally {
    await fh.close();
  }
}

// ---- levanter → GGUF llama -----------------------------------------------------------------------

/** Refuses what GGUF's `llama` cannot hold, naming the field. */
export function checkGgufLlama(cfg: ResolvedModelConfig): void {
  const bad = (field: string, value: unknown, why: string) => new LevanterError("INVALID_CONFIG", `model.${field}: ${JSON.stringify(value)} cannot be exported to GGUF (${why})`);
  if (cfg.positions !== "rope") throw bad("positions", cfg.positions, "GGUF architecture llama has rotary positions (rope)");
  if (cfg.norm !== "rms") throw bad("norm", cfg.norm, "GGUF architecture llama's norm is rms");
  if (cfg.activation !== "swiglu") throw bad("activation", cfg.activation, "GGUF architecture llama's MLP is swiglu");
  if (cfg.useBias) throw bad("useBias", cfg.useBias, "GGUF architecture llama has no biases");
  const { headDim } = attentionShape(cfg);
  if (headDim % 2 !== 0) throw bad("headDim", headDim, "rotary pairs need an even head width");
}

/** The tokenizer as GGUF metadata (a gpt2-style byte-level BPE), padded to `vocabSize` entries. */
export interface GgufTokenizer {
  tokens: string[];
  types: number[];
  merges: string[];
  eosId: number;
  bosId: number;
  addBos: boolean;
  chatTemplate?: string;
}

/** The byte tokenizer: ids 0–255 the bytes as GPT-2's byte-level characters, no merges, 256 the EOS. */
export function byteGgufTokenizer(): GgufTokenizer {
  const tokens = [...byteLevelAlphabet(), BYTE_EOS_TOKEN];
  const types = tokens.map((_, i) => (i === byteTokenizer.eosId ? TokenType.CONTROL : TokenType.NORMAL));
  return { tokens, types, merges: [], eosId: byteTokenizer.eosId, bosId: byteTokenizer.eosId, addBos: false };
}

/** An HF tokenizer.json (byte-level BPE only) as GGUF metadata. */
export function hfGgufTokenizer(name: string, tokenizerJson: unknown, tokenizerConfig: Record<string, unknown>, file: string): GgufTokenizer {
  const j = tokenizerJson as { model?: { type?: unknown; vocab?: unknown; merges?: unknown }; added_tokens?: unknown; pre_tokenizer?: unknown; decoder?: unknown };
  const model = j?.model;
  if (model?.type !== "BPE")
    throw fail(`${file}: model.type: ${JSON.stringify(model?.type)} cannot go to GGUF (only byte-level BPE tokenizers export, as tokenizer.ggml.model "gpt2")`);
  if (!JSON.stringify(j.pre_tokenizer ?? null).includes('"ByteLevel"') && !JSON.stringify(j.decoder ?? null).includes('"ByteLevel"')) {
    throw fail(`${file}: pre_tokenizer: not byte-level, which GGUF's gpt2 tokenizer needs`);
  }
  const vocab = model.vocab as Record<string, number>;
  if (typeof vocab !== "object" || vocab === null) throw fail(`${file}: model.vocab: expected an object`);
  const byId = new Map<number, string>();
  for (const [t, id] of Object.entries(vocab)) byId.set(id, t);
  const special = new Set<number>();
  for (const a of Array.isArray(j.added_tokens) ? (j.added_tokens as { id: number; content: string; special?: boolean }[]) : []) {
    byId.set(a.id, a.content);
    if (a.special) special.add(a.id);
  }
  const size = Math.max(...byId.keys()) + 1;
  const tokens: string[] = [];
  const types: number[] = [];
  for (let i = 0; i < size; i++) {
    const t = byId.get(i);
    tokens.push(t ?? `[PAD${i}]`);
    types.push(t === undefined ? TokenType.UNUSED : special.has(i) ? TokenType.CONTROL : TokenType.NORMAL);
  }
  const merges = ((model.merges as unknown[]) ?? []).map((m) => (Array.isArray(m) ? m.join(" ") : String(m)));
  const tok = new HfTokenizer(name, { tokenizerJson, tokenizerConfig });
  const bos = tokenizerConfig.bos_token;
  const bosText = typeof bos === "string" ? bos : typeof bos === "object" && bos !== null ? (bos as { content?: unknown }).content : undefined;
  const bosId = typeof bosText === "string" ? tok.tokenToId(bosText) : undefined;
  const template = tokenizerConfig.chat_template;
  return {
    tokens,
    types,
    merges,
    eosId: tok.eosId,
    bosId: bosId ?? tok.eosId,
    addBos: tokenizerConfig.add_bos_token === true && bosId !== undefined,
    ...(typeof template === "string" ? { chatTemplate: template } : {}),
  };
}

/** GGUF metadata and tensors for a Llama-shaped levanter model. */
export function ggufLlama(
  cfg: ResolvedModelConfig,
  params: ReadonlyMap<string, { shape: number[]; data: Float32Array }>,
  tok: GgufTokenizer,
  opts: { type: GgufFileType; name: string },
): { metadata: [string, GgufValue][]; tensors: GgufTensor[] } {
  checkGgufLlama(cfg);
  const { nHeads, nKvHeads, headDim } = attentionShape(cfg);
  if (tok.tokens.length > cfg.vocabSize) throw fail(`tokenizer: ${tok.tokens.length} tokens, more than the model's vocabSize ${cfg.vocabSize}`);
  const tokens = [...tok.tokens];
  const types = [...tok.types];
  for (let i = tokens.length; i < cfg.vocabSize; i++) {
    tokens.push(`[PAD${i}]`);
    types.push(TokenType.UNUSED);
  }
  const u32 = (value: number): GgufValue => ({ type: "u32", value });
  const metadata: [string, GgufValue][] = [
    ["general.architecture", { type: "string", value: "llama" }],
    ["general.name", { type: "string", value: opts.name }],
    ["general.file_type", u32(FILE_TYPE[opts.type])],
    ["llama.vocab_size", u32(cfg.vocabSize)],
    ["llama.context_length", u32(cfg.seqLen)],
    ["llama.embedding_length", u32(cfg.dModel)],
    ["llama.block_count", u32(cfg.nLayers)],
    ["llama.feed_forward_length", u32(cfg.dFF)],
    ["llama.attention.head_count", u32(nHeads)],
    ["llama.attention.head_count_kv", u32(nKvHeads)],
    ["llama.attention.key_length", u32(headDim)],
    ["llama.attention.value_length", u32(headDim)],
    ["llama.rope.freq_base", { type: "f32", value: cfg.ropeTheta }],
    ["llama.rope.dimension_count", u32(headDim)],
    ["llama.attention.layer_norm_rms_epsilon", { type: "f32", value: cfg.normEps }],
    ["tokenizer.ggml.model", { type: "string", value: "gpt2" }],
    ["tokenizer.ggml.pre", { type: "string", value: "default" }],
    ["tokenizer.ggml.tokens", { type: "string[]", value: tokens }],
    ["tokenizer.ggml.token_type", { type: "i32[]", value: types }],
    ["tokenizer.ggml.merges", { type: "string[]", value: tok.merges }],
    ["tokenizer.ggml.bos_token_id", u32(tok.bosId)],
    ["tokenizer.ggml.eos_token_id", u32(tok.eosId)],
    ["tokenizer.ggml.add_bos_token", { type: "bool", value: tok.addBos }],
    ["tokenizer.ggml.add_eos_token", { type: "bool", value: false }],
    ...(tok.chatTemplate !== undefined ? [["tokenizer.chat_template", { type: "string", value: tok.chatTemplate }] as [string, GgufValue]] : []),
  ];
  const names: [RegExp, (m: RegExpExecArray) => string][] = [
    [/^model\.embed_tokens\.weight$/, () => "token_embd.weight"],
    [/^model\.layers\.(\d+)\.input_layernorm\.weight$/, (m) => `blk.${m[1]}.attn_norm.weight`],
    [/^model\.layers\.(\d+)\.self_attn\.q_proj\.weight$/, (m) => `blk.${m[1]}.attn_q.weight`],
    [/^model\.layers\.(\d+)\.self_attn\.k_proj\.weight$/, (m) => `blk.${m[1]}.attn_k.weight`],
    [/^model\.layers\.(\d+)\.self_attn\.v_proj\.weight$/, (m) => `blk.${m[1]}.attn_v.weight`],
    [/^model\.layers\.(\d+)\.self_attn\.o_proj\.weight$/, (m) => `blk.${m[1]}.attn_output.weight`],
    [/^model\.layers\.(\d+)\.post_attention_layernorm\.weight$/, (m) => `blk.${m[1]}.ffn_norm.weight`],
    [/^model\.layers\.(\d+)\.mlp\.gate_proj\.weight$/, (m) => `blk.${m[1]}.ffn_gate.weight`],
    [/^model\.layers\.(\d+)\.mlp\.up_proj\.weight$/, (m) => `blk.${m[1]}.ffn_up.weight`],
    [/^model\.layers\.(\d+)\.mlp\.down_proj\.weight$/, (m) => `blk.${m[1]}.ffn_down.weight`],
    [/^model\.norm\.weight$/, () => "output_norm.weight"],
    [/^lm_head\.weight$/, () => "output.weight"],
  ];
  const tensors: GgufTensor[] = [];
  for (const t of hfTensorsFromParams("llama", cfg, params)) {
    const hit = names.map(([re, f]) => [re.exec(t.name), f] as const).find(([m]) => m);
    if (!hit) throw fail(`gguf: no GGUF name for tensor ${t.name}`);
    const name = hit[1](hit[0]!);
    let data = t.data;
    if (name.endsWith(".attn_q.weight")) data = permuteRotary(data, nHeads, headDim, t.shape[1]!);
    if (name.endsWith(".attn_k.weight")) data = permuteRotary(data, nKvHeads, headDim, t.shape[1]!);
    // Vectors (norm scales) stay f32, as llama.cpp's converter keeps them; q8_0 rows that are not
    // whole blocks fall back to f16.
    const type: GgufTensor["type"] = t.shape.length < 2 || opts.type === "f32" ? "F32" : opts.type === "f16" ? "F16" : t.shape.at(-1)! % Q8_0_BLOCK === 0 ? "Q8_0" : "F16";
    tensors.push({ name, shape: t.shape, data, type });
  }
  return { metadata, tensors };
}
