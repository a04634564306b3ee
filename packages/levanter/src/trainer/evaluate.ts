import * as tf from "@tensorflow/tfjs";
import { bitsPerByte, type Tokenizer } from "../data/tokenizer.ts";
import type { TokenBatch } from "../data/tokenLoader.ts";
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
    const losses = tf.tidy(() =>
      model.tokenLosses(tf.tensor2d(b.inputs, [b.size, b.seqLen], "int32"), tf.tensor2d(b.targets, [b.size, b.seqLen], "int32")).dataSync(),
    );
    for (const l of losses) nats += l;
    tokens += losses.length;
    bytes += tokenizer.countBytes(b.targets);
  }
  return { loss: tokens ? nats / tokens : Number.NaN, bpb: bitsPerByte(nats, bytes), tokens };
}
