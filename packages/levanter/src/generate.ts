// Text generation from a checkpoint: load, sample with temperature/top-k, decode.
import * as tf from "@tensorflow/tfjs";
import { selectBackend } from "./backend.ts";
import { LevanterError } from "./errors.ts";
import { Rng } from "./rng.ts";
import { tokenizerNamed } from "./data/tokenizerLookup.ts";
import { loadModelFromCheckpoint } from "./checkpoint/trainState.ts";

/** Options of {@link generate}. */
export interface GenerateOptions {
  /** A `step-N` checkpoint directory, or a directory of them (the newest is used). */
  checkpoint: string;
  prompt: string;
  /** Tokens to sample (default 64); stops early at the end-of-document token. */
  maxTokens?: number;
  /** 0 = greedy (argmax); default 1. */
  temperature?: number;
  /** Sample only among the `topK` likeliest tokens (default: all). */
  topK?: number;
  /** Same seed, same checkpoint, same prompt → same text. Default 0. */
  seed?: number;
  /** HF tokenizer.json, for checkpoints not trained on byte tokens. */
  tokenizerJson?: string;
}

/** What {@link generate} produced. */
export interface GenerateResult {
  /** The sampled continuation (without the prompt). */
  text: string;
  tokens: number[];
  checkpoint: string;
}

/**
 * Samples a continuation of `prompt` from a trained checkpoint with temperature and top-k,
 * deterministically for a seed (sampling runs in float64 JS on the logits, with a seeded PRNG).
 *
 * @example const { text } = await generate({ checkpoint: "runs/tiny/checkpoints", prompt: "The cat", seed: 1 });
 */
export async function generate(opts: GenerateOptions): Promise<GenerateResult> {
  const maxTokens = opts.maxTokens ?? 64;
  const temperature = opts.temperature ?? 1;
  if (!Number.isInteger(maxTokens) || maxTokens < 0) throw new LevanterError("INVALID_CONFIG", `maxTokens: expected a non-negative integer, got ${maxTokens}`);
  if (!(temperature >= 0)) throw new LevanterError("INVALID_CONFIG", `temperature: expected ≥ 0, got ${temperature}`);
  if (opts.topK !== undefined && (!Number.isInteger(opts.topK) || opts.topK < 1)) {
    throw new LevanterError("INVALID_CONFIG", `topK: expected a positive integer, got ${opts.topK}`);
  }
  await selectBackend();
  const { model, state, path } = await loadModelFromCheckpoint(opts.checkpoint);
  try {
    const tokenizer = await tokenizerNamed(state.tokenizer, opts.tokenizerJson, [path]);
    const rng = new Rng(opts.seed ?? 0);
    const context = tokenizer.encode(opts.prompt);
    if (context.length === 0) context.push(tokenizer.eosId);
    const out: number[] = [];
    const { seqLen, vocabSize } = model.config;
    for (let i = 0; i < maxTokens; i++) {
      const window = context.slice(-seqLen);
      const logits = tf.tidy(() => {
        const all = model.logits(tf.tensor2d(window, [1, window.length], "int32"));
        return all.slice([window.length - 1, 0], [1, vocabSize]).dataSync();
      });
      const next = sample(logits, temperature, opts.topK, rng);
      if (next === tokenizer.eosId) break;
      out.push(next);
      context.push(next);
    }
    return { text: tokenizer.decode(out), tokens: out, checkpoint: path };
  } finally {
    model.dispose();
  }
}

function sample(logits: ArrayLike<number>, temperature: number, topK: number | undefined, rng: Rng): number {
  const ids = Array.from({ length: logits.length }, (_, i) => i).sort((a, b) => logits[b]! - logits[a]! || a - b);
  if (temperature === 0) return ids[0]!;
  const kept = ids.slice(0, topK ?? ids.length);
  const max = logits[kept[0]!]!;
  const weights = kept.map((i) => Math.exp((logits[i]! - max) / temperature));
  let u = rng.next() * weights.reduce((s, w) => s + w, 0);
  for (let j = 0; j < kept.length; j++) if ((u -= weights[j]!) < 0) return kept[j]!;
  return kept[kept.length - 1]!;
}
