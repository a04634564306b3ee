// The byte-level tokenizer: UTF-8 bytes as ids 0–255 plus an end-of-document id.
import type { Tokenizer } from "./tokenizer.ts";

/** Id of the byte tokenizer's end-of-document token (ids 0…255 are the bytes themselves). */
export const BYTE_EOS_ID = 256;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

/**
 * The built-in byte-level tokenizer: one id per UTF-8 byte (0…255) plus EOS (256), vocabulary 257.
 * No files, no training; every token is one byte, so bits per byte is loss / ln 2.
 */
export const byteTokenizer: Tokenizer = Object.freeze({
  name: "byte",
  vocabSize: 257,
  eosId: BYTE_EOS_ID,
  encode(text: string): number[] {
    return Array.from(encoder.encode(text));
  },
  decode(ids: ArrayLike<number>): string {
    const bytes: number[] = [];
    for (let i = 0; i < ids.length; i++) if (ids[i] >= 0 && ids[i] < 256) bytes.push(ids[i]);
    // Invalid UTF-8 (a sampled model may cut a character in half) decodes to U+FFFD.
    return decoder.decode(Uint8Array.from(bytes));
  },
  countBytes(ids: ArrayLike<number>): number {
    let n = 0;
    for (let i = 0; i < ids.length; i++) if (ids[i] >= 0 && ids[i] < 256) n++;
    return n;
  },
});

/** GPT-2's printable stand-ins for the 256 bytes (the ByteLevel pre-tokenizer's alphabet). */
export function byteLevelAlphabet(): string[] {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(printable(b) ? b : 256 + extra++));
  return out;
}

/** The byte tokenizer's end-of-document token as exported. */
export const BYTE_EOS_TOKEN = "<|endoftext|>";
