// Evaluation: loss and bits per byte of a model or a checkpoint over validation batches.
import { tf } from "../tf.ts";
import { selectBackend } from "../backend.ts";
import { tokenizerNamed } from "../data/tokenizerLookup.ts";
import { bitsPerByte, type Tokenizer } from "../data/tokenizer.ts";
import { ValidationBatches, type TokenBatch } from "../data/tokenLoader.ts";
import { LevanterError } from "../errors.ts";
import { TokenCacheReader } from "../sharding/tokenCacheReader.ts";
import { checkpointTokenizerFile, loadModelFromCheckpoint } from "../checkpoint/trainState.ts";
import type { TransformerLm } from "../models/transformer.ts";

/** Loss (nats per token) and bits per byte of a model over evaluation batches. */
export interface EvalResult {
  loss: number;
  bpb: number;
  tokens: number;
}

/**
 * Evaluates `model` on `batches`: the mean next-token loss over every target token, and bits per
 * byte (summed loss / (ln 2 · UTF-8 bytes of the targets), per the tokenizer).
 */
export function evaluateLm(model: TransformerLm, batches: Iterable<TokenBatch>, tokenizer: Tokenizer, maxBatches = Infinity): EvalResult {
  let nats = 0;
  let tokens = 0;
  let bytes = 0;
  let seen = 0;
  for (const b of batches) {
    if (seen++ >= maxBatches) break;
    if (b.size === 0) continue;
    const losses = tf.tidy(() => model.tokenLosses(tf.tensor2d(b.inputs, [b.size, b.seqLen], "int32"), tf.tensor2d(b.targets, [b.size, b.seqLen], "int32")).dataSync());
    for (const l of losses) nats += l;
    tokens += losses.length;
    bytes += tokenizer.countBytes(b.targets);
  }
  return { loss: tokens ? nats / tokens : Number.NaN, bpb: bitsPerByte(nats, bytes), tokens };
}

/** Options of {@link evaluateCheckpoint}. */
export interface EvaluateCheckpointOptions {
  /** A `step-N` checkpoint directory, or a directory of them (the newest is used). */
  checkpoint: string;
  /** A token cache to evaluate on. */
  data: string;
  /** HF tokenizer.json, for caches not made by the byte tokenizer (default: the one recorded in the checkpoint or the cache). */
  tokenizerJson?: string;
  batchSize?: number;
  maxBatches?: number;
}

/** Loss (nats/token) and bits per byte of a checkpoint on a token cache, in order, one pass. */
export async function evaluateCheckpoint(opts: EvaluateCheckpointOptions): Promise<EvalResult & { checkpoint: string; step: number }> {
  await selectBackend();
  const cache = await TokenCacheReader.open(opts.data);
  const { model, state, path: ckptPath } = await loadModelFromCheckpoint(opts.checkpoint);
  try {
    const carried = await checkpointTokenizerFile(ckptPath);
    const tokenizer = await tokenizerNamed(state.tokenizer, opts.tokenizerJson ?? carried, [ckptPath, opts.data]);
    // `levanter tokenize --tokenizer FILE` names an HF tokenizer "hf": such a cache fits a
    // checkpoint that carries a tokenizer of the same vocabulary (an import, or a run from one).
    const fits = cache.ledger.tokenizer === state.tokenizer || (cache.ledger.tokenizer === "hf" && carried !== undefined && cache.ledger.vocabSize === tokenizer.vocabSize);
    if (!fits) {
      throw new LevanterError("DATA", `${opts.data}: made by tokenizer "${cache.ledger.tokenizer}", the checkpoint by "${state.tokenizer}"`);
    }
    const batches = new ValidationBatches(cache, { seqLen: model.config.seqLen, batchSize: opts.batchSize ?? 16 });
    return { ...evaluateLm(model, batches, tokenizer, opts.maxBatches), checkpoint: ckptPath, step: state.step };
  } finally {
    model.dispose();
    cache.close();
  }
}
