// `levanter export gguf` run by llama.cpp itself: node-llama-cpp (pinned 3.21.1, its prebuilt
// Linux CPU binary) loads the exported f32 file of a Llama-shaped model trained here (GQA, rotary,
// SwiGLU, RMSNorm, untied head) and its greedy continuation of a prompt matches levanter's for 32
// tokens; the f16 and q8_0 exports load and run. node-llama-cpp's platform packages weigh hundreds of MB, so it is installed once into a
// scratch project under the OS temp folder (reused by later runs), never into the workspace.
// Skipped with a notice where that install cannot run, except under CI=true.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generate } from "../generate.ts";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";
import { exportGguf } from "../trainer/ggufExport.ts";
import { trainLm } from "../trainer/trainLm.ts";
import { buildProgram } from "./main.ts";

const VERSION = "3.21.1";
const PROJECT = path.join(os.tmpdir(), `levanter-node-llama-cpp-${VERSION}`);
const ENTRY = path.join(PROJECT, "node_modules", "node-llama-cpp", "dist", "index.js");

/** Installs node-llama-cpp@3.21.1 into the scratch project unless it is there; the reason when it cannot. */
function installNodeLlamaCpp(): string | undefined {
  const pkg = path.join(PROJECT, "node_modules", "node-llama-cpp", "package.json");
  if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, "utf8")) as { version: string }).version === VERSION) return undefined;
  mkdirSync(PROJECT, { recursive: true });
  if (!existsSync(path.join(PROJECT, "package.json"))) writeFileSync(path.join(PROJECT, "package.json"), JSON.stringify({ name: "levanter-gguf-check", private: true }));
  const env = { ...process.env, NODE_OPTIONS: "", npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };
  const r = spawnSync("npm", ["install", "--no-audit", "--no-fund", "-E", `node-llama-cpp@${VERSION}`], { cwd: PROJECT, env, encoding: "utf8", timeout: 900_000 });
  if (r.status !== 0 || !existsSync(ENTRY)) return `npm install node-llama-cpp@${VERSION} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr ?? "").slice(-400)}`;
  return undefined;
}

const installProblem = installNodeLlamaCpp();
if (installProblem && process.env.CI === "true") throw new Error(`gguf.e2e: ${installProblem}`);
if (installProblem) console.warn(`gguf.e2e: skipped — ${installProblem}`);

// Just what the test uses of node-llama-cpp's API.
interface NodeLlamaCpp {
  getLlama(opts: { gpu: false; build: "never"; logLevel?: string }): Promise<{
    loadModel(opts: { modelPath: string }): Promise<{
      tokenize(text: string, specialTokens?: boolean): number[];
      detokenize(tokens: readonly number[]): string;
      tokens: { eos: number | null };
      createContext(opts: { contextSize: number; threads?: number }): Promise<{
        getSequence(): { evaluate(tokens: number[], opts: { temperature: number }): AsyncGenerator<number> };
        dispose(): Promise<void>;
      }>;
      dispose(): Promise<void>;
    }>;
    dispose(): Promise<void>;
  }>;
}

describe.skipIf(installProblem !== undefined)("export gguf → node-llama-cpp 3.21.1", () => {
  let dir: string;
  let checkpoint: string;

  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-gguf-"));
    const cache = path.join(dir, "cache");
    await writeByteCache(cache, syntheticDocuments(200, 3));
    const run = await trainLm({
      model: { positions: "rope", norm: "rms", activation: "swiglu", nLayers: 2, dModel: 64, nHeads: 4, nKvHeads: 2, dFF: 128, seqLen: 128, tieEmbeddings: false },
      data: { trainCache: cache },
      optimizer: { learningRate: 1e-2, warmup: 10 },
      trainer: { numTrainSteps: 300, batchSize: 8, runDir: path.join(dir, "run"), trackers: ["jsonl"] },
    });
    checkpoint = run.checkpoint!;
  }, 600_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the CLI writes the file; llama.cpp tokenizes bytes as levanter does and its greedy 32 tokens equal levanter's; the f16 and q8_0 exports load and run", async () => {
    const file = path.join(dir, "model.gguf");
    const program = buildProgram().exitOverride();
    let printed = "";
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((s: string) => ((printed += s), true)) as typeof process.stdout.write;
    try {
      await program.parseAsync(["node", "levanter", "export", "gguf", "--checkpoint", path.dirname(checkpoint), "--out", file]);
    } finally {
      process.stdout.write = write;
    }
    expect(JSON.parse(printed)).toMatchObject({ out: file, type: "f32", checkpoint });

    const prompt = "The old man carried";
    const ours = await generate({ checkpoint, prompt, maxTokens: 32, temperature: 0 });
    // The trained model continues with sentences, not an end of document, within 32 tokens.
    expect(ours.tokens).toHaveLength(32);

    const { getLlama } = (await import(pathToFileURL(ENTRY).href)) as NodeLlamaCpp;
    const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
    const model = await llama.loadModel({ modelPath: file });
    try {
      const ids = model.tokenize(prompt, false);
      expect(ids).toEqual(Array.from(Buffer.from(prompt, "utf8")));
      expect(model.tokens.eos).toBe(256);
      const context = await model.createContext({ contextSize: 128, threads: 1 });
      const theirs: number[] = [];
      for await (const t of context.getSequence().evaluate(ids, { temperature: 0 })) {
        theirs.push(t);
        if (theirs.length === 32) break;
      }
      await context.dispose();
      expect(theirs).toEqual(ours.tokens);
      expect(model.detokenize(theirs)).toBe(ours.text);

      // f16 and q8_0 load and run too (smaller files; their continuations may differ by rounding).
      for (const type of ["f16", "q8_0"] as const) {
        const small = path.join(dir, `model-${type}.gguf`);
        const r = await exportGguf(checkpoint, small, { type });
        expect(r.bytes).toBe(statSync(small).size);
        expect(r.bytes).toBeLessThan(statSync(file).size * (type === "f16" ? 0.6 : 0.4));
        const m = await llama.loadModel({ modelPath: small });
        const ctx = await m.createContext({ contextSize: 128, threads: 1 });
        const got: number[] = [];
        for await (const t of ctx.getSequence().evaluate(ids, { temperature: 0 })) {
          got.push(t);
          if (got.length === 32) break;
        }
        expect(got).toHaveLength(32);
        expect(got.every((t) => Number.isInteger(t) && t >= 0 && t < 257)).toBe(true);
        await ctx.dispose();
        await m.dispose();
      }
    } finally {
      await model.dispose();
      await llama.dispose();
    }
  }, 300_000);
});
