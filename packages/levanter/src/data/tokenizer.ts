/**
 * What levanter needs of a tokenizer: the built-in {@link byteTokenizer} and BPE tokenizers from a
 * Hugging Face tokenizer.json ({@link loadHfTokenizer}) both implement it.
 */
export interface Tokenizer {
  /** Recorded in token-cache ledgers and checkpoints (`"byte"`, `"llama2"`, …). */
  readonly name: string;
  /** Ids are in `[0, vocabSize)`. */
  readonly vocabSize: number;
  /** The end-of-document id appended after each document in a token cache. */
  readonly eosId: number;
  /** Token ids of `text`, without special tokens (no BOS, no EOS). */
  encode(text: string): number[];
  /** The text of `ids`; special tokens (EOS, …) are dropped. */
  decode(ids: ArrayLike<number>): string;
  /**
   * UTF-8 bytes that `ids` stand for (special tokens count 0): the denominator of bits per byte,
   * `bpb = Σ loss (nats) / (ln 2 · countBytes(targets))`.
   */
  countBytes(ids: ArrayLike<number>): number;
}

/** The ids of one document as a token cache stores it: `encode(text)` then EOS. */
export function encodeDocument(tokenizer: Tokenizer, text: string): number[] {
  const ids = tokenizer.encode(text);
  ids.push(tokenizer.eosId);
  return ids;
}

/**
 * Bits per byte from a summed cross-entropy in nats and the UTF-8 byte count of the predicted
 * tokens: tokenizer-independent, so models with different vocabularies compare.
 */
export function bitsPerByte(totalLossNats: number, numBytes: number): number {
  return numBytes > 0 ? totalLossNats / (Math.LN2 * numBytes) : Number.NaN;
}
