// Executor overheads: planning (identity + graph) and status checks for a generated 1,000-step
// DAG, and an all-cached re-run of it, side by side with a baseline (JSON.stringify + sha256 of
// every config, i.e. the hashing alone). Prints figures; no thresholds.
//   pnpm bench marin/executor [-- --steps 1000]
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { defineStep, outputOf, planRun, resolveGraph, runGraph } from "@marin/marin";
import type { Step } from "@marin/marin";
import { integerFlag } from "@marin/iris/toolkit";

const N = integerFlag("steps", 1000, { min: 1 });

/** A layered DAG: each step reads up to 3 random earlier steps (seeded), with a nested config. */
function buildDag(n: number): Step<any>[] {
  let seed = 42;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const steps: Step<any>[] = [];
  for (let i = 0; i < n; i++) {
    const deps = i === 0 ? [] : Array.from({ length: 1 + Math.floor(rand() * 3) }, () => steps[Math.floor(rand() * i)]);
    steps.push(
      defineStep({
        name: `bench/s${i}`,
        config: { i, inputs: [...new Set(deps)].map((d) => outputOf(d)), opt: { lr: 1e-3 * (i % 7), layers: [64, 64, i % 5] } },
        fn: async (ctx) => {
          await fs.writeFile(path.join(ctx.outputPath, "out"), String(i));
        },
      }),
    );
  }
  return steps;
}

async function time<T>(fn: () => Promise<T> | T): Promise<[T, number]> {
  const t0 = performance.now();
  const v = await fn();
  return [v, performance.now() - t0];
}

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), "marin-bench-"));
try {
  const steps = buildDag(N);
  const [, baseline] = await time(() =>
    steps.map((s) =>
      createHash("sha256")
        .update(JSON.stringify(s.config, (_k, v) => (v && v.step ? v.step.name : v)))
        .digest("hex"),
    ),
  );
  // Cold (the first call also pays for JIT compilation), then warm: the best of 8.
  const [, coldMs] = await time(() => resolveGraph(steps, tmp));
  let resolveMs = Infinity;
  let graph = resolveGraph(steps, tmp);
  for (let k = 0; k < 8; k++) {
    const [g, ms] = await time(() => resolveGraph(buildDag(N), tmp));
    graph = g;
    resolveMs = Math.min(resolveMs, ms);
  }
  const [plan0, planEmptyMs] = await time(() => planRun(graph));
  const [first, firstMs] = await time(() => runGraph(graph, { maxConcurrent: 8 }));
  if (!first.ok) throw new Error("first run failed");
  const graph2 = resolveGraph(buildDag(N), tmp);
  const [plan1, planCachedMs] = await time(() => planRun(graph2));
  const [second, cachedRunMs] = await time(() => runGraph(resolveGraph(buildDag(N), tmp)));
  const ran = second.steps.filter((s) => s.outcome === "ran").length;
  console.log(`steps: ${N} (edges: ${graph.steps.reduce((a, s) => a + s.deps.length, 0)})`);
  console.log(`baseline: JSON.stringify + sha256 of every config   ${baseline.toFixed(1)} ms`);
  console.log(`identity + graph (resolveGraph), cold                   ${coldMs.toFixed(1)} ms`);
  console.log(`identity + graph (resolveGraph, warm, incl. defining)   ${resolveMs.toFixed(1)} ms`);
  console.log(`plan, nothing on disk (${plan0.entries.filter((e) => e.action === "run").length} to run)          ${planEmptyMs.toFixed(1)} ms`);
  console.log(`first run, all steps (8 at once)                    ${firstMs.toFixed(0)} ms`);
  console.log(`plan, all cached (status checks; ${plan1.entries.filter((e) => e.action === "skip").length} skip)     ${planCachedMs.toFixed(1)} ms`);
  console.log(`all-cached re-run (resolve + plan + run; ran ${ran})     ${cachedRunMs.toFixed(1)} ms`);
} finally {
  await fs.rm(tmp, { recursive: true, force: true });
}
