// `levanter export gguf` run by llama.cpp itself: node-llama-cpp (pinned 3.21.1, its prebuilt
// Linux CPU binary) loads the exported f32 file of a Llama-shaped model trained here (GQA, rotary,
// SwiGLU, RMSNorm, untied head) and its greedy continuation of a prompt matches levanter's for 32
// tokens; the f16 and q8_0 exports load and run. node-llama-cpp's platform packages weigh hundreds of MB, so it is installed once into a
// scratch project under the OS temp folder (reused by later runs), never into the workspace.
// Skipped with a notice where that install cannot run, except under CI=true.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generate } from "../generate.ts";
import { importNodeLlamaCpp, installNodeLlamaCpp } from "../models/nodeLlamaCpp.ts";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";
import { exportGguf } from "../checkpoint/ggufExport.ts";
import { trainLm } from "../trainer/trainLm.ts";
import { buildProgram } from "./main.ts";

const installProblem = installNodeLlamaCpp();
if (installProblem && process.env.CI === "true") throw new Error(`gguf.e2e: ${installProblem}`);
if (installProblem) console.warn(`gguf.e2e: skipped — ${installProblem}`);

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

    const { getLlama } = await importNodeLlamaCpp();
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
