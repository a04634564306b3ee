// Hugging Face Llama in and out against an independent PyTorch reference
// (internal/fixtures/hfLlamaReference.py, Debian's python3-torch): per-token log-probabilities after
// `import hf` and after `export hf` (of an import, a fine-tuned import and a model trained here),
// float32 and sharded bf16 files, byte-identical round trips. Skipped with a notice where torch is
// absent, except under CI=true.
import { tf } from "../tf.ts";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { loadHfTokenizer } from "../data/hfTokenizer.ts";
import { encodeDocument } from "../data/tokenizer.ts";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";
import { finalizeTokenCache, writeTokenCacheShard } from "../sharding/tokenCacheWriter.ts";
import { trainLm } from "../trainer/trainLm.ts";
import { loadModelFromCheckpoint } from "../checkpoint/trainState.ts";
import { byteLevelTokenizerFiles, exportHf, importHf } from "../checkpoint/hfCheckpoint.ts";
import { readSafetensorsHeader } from "./safetensors.ts";

const PYTHON = "/usr/bin/python3";
const REFERENCE = fileURLToPath(new URL("../internal/fixtures/hfLlamaReference.py", import.meta.url));
const torchOk = spawnSync(PYTHON, ["-c", "import torch"], { stdio: "ignore" }).status === 0;
if (!torchOk && process.env.CI === "true") throw new Error("hf.test: python3-torch is required under CI=true (apt-get install python3-torch)");
if (!torchOk) console.warn("hf.test: skipped — /usr/bin/python3 with torch (Debian python3-torch) is not installed");

/** Runs reference jobs in one Python process (importing torch is the slow part). */
function reference(jobs: [string, string, unknown][]): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const p = spawn(PYTHON, [REFERENCE, "batch", "-", JSON.stringify(jobs)], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d));
    p.stderr.on("data", (d: Buffer) => (err += d));
    p.on("close", (code) => (code === 0 ? resolve(JSON.parse(out) as unknown[]) : reject(new Error(`reference failed (${code}): ${err}`))));
  });
}

/** levanter's log p(ids[i+1] | ids[..i]) from a checkpoint. */
async function levanterLogprobs(checkpoint: string, ids: number[]): Promise<number[]> {
  const { model } = await loadModelFromCheckpoint(checkpoint);
  try {
    const losses = tf.tidy(() =>
      model.tokenLosses(tf.tensor2d(ids.slice(0, -1), [1, ids.length - 1], "int32"), tf.tensor2d(ids.slice(1), [1, ids.length - 1], "int32")).dataSync(),
    );
    return Array.from(losses, (l) => -l);
  } finally {
    model.dispose();
  }
}

function expectClose(got: number[], want: number[], tol = 1e-4): void {
  expect(got).toHaveLength(want.length);
  const worst = Math.max(...got.map((g, i) => Math.abs(g - want[i]!)));
  expect(worst).toBeLessThan(tol);
}

// A Llama with grouped-query attention (4 query heads, 2 key/value heads), an explicit head width
// (12 · 4 ≠ 32), an untied head and a vocabulary larger than its tokenizer's.
const LLAMA = {
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  vocab_size: 261,
  hidden_size: 32,
  intermediate_size: 40,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 12,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  rope_scaling: null,
  hidden_act: "silu",
  attention_bias: false,
  tie_word_embeddings: false,
};

