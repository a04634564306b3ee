// The byte tokenizer: round trips and end-of-document handling.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BYTE_EOS_ID, byteTokenizer } from "./byteTokenizer.ts";
import { bitsPerByte, encodeDocument } from "./tokenizer.ts";

describe("byteTokenizer", () => {
  it("round-trips any string through its UTF-8 bytes", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (text) => {
        const ids = byteTokenizer.encode(text);
        expect(ids).toEqual(Array.from(Buffer.from(text, "utf8")));
        expect(byteTokenizer.decode(ids)).toBe(text);
        expect(byteTokenizer.countBytes(ids)).toBe(Buffer.byteLength(text, "utf8"));
      }),
    );
  });

  it("appends EOS per document, drops it when decoding, and counts it as zero bytes", () => {
    const ids = encodeDocument(byteTokenizer, "héllo");
    expect(ids.at(-1)).toBe(BYTE_EOS_ID);
    expect(ids.length).toBe(7);
    expect(byteTokenizer.decode(ids)).toBe("héllo");
    expect(byteTokenizer.countBytes(ids)).toBe(6);
    expect(byteTokenizer.vocabSize).toBe(257);
  });

  it("decodes a character cut in half to U+FFFD rather than throwing", () => {
    const ids = byteTokenizer.encode("é").slice(0, 1);
    expect(byteTokenizer.decode(ids)).toBe("\uFFFD");
  });

  it("computes bits per byte from nats", () => {
    expect(bitsPerByte(Math.LN2 * 8, 8)).toBeCloseTo(1, 12);
    expect(bitsPerByte(1, 0)).toBeNaN();
  });
});
