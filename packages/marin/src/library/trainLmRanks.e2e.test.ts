// A short experiment whose trainLm step trains on 2 data-parallel ranks, as a real `marin run`.
import { spawn } from "node:child_process";
import { existsSync, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOURCE_LOADER } from "@marin/iris/testing";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../../..");
const cli = path.join(here, "../cli/main.ts");
const marinIndex = path.resolve(here, "../index.ts");

describe("trainLmStep with ranks: 2", () => {
  let tmp: string;
  beforeAll(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), "marin-ranks-"));
    await fs.writeFile(path.join(tmp, "package.json"), JSON.stringify({ type: "module" }));
    await fs.mkdir(path.join(tmp, "docs"));
    for (let i = 0; i < 12; i++) await fs.writeFile(path.join(tmp, "docs", `d${i}.txt`), `the quick brown fox ${i} jumps over the lazy dog. `.repeat(8));
  });
  afterAll(() => fs.rm(tmp, { recursive: true, force: true }));

  it("runs the step as a 2-rank gang", async () => {
    const script = path.join(tmp, "exp.ts");
    const body = (ranks: number) =>
      `import * as m from ${JSON.stringify(marinIndex)};\n` +
      `export default () => { const docs = m.importCorpus({ files: ${JSON.stringify(path.join(tmp, "docs", "*.txt"))}, shards: 1 }); const tok = m.tokenize({ input: m.outputOf(docs), validationFraction: 0 });\n` +
      `  return [m.trainLmStep({ data: m.outputOf(tok), model: { nLayers: 1, dModel: 16, nHeads: 2, seqLen: 16 }, trainer: { numTrainSteps: 4, batchSize: 4, microBatches: 4 }, backend: "wasm", ranks: ${ranks} })]; };\n`;
    await fs.writeFile(script, body(2));
    // `marin ARGS` as a real process: its exit code, its stdout, and stdout and stderr together.
    const marin = (...args: string[]) =>
      new Promise<{ code: number | null; stdout: string; out: string }>((resolve) => {
        const child = spawn(process.execPath, ["--import", SOURCE_LOADER, cli, ...args, "--prefix", path.join(tmp, "out")], {
          cwd: repoRoot,
          env: { ...process.env, npm_lifecycle_event: "" },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let out = "";
        child.stdout.on("data", (d) => ((stdout += d), (out += d)));
        child.stderr.on("data", (d) => (out += d));
        child.on("close", (code) => resolve({ code, stdout, out }));
      });
    const first = await marin("run", script);
    expect(first.code, first.out).toBe(0);
    const outDir = path.join(tmp, "out");
    const trainDir = (await fs.readdir(outDir)).find((d) => d.startsWith("train-"));
    expect(trainDir, first.out).toBeDefined();
    expect(existsSync(path.join(outDir, trainDir!, "checkpoints", "step-4"))).toBe(true);
    expect((await fs.readFile(path.join(outDir, trainDir!, "metrics.jsonl"), "utf8")).trim().split("\n")).toHaveLength(4);
    // The step's result, in the run's summary, says it ran on 2 ranks.
    expect(first.out).toMatch(/\n\s+train\s+ran\s/);
    expect(first.out).toMatch(/\n {2}train:\n(?: {4}\w+: .*\n)* {4}ranks: 2\n/);
    // Both ranks' log lines are in the step's log, each marked with its rank.
    const logs = (await marin("logs", "train")).stdout;
    expect(logs).toMatch(/\[rank 0\] .*"rank":0/);
    expect(logs).toMatch(/\[rank 1\] .*"rank":1/);
  });
});
