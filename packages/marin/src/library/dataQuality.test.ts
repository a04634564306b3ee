// The dedupFuzzy, decontaminate and qualityFilter steps on real files under a real prefix: their
// outputs, and the counts they return (the step's result, which `marin status` and the dashboard show).
import { mkdtemp, readFile, readdir, rm, writeFile, mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readStatus } from "../executor/stepFiles.ts";
import { runGraph } from "../executor/runner.ts";
import { resolveGraph } from "../step/graph.ts";
import { outputOf } from "../step/step.ts";
import { decontaminate } from "./decontaminate.ts";
import { dedupFuzzy } from "./dedupFuzzy.ts";
import { importCorpus } from "./importCorpus.ts";
import { qualityFilter } from "./qualityFilter.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "marin-quality-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function texts(out: string): Promise<string[]> {
  const all: string[] = [];
  for (const f of (await readdir(out)).filter((f) => f.endsWith(".jsonl.gz")).sort()) {
    for (const line of gunzipSync(await readFile(path.join(out, f)))
      .toString("utf8")
      .split("\n"))
      if (line) all.push((JSON.parse(line) as { text: string }).text);
  }
  return all;
}

function sentence(seed: number, n: number): string {
  const vocab = [
    "river",
    "stone",
    "light",
    "the",
    "of",
    "and",
    "market",
    "winter",
    "letter",
    "garden",
    "quietly",
    "with",
    "to",
    "engine",
    "harbor",
    "paper",
    "doctor",
    "silver",
    "morning",
    "table",
  ];
  let s = seed * 2654435761;
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    out.push(`${vocab[s % vocab.length]}${(s >>> 8) % 7}`);
  }
  return out.join(" ");
}

describe("data quality steps", () => {
  it("qualityFilter → dedupFuzzy → decontaminate: outputs and counts", async () => {
    const docs = path.join(dir, "docs");
    await mkdir(docs, { recursive: true });
    const base = Array.from({ length: 12 }, (_, i) => `${sentence(i + 1, 60)} the and of with`);
    const files: string[] = [...base];
    files.push(`${base[0]} extra`); // a near-duplicate of doc 0
    files.push(base[1].replace(/^\S+/, "changed")); // a near-duplicate of doc 1
    files.push("too short to keep");
    for (const [i, t] of files.entries()) await writeFile(path.join(docs, `d${String(i).padStart(2, "0")}.txt`), t);
    const evalText = base[5].split(" ").slice(10, 40).join(" ");
    const imported = importCorpus({ files: path.join(docs, "*.txt"), shards: 2 });
    const quality = qualityFilter({ input: outputOf(imported), rules: { wordCount: { min: 20 }, meanWordLength: false } });
    const fuzzy = dedupFuzzy({ input: outputOf(quality), threshold: 0.7 });
    const decon = decontaminate({ input: outputOf(fuzzy), evalSets: [{ name: "heldout", texts: [evalText] }], threshold: 0.1 });
    const prefix = path.join(dir, "prefix");
    const graph = resolveGraph([decon], prefix);
    const summary = await runGraph(graph);
    const result = (name: string): unknown => summary.steps.find((s) => s.name === name)?.result;
    expect(result("qualityFilter")).toMatchObject({ kept: 14, dropped: 1, perRule: { wordCount: 1 } });
    expect(result("dedupFuzzy")).toMatchObject({ kept: 12, removed: 2, components: 12, duplicateGroups: 2 });
    expect(result("decontaminate")).toEqual({ kept: 11, contaminated: 1, perSet: { heldout: 1 } });
    const out = await texts(graph.steps.find((s) => s.name === "decontaminate")!.outputPath);
    expect(out.sort()).toEqual(base.filter((_, i) => i !== 5).sort());
    // The counts are the step's recorded result too.
    const status = await readStatus(graph.steps.find((s) => s.name === "dedupFuzzy")!.outputPath);
    expect(status?.result).toMatchObject({ removed: 2, duplicateGroups: 2 });
  }, 60_000);
});
