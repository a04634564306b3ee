// Evaluation through the service equals levanter's evaluateLm on the same checkpoint and data.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { LocalCluster } from "@marin/iris";
import { ValidationBatches, byteTokenizer, evaluateLm, loadModelFromCheckpoint } from "@marin/levanter";
import { TokenCacheReader, finalizeTokenCache, writeTokenCacheShard } from "@marin/levanter/sharding";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyCheckpoint } from "../internal/fixtures/tinyCheckpoint.ts";
import { remoteInference } from "./remoteInference.ts";
import { scoreViaService } from "./scoreViaService.ts";

describe("scoreViaService", () => {
  let dir: string;
  let ckpt: string;
  let cache: string;
  let cluster: LocalCluster;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    dir = mkdtempSync(path.join(os.tmpdir(), "marin-score-"));
    ckpt = await tinyCheckpoint(path.join(dir, "ckpt"), 32, 11);
    cache = path.join(dir, "validation");
    const docs = Array.from({ length: 40 }, (_, d) => byteTokenizer.encode(`Document ${d}: the quick brown fox ${"jumps ".repeat(d % 5)}over the lazy dog.`));
    await writeTokenCacheShard(cache, 0, docs, { tokenizer: "byte", vocabSize: 257 });
    await finalizeTokenCache(cache);
    cluster = await LocalCluster.start({ workers: 1, workerCpuMillis: 4000 });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("gives evaluateLm's loss and bits per byte (to 1e-5) through /v1/completions echo + logprobs", async () => {
    const served = await remoteInference(
      { checkpoint: ckpt, client: cluster.client, name: "score", env: { LEVANTER_BACKEND: "wasm", LEVANTER_LOG: "warn" }, startupTimeoutMs: 60_000 },
      (s) => scoreViaService({ baseUrl: s.baseUrl, model: s.model, data: cache, batchSize: 4, maxBatches: 5 }),
    );
    const reader = await TokenCacheReader.open(cache);
    const { model } = await loadModelFromCheckpoint(ckpt);
    try {
      const local = evaluateLm(model, new ValidationBatches(reader, { seqLen: 32, batchSize: 4 }), byteTokenizer, 5);
      expect(served.window).toBe(32);
      expect(served.tokens).toBe(local.tokens);
      expect(served.tokens).toBe(5 * 4 * 32);
      expect(Math.abs(served.loss - local.loss)).toBeLessThan(1e-5);
      expect(Math.abs(served.bpb - local.bpb)).toBeLessThan(1e-5);
      // A random model of 257 byte ids: about ln 257 nats per token.
      expect(local.loss).toBeGreaterThan(4);
    } finally {
      model.dispose();
      reader.close();
    }
  }, 90_000);
});
