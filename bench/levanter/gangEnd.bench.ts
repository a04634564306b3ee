// The end of a data-parallel run: `levanter train --ranks 2` on the tiny model with no checkpoint
// before the last step (numTrainSteps=40, stepsPerEval=100000, microBatches=4, threads=1; rank 0
// evaluates and saves at the end while rank 1 has nothing left to do), repeated. Each run should
// take one gang attempt and leave 40 rows in metrics.jsonl; a rank leaving too early makes iris
// rerun the gang from step 0. Prints per run: state, attempts (from the final JSON line, or
// inferred from metrics.jsonl when the line has none), metric rows, seconds, and the gang error.
//
// Usage: pnpm bench levanter/gangEnd [-- --runs N --steps S]
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { byteTokenizer, encodeDocument } from "@marin/levanter";
import { finalizeTokenCache, writeTokenCacheShard } from "@marin/levanter/sharding";
import { integerFlag } from "@marin/iris/toolkit";

const here = path.dirname(fileURLToPath(import.meta.url));
const main = path.resolve(here, "../../packages/levanter/src/cli/main.ts");
const arg = (name: string, dflt: number): number => integerFlag(name, dflt, { min: 0 });
const runs = arg("runs", 10);
const steps = arg("steps", 40);

// Simple English-like documents (deterministic), as a finished byte-level token cache.
async function writeCache(out: string, n: number, seed: number): Promise<void> {
  const words = ["the cat", "a dog", "saw", "found", "the red ball", "a wooden box", "the river", "today", "again", "at night"];
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) % 2 ** 31);
  const docs = Array.from({ length: n }, () => Array.from({ length: 20 + (next() % 30) }, () => words[next() % words.length]).join(" ") + ".");
  await writeTokenCacheShard(
    out,
    0,
    docs.map((d) => encodeDocument(byteTokenizer, d)),
    { tokenizer: byteTokenizer.name, vocabSize: byteTokenizer.vocabSize },
  );
  await finalizeTokenCache(out);
}

const dir = mkdtempSync(path.join(os.tmpdir(), "lev-gang-end-"));
try {
  await writeCache(path.join(dir, "train"), 400, 1);
  await writeCache(path.join(dir, "validation"), 60, 2);
  const tiny = readFileSync(path.resolve(here, "../../packages/levanter/src/cli/tiny.yaml"), "utf8")
    .replace("runs/tiny/cache/train", path.join(dir, "train"))
    .replace("runs/tiny/cache/validation", path.join(dir, "validation"));
  writeFileSync(path.join(dir, "tiny.yaml"), tiny);
  let rerun = 0;
  let failed = 0;
  for (let i = 0; i < runs; i++) {
    const runDir = path.join(dir, `run-${i}`);
    const t0 = performance.now();
    const r = spawnSync(
      process.execPath,
      [
        "--import",
        "tsx",
        main,
        "train",
        "--config",
        path.join(dir, "tiny.yaml"),
        "--ranks",
        "2",
        `--trainer.runDir=${runDir}`,
        `--trainer.numTrainSteps=${steps}`,
        "--trainer.stepsPerEval=100000",
        "--trainer.microBatches=4",
        "--trainer.threads=1",
        "--trainer.backend=wasm",
      ],
      { encoding: "utf8", env: { ...process.env, LEVANTER_LOG: "warn" }, maxBuffer: 64 * 2 ** 20 },
    );
    const seconds = (performance.now() - t0) / 1000;
    const last = r.stdout.trim().split("\n").at(-1) ?? "";
    let out: { state?: string; attempts?: number; error?: string } = {};
    try {
      out = JSON.parse(last) as typeof out;
    } catch {
      out = { error: `no JSON line (exit ${r.status}): ${r.stderr.slice(-300)}` };
    }
    const metricsFile = path.join(runDir, "metrics.jsonl");
    const rows = existsSync(metricsFile) ? readFileSync(metricsFile, "utf8").trim().split("\n").filter(Boolean).length : 0;
    const attempts = out.attempts ?? Math.max(1, Math.ceil(rows / steps));
    const closed = /closed its connection/.test(r.stderr);
    if (attempts > 1 || closed) rerun++;
    if (out.state !== "SUCCEEDED") failed++;
    console.log(
      `run ${i + 1}/${runs}: ${out.state ?? "?"} · attempts ${attempts}${out.attempts === undefined ? " (inferred)" : ""} · ${rows} metric rows · ${seconds.toFixed(1)} s${closed ? " · a rank saw a peer close its connection" : ""}${out.error ? ` · ${out.error.slice(0, 200)}` : ""}`,
    );
  }
  console.log(`\n${runs} runs: ${rerun} hit a rerun (or a peer closing early), ${failed} did not succeed`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