describe.skipIf(!torchOk)("Hugging Face Llama against the PyTorch reference", () => {
  let dir: string;
  let f32: string;
  let bf16: string;
  let ref: { f32: number[]; bf16: number[] };
  const prompt = "The cat sat on the mat, and then it slept.";
  let ids: number[];

  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    await selectBackend({ force: "wasm" });
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-hf-"));
    f32 = path.join(dir, "llama-f32");
    bf16 = path.join(dir, "llama-bf16");
    ids = Array.from(Buffer.from(prompt, "utf8"));
    const [, , a, b] = await reference([
      ["write", f32, { config: LLAMA, seed: 1, dtype: "F32", shards: 1 }],
      ["write", bf16, { config: LLAMA, seed: 2, dtype: "BF16", shards: 3 }],
      ["logprobs", f32, ids],
      ["logprobs", bf16, ids],
    ]);
    ref = { f32: a as number[], bf16: b as number[] };
    // The byte tokenizer as HF files (a byte-level BPE whose ids are the bytes) for both folders.
    const { tokenizerJson, tokenizerConfig } = byteLevelTokenizerFiles(64);
    for (const d of [f32, bf16]) {
      writeFileSync(path.join(d, "tokenizer.json"), JSON.stringify(tokenizerJson));
      writeFileSync(path.join(d, "tokenizer_config.json"), JSON.stringify({ ...tokenizerConfig, chat_template: "{% for m in messages %}{{ m.content }}{% endfor %}" }));
    }
  }, 300_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("import hf (float32): per-token log-probabilities equal the reference's to 1e-4; the checkpoint carries the tokenizer", async () => {
    const r = await importHf(f32, path.join(dir, "ck-f32"));
    expect(r).toMatchObject({ family: "llama", dtypes: ["F32"], tokenizer: "llama-f32" });
    expect(existsSync(path.join(r.checkpoint, "tokenizer.json"))).toBe(true);
    expect(JSON.parse(readFileSync(path.join(r.checkpoint, "tokenizer_config.json"), "utf8")).chat_template).toContain("m.content");
    expectClose(await levanterLogprobs(path.join(dir, "ck-f32"), ids), ref.f32);
  }, 120_000);

  it("import hf (sharded bf16): equals the reference on the same bf16 values", async () => {
    const r = await importHf(bf16, path.join(dir, "ck-bf16"));
    expect(r.dtypes).toEqual(["BF16"]);
    expectClose(await levanterLogprobs(r.checkpoint, ids), ref.bf16);
  }, 120_000);

  it("float32 import → export gives byte-identical tensors", async () => {
    const out = path.join(dir, "export-f32");
    await exportHf(path.join(dir, "ck-f32"), out);
    for (const f of ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"]) expect(existsSync(path.join(out, f))).toBe(true);
    const a = await readSafetensorsHeader(path.join(f32, "model.safetensors"));
    const b = await readSafetensorsHeader(path.join(out, "model.safetensors"));
    expect([...b.tensors.keys()].sort()).toEqual([...a.tensors.keys()].sort());
    const ba = readFileSync(a.file);
    const bb = readFileSync(b.file);
    for (const [name, e] of a.tensors) {
      const o = b.tensors.get(name)!;
      expect(o.dtype).toBe("F32");
      expect(o.shape).toEqual(e.shape);
      expect(bb.subarray(o.begin, o.end).equals(ba.subarray(e.begin, e.end))).toBe(true);
    }
    const config = JSON.parse(readFileSync(path.join(out, "config.json"), "utf8")) as Record<string, unknown>;
    expect(config).toMatchObject({ num_key_value_heads: 2, head_dim: 12, tie_word_embeddings: false, eos_token_id: 256 });
  }, 120_000);

  it("fine-tuning: import, train 20 steps from it (no model section, no tokenizerJson), loss falls, export; and a model trained here exports; the reference agrees with both", async () => {
    // A cache made with the imported folder's tokenizer.json (its name is the folder's).
    const tok = await loadHfTokenizer(f32);
    const cache = path.join(dir, "cache-hf");
    const docs = syntheticDocuments(120, 4);
    await writeTokenCacheShard(
      cache,
      0,
      docs.map((d) => encodeDocument(tok, d)),
      { tokenizer: tok.name, vocabSize: tok.vocabSize },
    );
    await finalizeTokenCache(cache);
    const base = {
      data: { trainCache: cache },
      optimizer: { learningRate: 3e-3, warmup: 2, weightDecay: 0 },
      trainer: { numTrainSteps: 20, batchSize: 4, runDir: path.join(dir, "ft"), trackers: ["jsonl"], backend: "wasm", initializeFrom: path.join(dir, "ck-f32") },
    };
    // Model fields written explicitly must agree with the checkpoint.
    await expect(trainLm({ ...base, model: { dModel: 64, seqLen: 64 }, trainer: { ...base.trainer, runDir: path.join(dir, "ft-bad") } } as never)).rejects.toThrow(
      /trainer\.initializeFrom: .*model\.dModel: 64 \(the checkpoint has 32\)/,
    );
    const losses: number[] = [];
    const result = await trainLm(base as never, { hooks: [{ every: 1, fn: (i) => void (i.final || losses.push(i.loss)) }] });
    expect(result.step).toBe(20);
    expect(losses).toHaveLength(20);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(losses.slice(-5))).toBeLessThan(mean(losses.slice(0, 5)) - 0.3);
    // The run's checkpoints carry the tokenizer, so export needs no --tokenizer.
    expect(existsSync(path.join(result.checkpoint!, "tokenizer.json"))).toBe(true);
    const ftOut = path.join(dir, "export-ft");
    await exportHf(path.join(dir, "ft", "checkpoints"), ftOut);

    // A Llama-shaped model trained here from scratch on byte tokens (GQA, tied head).
    const bytes = path.join(dir, "cache-byte");
    await writeByteCache(bytes, syntheticDocuments(60, 5));
    const scratch = await trainLm({
      model: { positions: "rope", norm: "rms", activation: "swiglu", nLayers: 2, dModel: 32, nHeads: 4, nKvHeads: 1, seqLen: 64, tieEmbeddings: true },
      data: { trainCache: bytes },
      optimizer: { learningRate: 3e-3, warmup: 2 },
      trainer: { numTrainSteps: 5, batchSize: 4, runDir: path.join(dir, "scratch"), trackers: ["jsonl"], backend: "wasm" },
    });
    const scOut = path.join(dir, "export-scratch");
    await exportHf(scratch.checkpoint!, scOut);
    expect(JSON.parse(readFileSync(path.join(scOut, "config.json"), "utf8"))).toMatchObject({ num_key_value_heads: 1, tie_word_embeddings: true });
    expect(existsSync(path.join(scOut, "lm_head.weight"))).toBe(false);

    const [ftRef, scRef] = (await reference([
      ["logprobs", ftOut, ids],
      ["logprobs", scOut, ids],
    ])) as [number[], number[]];
    expectClose(await levanterLogprobs(result.checkpoint!, ids), ftRef);
    expectClose(await levanterLogprobs(scratch.checkpoint!, ids), scRef);
    // Training moved the model away from the import.
    expect(Math.max(...ftRef.map((x, i) => Math.abs(x - ref.f32[i]!)))).toBeGreaterThan(1e-2);
  }, 600_000);
});
