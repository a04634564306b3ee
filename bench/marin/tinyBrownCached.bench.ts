// The all-cached re-run of experiments/tiny-brown.ts: executor time (import the script, build and
// resolve the graph, check statuses, "run" nothing) once every step has succeeded. Goal: < 1 s.
// Side by side with the floor: reading every step's status file directly. Also a fresh `marin run`
// process on the cached prefix (cold: node + tsx startup, imports, nothing warm): the executor time
// the process prints in its summary, and the process's wall time.
//   pnpm bench marin/tinyBrownCached                     (first runs a shortened tiny-brown in a temp prefix)
//   pnpm bench marin/tinyBrownCached -- --prefix DIR     (measure an existing, finished prefix)
import { spawnSync } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadExperiment, resolveGraph, runCli, runGraph } from "@marin/marin";
import { readStatus } from "@marin/marin/status";

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.resolve(here, "../../experiments/tiny-brown.ts");
const cli = path.resolve(here, "../../packages/marin/src/cli/main.ts");
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
  // Fresh processes first, so that nothing of this process's warm state could help them.
  const freshWall: number[] = [];
  const freshExecutor: number[] = [];
  let freshLine = "";
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, ["--import", "tsx", cli, "run", script, "--prefix", prefix], {
      cwd: path.resolve(here, "../.."),
      env: { ...process.env, npm_lifecycle_event: "" },
      encoding: "utf8",
    });
    freshWall.push(performance.now() - t0);
    if (r.status !== 0) throw new Error(`the fresh marin run failed (${r.status}): ${r.stderr}`);
    freshLine = /^ok: .*$/m.exec(r.stdout)?.[0] ?? "";
    const m = /in ([\d.]+) ?(ms|s)$/.exec(freshLine);
    if (!m) throw new Error(`no summary line in the fresh run's output:\n${r.stdout}`);
    freshExecutor.push(Number(m[1]) * (m[2] === "s" ? 1000 : 1));
  }
  const runs: number[] = [];
  const floors: number[] = [];
  let ran = -1;
  let statusFiles = 0;
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now();
    const { steps } = await loadExperiment(script);
    const graph = resolveGraph(steps, prefix);
    const summary = await runGraph(graph);
    runs.push(performance.now() - t0);
    ran = summary.steps.filter((s) => s.outcome === "ran").length;
    const t1 = performance.now();
    await Promise.all(graph.steps.map((s) => readStatus(s.outputPath)));
    statusFiles = graph.steps.length;
    floors.push(performance.now() - t1);
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`all-cached re-run of tiny-brown (${given ? "given prefix" : "shortened"}; steps that ran: ${ran})`);
  console.log(`  executor (load script + resolve + plan + run), first  ${runs[0].toFixed(1)} ms`);
  console.log(`  executor, median of the next ${runs.length - 1}                   ${med(runs.slice(1)).toFixed(1)} ms`);
  console.log(`  floor: read the ${statusFiles} status files, median          ${med(floors).toFixed(2)} ms`);
  console.log(`fresh \`marin run\` process on the cached prefix, median of ${freshWall.length} ("${freshLine}")`);
  console.log(`  executor time it prints (plan + status checks + run)   ${med(freshExecutor).toFixed(0)} ms`);
  console.log(`  process wall time (node + tsx + imports + executor)    ${med(freshWall).toFixed(0)} ms`);
} finally {
  if (!given) await fs.rm(prefix, { recursive: true, force: true });
}
