// decontaminate: planted 13-gram overlaps are found (drop and mark, counts per set), the Bloom
// filter's measured false-positive rate stays within its bound, and the filter is built once.
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromList, ZephyrError } from "../index.ts";
import { BloomFilter, buildNgramFilter, ngramHashPairs, sharedNgramFilter } from "./bloom.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-decon-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

function randomText(rnd: () => number, words: number): string {
  return Array.from({ length: words }, () => `t${Math.floor(rnd() * 20000).toString(36)}`).join(" ");
}

describe("decontaminate", () => {
  const rnd = lcg(42);
  const evalA = Array.from({ length: 20 }, () => randomText(rnd, 60));
  const evalB = Array.from({ length: 20 }, () => randomText(rnd, 60));
  const clean = Array.from({ length: 200 }, () => randomText(rnd, 80));
  // Each contaminated document embeds a 30-word passage (18 13-grams) of an eval text among 40 words of its own.
  const passage = (t: string): string => t.split(" ").slice(10, 40).join(" ");
  const fromA = Array.from({ length: 15 }, (_, i) => `${randomText(rnd, 20)} ${passage(evalA[i])} ${randomText(rnd, 20)}`);
  const fromB = Array.from({ length: 10 }, (_, i) => `${randomText(rnd, 20)} ${passage(evalB[i])} ${randomText(rnd, 20)}`);
  const docs = [...clean, ...fromA, ...fromB].map((text, id) => ({ id, text }));

  it("drops the documents with planted 13-gram overlaps and counts them per evaluation set", async () => {
    const bFile = path.join(dir, "b.jsonl");
    await writeFile(bFile, evalB.map((text) => JSON.stringify({ text })).join("\n") + "\n");
    const { records, stats } = await fromList(docs, { shards: 3 })
      .decontaminate({
        text: (d) => d.text,
        evalSets: [
          { name: "a", texts: evalA },
          { name: "b", path: bFile },
        ],
        threshold: 0.1,
        filterDir: path.join(dir, "filters"),
      })
      .collect({ backend: "inline", withStats: true });
    expect(records.map((d) => d.id).sort((x, y) => x - y)).toEqual(clean.map((_, i) => i));
    expect(stats.counters["decontaminate.a"]).toBe(15);
    expect(stats.counters["decontaminate.b"]).toBe(10);
    expect(stats.counters["decontaminate.dropped"]).toBe(25);
  });

  it("marks instead of dropping, with each set's overlap fraction", async () => {
    const out = await fromList(docs, { shards: 2 })
      .decontaminate({ text: (d) => d.text, evalSets: [{ name: "a", texts: evalA }], threshold: 0.1, mode: "mark", filterDir: path.join(dir, "filters") })
      .collect({ backend: "inline" });
    expect(out).toHaveLength(docs.length);
    const marked = out.filter((d) => d.contamination !== undefined);
    expect(marked.map((d) => d.id).sort((x, y) => x - y)).toEqual(fromA.map((_, i) => clean.length + i));
    // 18 of the 58 13-grams of a planted document come from the passage.
    for (const d of marked) expect(d.contamination!.sets.a).toBeCloseTo(18 / 58, 1);
  });

  it("its Bloom filter's false-positive rate stays within the configured bound", () => {
    const r = lcg(7);
    const p = 0.01;
    const texts = Array.from({ length: 500 }, () => randomText(r, 60));
    const f = buildNgramFilter(texts, 13, p);
    for (const t of texts) {
      const { h1, h2 } = ngramHashPairs(t, 13);
      for (let i = 0; i < h1.length; i++) expect(f.has(h1[i], h2[i])).toBe(true);
    }
    let fp = 0;
    let n = 0;
    for (let k = 0; k < 400; k++) {
      const { h1, h2 } = ngramHashPairs(randomText(r, 112), 13);
      for (let i = 0; i < h1.length; i++, n++) if (f.has(h1[i], h2[i])) fp++;
    }
    expect(n).toBe(40_000);
    // Expected 400 false positives at p = 1%; 3 standard deviations is ~60.
    expect(fp / n).toBeLessThan(p * 1.2);
    const back = BloomFilter.deserialize(f.serialize(), "mem");
    expect(back.words).toEqual(f.words);
  });

  it("builds a filter once: later callers read its content-addressed file", async () => {
    const fdir = path.join(dir, "shared");
    const first = sharedNgramFilter(evalA, 13, 1e-4, fdir);
    expect(first.built).toBe(true);
    expect(sharedNgramFilter(evalA, 13, 1e-4, fdir).built).toBe(false);
    expect((await readdir(fdir)).filter((f) => f.endsWith(".bloom"))).toEqual([path.basename(first.file)]);
  });

  it("bad options are INVALID_ARGUMENT naming the field", () => {
    const ds = fromList(docs);
    expect(() => ds.decontaminate({ text: (d) => d.text, evalSets: [] })).toThrow(/evalSets/);
    expect(() => ds.decontaminate({ text: (d) => d.text, evalSets: [{ name: "a" }] })).toThrow(/give texts or path/);
    expect(() => ds.decontaminate({ text: (d) => d.text, evalSets: [{ name: "a", texts: evalA }], falsePositiveRate: 2 })).toThrow(ZephyrError);
    expect(() => ds.decontaminate({ text: (d) => d.text, evalSets: [{ name: "a", path: path.join(dir, "missing.txt") }] })).toThrow(/cannot read/);
  });
});
