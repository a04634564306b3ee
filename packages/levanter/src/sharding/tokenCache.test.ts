// Token caches: write, ledger, read back, damaged shards refused.
import fc from "fast-check";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LevanterError } from "../errors.ts";
import { LEDGER_FILE, shardFileName } from "./tokenCacheLayout.ts";
import { TokenCacheReader, readTokenCacheLedger } from "./tokenCacheReader.ts";
import { TokenCacheShardWriter, finalizeTokenCache, writeTokenCacheShard } from "./tokenCacheWriter.ts";

const opts = { tokenizer: "byte", vocabSize: 257 };
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "levanter-cache-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Deterministic pseudo-random documents for shard `s`. */
function docsFor(s: number, count: number): number[][] {
  return Array.from({ length: count }, (_, d) => Array.from({ length: (s * 7 + d * 3) % 11 }, (_, t) => (s * 31 + d * 17 + t) % 257));
}

describe("token cache", () => {
  it("writes shards from concurrent writers and reads documents and token ranges back", async () => {
    const shards = [docsFor(0, 5), docsFor(1, 0), docsFor(2, 9), docsFor(3, 4)];
    // Out of order and concurrent, as separate tasks would.
    await Promise.all([3, 1, 0, 2].map((s) => writeTokenCacheShard(dir, s, shards[s], opts)));
    const ledger = await finalizeTokenCache(dir, { numShards: 4 });
    const allDocs = shards.flat();
    const flat = allDocs.flat();
    expect(ledger).toMatchObject({ tokenizer: "byte", vocabSize: 257, finished: true, totalTokens: flat.length, totalDocuments: allDocs.length });
    expect(ledger.shards.map((s) => s.numDocuments)).toEqual([5, 0, 9, 4]);

    const reader = await TokenCacheReader.open(dir);
    try {
      expect(reader.numTokens).toBe(flat.length);
      expect([...reader.documents()].map((d) => Array.from(d))).toEqual(allDocs);
      expect(Array.from(reader.document(7))).toEqual(allDocs[7]);
      fc.assert(
        fc.property(fc.nat({ max: flat.length }), fc.nat({ max: flat.length }), (a, b) => {
          const start = Math.min(a, b);
          const length = Math.max(a, b) - start;
          expect(Array.from(reader.read(start, length))).toEqual(flat.slice(start, start + length));
        }),
      );
      expect(() => reader.read(flat.length - 1, 2)).toThrow(LevanterError);
      expect(() => reader.document(allDocs.length)).toThrow(LevanterError);
    } finally {
      reader.close();
    }
    expect((await readdir(dir)).filter((n) => n.includes(".tmp-"))).toEqual([]);
  });

  it("streams a large shard through the writer with bounded buffering", async () => {
    const w = await TokenCacheShardWriter.open(dir, 0, { tokenizer: "big", vocabSize: 70_000 });
    const n = 600_000; // > the 1 MiB flush buffer
    const doc = Int32Array.from({ length: n }, (_, i) => (i * 7919) % 70_000);
    await w.writeDocument(doc);
    await w.writeDocument([69_999]);
    expect(await w.close()).toMatchObject({ numTokens: n + 1, numDocuments: 2 });
    await finalizeTokenCache(dir);
    const reader = await TokenCacheReader.open(dir);
    try {
      const back = reader.read(0, n);
      expect(back.length).toBe(n);
      expect(back.every((v, i) => v === doc[i])).toBe(true);
      expect(Array.from(reader.document(1))).toEqual([69_999]);
    } finally {
      reader.close();
    }
  });

  it("replaces a shard written twice whole, never mixing the two attempts", async () => {
    await writeTokenCacheShard(dir, 0, [[1, 2, 3], [4]], opts);
    const second = await TokenCacheShardWriter.open(dir, 0, opts);
    await second.writeDocument([9, 9]);
    // Before the second attempt commits, the first stays readable.
    await finalizeTokenCache(dir);
    let reader = await TokenCacheReader.open(dir);
    expect(Array.from(reader.read(0, 4))).toEqual([1, 2, 3, 4]);
    reader.close();
    await second.close();
    // The ledger now disagrees with the shard: the reader refuses instead of serving a mix.
    await expect(TokenCacheReader.open(dir)).rejects.toThrow(/rewritten after finalize/);
    await finalizeTokenCache(dir);
    reader = await TokenCacheReader.open(dir);
    expect([...reader.documents()].map((d) => Array.from(d))).toEqual([[9, 9]]);
    reader.close();
  });

  it("leaves nothing behind when a writer aborts or meets a bad id", async () => {
    await expect(writeTokenCacheShard(dir, 0, [[1], [300]], opts)).rejects.toThrow(/outside \[0, 257\)/);
    const w = await TokenCacheShardWriter.open(dir, 1, opts);
    await w.writeDocument([1]);
    await w.abort();
    expect(await readdir(dir)).toEqual([]);
  });

  it("refuses to finalize with missing or inconsistent shards", async () => {
    await writeTokenCacheShard(dir, 0, [[1]], opts);
    await writeTokenCacheShard(dir, 2, [[1]], opts);
    await expect(finalizeTokenCache(dir)).rejects.toThrow(/missing shard\(s\) 1/);
    await writeTokenCacheShard(dir, 1, [[1]], { tokenizer: "other", vocabSize: 257 });
    await expect(finalizeTokenCache(dir)).rejects.toThrow(/tokenizer other/);
    await writeTokenCacheShard(dir, 1, [[1]], opts);
    await expect(finalizeTokenCache(dir, { numShards: 4 })).rejects.toThrow(/missing shard\(s\) 3/);
    expect((await finalizeTokenCache(dir, { numShards: 3 })).totalTokens).toBe(3);
    await expect(finalizeTokenCache(dir, { tokenizer: "byte", vocabSize: 300 })).rejects.toThrow(/expected byte \(vocab 300\) like the options/);
  });

  it("finalizes an empty dataset only when told its tokenizer", async () => {
    await expect(finalizeTokenCache(dir)).rejects.toThrow(/no shards to finalize/);
    const ledger = await finalizeTokenCache(dir, { numShards: 0, ...opts });
    expect(ledger).toMatchObject({ shards: [], totalTokens: 0, totalDocuments: 0, finished: true, tokenizer: "byte" });
    const reader = await TokenCacheReader.open(dir);
    expect(reader.numTokens).toBe(0);
    expect([...reader.documents()]).toEqual([]);
    reader.close();
  });

  it("validates ledger.json with errors that name the field", async () => {
    await writeTokenCacheShard(dir, 0, [[1, 2]], opts);
    const ledger = await finalizeTokenCache(dir);
    const write = (v: unknown) => writeFile(path.join(dir, LEDGER_FILE), JSON.stringify(v));
    await write({ ...ledger, totalTokens: -3 });
    await expect(readTokenCacheLedger(dir)).rejects.toThrow(/totalTokens: /);
    await write({ ...ledger, shards: [{ ...ledger.shards[0], numTokens: "2" }] });
    await expect(TokenCacheReader.open(dir)).rejects.toThrow(/shards\.0\.numTokens/);
    await write({ ...ledger, totalTokens: 5 });
    await expect(TokenCacheReader.open(dir)).rejects.toThrow(/totalTokens: expected the sum of the shards \(2\), got 5/);
    await write({ ...ledger, finished: false });
    await expect(TokenCacheReader.open(dir)).rejects.toThrow(/finished is false/);
    (await TokenCacheReader.open(dir, { allowUnfinished: true })).close();
    await writeFile(path.join(dir, LEDGER_FILE), "{not json");
    await expect(TokenCacheReader.open(dir)).rejects.toThrow(/not valid JSON/);
    await rm(path.join(dir, LEDGER_FILE));
    await expect(TokenCacheReader.open(dir)).rejects.toThrow(/no ledger\.json/);
  });

  it("detects a truncated shard file", async () => {
    await writeTokenCacheShard(dir, 0, [[1, 2, 3]], opts);
    await finalizeTokenCache(dir);
    const file = path.join(dir, shardFileName(0));
    const bytes = await readFile(file);
    await writeFile(file, bytes.subarray(4));
    await expect(TokenCacheReader.open(dir)).rejects.toThrow(/truncated or corrupt/);
    await writeFile(file, bytes.subarray(0, bytes.length - 1));
    await expect(TokenCacheReader.open(dir)).rejects.toThrow(/bad magic/);
  });
});
