// `levanter train --ranks 2` as a real process: an embedded local cluster runs the gang.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const main = path.join(pkgDir, "src/cli/main.ts");

describe("levanter train --ranks", () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-ranks-"));
    await writeByteCache(path.join(dir, "cache"), syntheticDocuments(40, 5));
    writeFileSync(
      path.join(dir, "c.yaml"),
      `model: {nLayers: 1, dModel: 16, nHeads: 2, seqLen: 16}\ndata: {trainCache: ${path.join(dir, "cache")}}\ntrainer: {numTrainSteps: 4, batchSize: 4, trackers: [jsonl], backend: wasm, threads: 1, runDir: ${path.join(dir, "run")}}\n`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("trains on 2 ranks of an embedded cluster and prints the gang's result", async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", main, "train", "--config", path.join(dir, "c.yaml"), "--ranks", "2"], {
      cwd: pkgDir,
      env: { ...process.env, LEVANTER_LOG: "info" },
      timeout: 120_000,
    });
    const result = JSON.parse(stdout.trim().split("\n").at(-1)!) as { state: string; ranks: number; runDir: string };
    expect(result, stderr).toMatchObject({ state: "SUCCEEDED", ranks: 2, runDir: path.join(dir, "run") });
    // Both ranks' log lines came through, each marked with its rank.
    expect(stderr).toMatch(/\[rank 0\] .*"rank":0/);
    expect(stderr).toMatch(/\[rank 1\] .*"rank":1/);
    expect(stderr).toMatch(/"world":2,"microBatches":2/);
    expect(readFileSync(path.join(dir, "run", "metrics.jsonl"), "utf8").trim().split("\n")).toHaveLength(4);
  });
});
