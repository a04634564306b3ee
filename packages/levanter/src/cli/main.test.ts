// The levanter CLI in-process: commands, options and their errors.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";
import { buildProgram } from "./main.ts";

async function run(args: string[]): Promise<string> {
  let out = "";
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await buildProgram()
      .exitOverride()
      .parseAsync(["node", "levanter", ...args]);
  } finally {
    spy.mockRestore();
  }
  return out;
}

describe("levanter CLI", () => {
  let dir: string;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-cli-"));
    const docs = syntheticDocuments(20, 8);
    docs.slice(0, 10).forEach((d, i) => writeFileSync(path.join(dir, `doc${i}.txt`), d));
    await writeByteCache(path.join(dir, "val"), docs.slice(10));
    writeFileSync(
      path.join(dir, "c.yaml"),
      `model: {nLayers: 1, dModel: 16, nHeads: 2, seqLen: 16}\ndata: {trainCache: ${path.join(dir, "train")}}\ntrainer: {numTrainSteps: 50, batchSize: 2, trackers: [], backend: wasm, runDir: ${path.join(dir, "run")}}\n`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("tokenize → train (with overrides) → eval → generate", async () => {
    const tok = JSON.parse(await run(["tokenize", "--out", path.join(dir, "train"), ...Array.from({ length: 10 }, (_, i) => path.join(dir, `doc${i}.txt`))])) as {
      tokens: number;
      documents: number;
    };
    expect(tok.documents).toBe(10);
    expect(tok.tokens).toBeGreaterThan(1000);

    const trained = JSON.parse(
      await run(["train", "--log-format", "json", "--config", path.join(dir, "c.yaml"), "--trainer.numTrainSteps=3", "--optimizer.learningRate=0.01"]),
    ) as { step: number; checkpoint: string };
    expect(trained.step).toBe(3);
    expect(trained.checkpoint).toBe(path.join(dir, "run", "checkpoints", "step-3"));

    const ev = JSON.parse(await run(["eval", "--checkpoint", path.join(dir, "run", "checkpoints"), "--data", path.join(dir, "val"), "--max-batches", "2"])) as Record<
      string,
      number
    >;
    expect(ev.step).toBe(3);
    expect(ev["eval/loss"]).toBeGreaterThan(0);
    expect(ev["eval/bpb"]).toBeGreaterThan(0);

    const args = ["generate", "--checkpoint", trained.checkpoint, "--prompt", "The cat", "--max-tokens", "8", "--seed", "4"];
    const text = await run(args);
    expect(text.startsWith("The cat")).toBe(true);
    expect(await run(args)).toBe(text);
  });

  it("fails with the path of a bad override", async () => {
    await expect(run(["train", "--config", path.join(dir, "c.yaml"), "--trainer.batchSize=0"])).rejects.toThrow(/trainer\.batchSize/);
  });
});
