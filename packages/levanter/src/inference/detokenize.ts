// Incremental detokenization: the text of a growing list of generated ids without decoding the
// whole list again for every token (which costs O(n²) over a long output with a tokenizer.json
// tokenizer).
//
// The text is `committed` (the decoded ids [0, read)) plus a pending tail. A new token's text is
// found by decoding a short window, ids [prefix, end), and removing the text of ids [prefix, read):
// the window starts at least one token back, so what a decoder does at a boundary (a SentencePiece
// word's leading space, which is dropped only at the very start; byte-fallback pieces joining into
// one character) comes out as decoding the whole list would — tested on the real Llama-2
// tokenizer.json, byte tokens and random ids. A tail that ends in U+FFFD (a character whose UTF-8
// bytes are still arriving) stays pending until it completes. Should a window's text not extend
// the prefix's (a decoder that rewrites earlier text), the whole list is decoded again and the next
// windows start a few tokens further back. Committed text is never taken back: a decoder that
// would change it later (HF's clean_up_tokenization_spaces removing a space before "." that came
// with an earlier token) gives the text a stream of it delivers.
import type { Tokenizer } from "../data/tokenizer.ts";

// Tokens of context the windows keep after a decoder rewrote earlier text.
const REWRITE_CONTEXT = 4;

export class Detokenizer {
  private readonly ids: number[] = [];
  private committed = "";
  private pending = "";
  private prefix = 0;
  private read = 0;
  private readonly tokenizer: Tokenizer;

  constructor(tokenizer: Tokenizer) {
    this.tokenizer = tokenizer;
  }

  /** The text of the ids so far (committed text and the pending tail). */
  get text(): string {
    return this.committed + this.pending;
  }

  /** Length of the text that no later token can change. */
  get stableLength(): number {
    return this.committed.length;
  }

  /** Appends one id; returns the text of all ids so far. */
  push(id: number): string {
    this.ids.push(id);
    const before = this.tokenizer.decode(this.ids.slice(this.prefix, this.read));
    const window = this.tokenizer.decode(this.ids.slice(this.prefix));
    if (!window.startsWith(before)) {
      // The decoder rewrote text before `read`: start over from the whole list.
      this.committed = this.tokenizer.decode(this.ids);
      this.pending = "";
      this.read = this.ids.length;
      this.prefix = Math.max(0, this.read - REWRITE_CONTEXT);
      return this.committed;
    }
    this.pending = window.slice(before.length);
    if (!this.pending.endsWith("\uFFFD")) {
      this.committed += this.pending;
      this.pending = "";
      this.prefix = this.read;
      this.read = this.ids.length;
    }
    return this.text;
  }
}
