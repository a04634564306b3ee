// The all-cached re-run of experiments/tiny-brown.ts: executor time (import the script, build and
// resolve the graph, check statuses, "run" nothing) once every step has succeeded. Goal: < 1 s.
// Side by side with the floor: reading the 7 status files directly.
//   pnpm bench marin/tinyBrownCached                     (first runs a shortened tiny-brown in a temp prefix)
//   pnpm bench marin/tinyBrownCached -- --prefix DIR     (measure an existing, finished prefix)
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadExperiment, readStatus, resolveGraph, runCli, runGraph } from "@marin/marin";

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.resolve(here, "../../experiments/tiny-brown.ts");
const i = process.argv.indexOf("--prefix");
const given = i > 0 ? path.resolve(process.argv[i + 1]) : undefined;
const prefix = given ?? (await fs.mkdtemp(path.join(os.tmpdir(), "marin-bench-tb-")));

try {
  if (!given) {
    Object.assign(process.env, { MARIN_TINY_BROWN_FILES: "8", MARIN_TINY_BROWN_STEPS: "4", MARIN_TINY_BROWN_DMODEL: "16" });
    console.log("preparing: a shortened tiny-brown run (8 files, 4 training steps)…");
    const code = await runCli(["run", script, "--prefix", prefix]);
    if (code !== 0) throw new Error("the preparatory run failed");
  }
  const runs: number[] = [];
  const floors: number[] = [];
  let ran = -1;
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now();
    const { steps } = await loadExperiment(script);
    const graph = resolveGraph(steps, prefix);
    const summary = await runGraph(graph);
    runs.push(performance.now() - t0);
    ran = summary.steps.filter((s) => s.outcome === "ran").length;
    const t1 = performance.now();
    await Promise.all(graph.steps.map((s) => readStatus(s.outputPath)));
    floors.push(performance.now() - t1);
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`all-cached re-run of tiny-brown (${given ? "given prefix" : "shortened"}; steps that ran: ${ran})`);
  console.log(`  executor (load script + resolve + plan + run), first  ${runs[0].toFixed(1)} ms`);
  console.log(`  executor, median of the next ${runs.length - 1}                   ${med(runs.slice(1)).toFixed(1)} ms`);
  console.log(`  floor: read the 7 status files, median                ${med(floors).toFixed(2)} ms`);
} finally {
  if (!given) await fs.rm(prefix, { recursive: true, force: true });
}
