// Token caches written by racing real processes.
import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TokenCacheReader } from "./tokenCacheReader.ts";
import { finalizeTokenCache } from "./tokenCacheWriter.ts";
import { SOURCE_LOADER } from "@marin/iris/testing";

// Real processes write shards of one cache directory at the same time, as zephyr tasks do; shard 1
// is written by two of them (a retried task racing its first attempt).
const here = path.dirname(fileURLToPath(import.meta.url));
const packageRoot = path.resolve(here, "../..");

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "levanter-cache-e2e-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Documents of shard `s` (the child processes get this function's source). */
const docsOf = (s: number): number[][] => Array.from({ length: 30 }, (_, d) => Array.from({ length: ((s + d) % 50) * 40 }, (_, t) => (s * 1009 + d * 31 + t) % 257));

function runWriter(script: string, shard: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", SOURCE_LOADER, script, dir, String(shard)], { cwd: packageRoot, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("exit", (code) => resolve(code ?? -1));
  });
}

describe("token cache across processes", () => {
  it("shards written concurrently by separate processes (one twice) finalize into a consistent cache", async () => {
    const script = path.join(dir, "..", `${path.basename(dir)}-writer.mts`);
    await writeFile(
      script,
      `import { writeTokenCacheShard } from ${JSON.stringify(pathToFileURL(path.join(here, "index.ts")).href)};
const [dir, shard] = [process.argv[2], Number(process.argv[3])];
const docs = (${docsOf.toString()})(shard);
await writeTokenCacheShard(dir, shard, docs, { tokenizer: "byte", vocabSize: 257 });
`,
    );
    try {
      const codes = await Promise.all([0, 1, 2, 1, 3].map((s) => runWriter(script, s)));
      expect(codes).toEqual([0, 0, 0, 0, 0]);
    } finally {
      await rm(script, { force: true });
    }
    const ledger = await finalizeTokenCache(dir, { numShards: 4 });
    const expected = [0, 1, 2, 3].flatMap((s) => docsOf(s));
    expect(ledger.totalDocuments).toBe(expected.length);
    expect(ledger.totalTokens).toBe(expected.flat().length);
    const reader = await TokenCacheReader.open(dir);
    try {
      const got = [...reader.documents()].map((d) => Array.from(d));
      expect(got).toEqual(expected);
    } finally {
      reader.close();
    }
    expect((await readdir(dir)).sort()).toEqual(["ledger.json", "shard-00000.tokens", "shard-00001.tokens", "shard-00002.tokens", "shard-00003.tokens"]);
  });
});
