// cleanText, dedupExact and tokenize helpers: word/TAG stripping, paragraphs, filters, exact keys, the validation hold-out.
import { describe, expect, it } from "vitest";
import { stripWordTags } from "@marin/iris/toolkit";
import { cleanDocumentText, keepText } from "./cleanText.ts";
import { exactKey } from "./dedupExact.ts";
import { isValidationDoc } from "./tokenize.ts";

describe("cleanText helpers", () => {
  it("strips Brown word/TAG tokens and re-attaches punctuation", () => {
    const line = "\tThe/at 1-1/2/cd Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' ,/, it/pps didn't/dod* ./.";
    expect(stripWordTags(line)).toBe('The 1-1/2 Fulton County Grand Jury said "no evidence", it didn\'t.');
  });

  it("keeps paragraphs apart and collapses spaces", () => {
    const text = "\n\n\tThe/at cat/nn ./.\n\n\n\tA/at dog/nn ./.\n";
    expect(cleanDocumentText(text, { stripWordTags: true, normalize: "NFC" })).toBe("The cat.\n\nA dog.");
    expect(cleanDocumentText("Cafe\u0301   au  lait", { stripWordTags: false, normalize: "NFC" })).toBe("Café au lait");
  });

  it("filters by length and by the share of non-letters", () => {
    const cfg = { minChars: 5, maxChars: 20, maxNonLetterFraction: 0.3 };
    expect(keepText("hello world", cfg)).toBe(true);
    expect(keepText("hi", cfg)).toBe(false);
    expect(keepText("a".repeat(21), cfg)).toBe(false);
    expect(keepText("12345 678 ab", cfg)).toBe(false);
  });

  it("exact keys ignore whitespace runs and optionally case", () => {
    expect(exactKey("a  b\nc", true)).toBe(exactKey("a b c", true));
    expect(exactKey("A b", true)).not.toBe(exactKey("a b", true));
    expect(exactKey("A b", false)).toBe(exactKey("a b", false));
  });

  it("holds out about the requested fraction of documents, stably", () => {
    const ids = Array.from({ length: 4000 }, (_, i) => `doc${i}`);
    const held = ids.filter((id) => isValidationDoc(id, 0.1, 0));
    expect(held.length).toBeGreaterThan(300);
    expect(held.length).toBeLessThan(500);
    expect(ids.filter((id) => isValidationDoc(id, 0.1, 0))).toEqual(held);
    expect(ids.filter((id) => isValidationDoc(id, 0.1, 1))).not.toEqual(held);
  });
});
