// Text generation from a checkpoint: one request to the serving engine (the same sampling path as
// `levanter serve`: temperature, top-k, a seeded PRNG per request).
import { LevanterError } from "./errors.ts";
import { InferenceEngine } from "./inference/engine.ts";

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
 * deterministically for a seed: one request to an {@link InferenceEngine} (cached decoding; the
 * sampling runs in float64 JS on the logits with a seeded PRNG, as the server's). A prompt longer
 * than the model's context keeps its last tokens; generation stops at the context's end.
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
  // The engine's model id is the checkpoint directory it resolved (a `step-N`).
  const engine = await InferenceEngine.load({ checkpoint: opts.checkpoint, ...(opts.tokenizerJson ? { tokenizerJson: opts.tokenizerJson } : {}), maxBatch: 1, maxQueue: 1 });
  const checkpoint = engine.modelId;
  try {
    if (maxTokens === 0) return { text: "", tokens: [], checkpoint };
    // Room for at least one new token: a longer prompt keeps its last tokens.
    const prompt = engine.tokenizer.encode(opts.prompt).slice(-(engine.maxContext - 1));
    const r = await engine.submit({ prompt, maxTokens, temperature, seed: opts.seed ?? 0, ...(opts.topK !== undefined ? { topK: opts.topK } : {}) });
    const choice = r.choices[0]!;
    return { text: choice.text, tokens: choice.tokens, checkpoint };
  } finally {
    engine.close();
  }
}
