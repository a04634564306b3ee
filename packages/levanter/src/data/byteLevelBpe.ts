// The `tokenizer.json` of a byte-level BPE (Hugging Face's format), written by the BPE trainer and
// by the byte tokenizer's export: one builder, so both files have the same fields in the same order.

/** A `ByteLevel` pre-tokenizer / decoder entry. */
export interface ByteLevelOptions {
  trimOffsets: boolean;
  useRegex: boolean;
}

/** A byte-level BPE's `tokenizer.json`: `vocab` (token → id), `merges`, one special EOS token. */
export function byteLevelBpeJson(opts: {
  vocab: Record<string, number>;
  merges: [string, string][];
  eos: { id: number; content: string };
  byteLevel: ByteLevelOptions;
}): Record<string, unknown> {
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: opts.byteLevel.trimOffsets, use_regex: opts.byteLevel.useRegex };
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [{ id: opts.eos.id, content: opts.eos.content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
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
      vocab: opts.vocab,
      merges: opts.merges,
    },
  };
}
