// The iris backend on a real LocalCluster: every shard is a child process. A fixed, seeded set of
// small cases (each process costs a tsx start), exactly-once output under a crashing task, and
// shard results and deterministic failures carried by iris (no result files anywhere).
import { existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { LocalCluster } from "@marin/iris";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { ZephyrError } from "../errors.ts";
import { crashPipeline } from "../fixtures/crashPipeline.ts";
import { doubledJsonl } from "../fixtures/jsonlPipeline.ts";
import { numbers } from "../fixtures/numbersPipeline.ts";
import { chainPipeline, joinPipeline, outputOrdered, referenceChain, referenceJoin } from "../fixtures/opChain.ts";
import type { Chain, ChainOp } from "../fixtures/opChain.ts";

let cluster: LocalCluster;
let dir: string;
beforeAll(async () => {
  cluster = await LocalCluster.start({ workers: 1, workerCpuMillis: 4000 });
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-iris-"));
});
afterAll(async () => {
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

// Seeded cases: at most 4 shards, at most one shuffle (each stage is one job of ≤ 4 processes).
const opArb: fc.Arbitrary<ChainOp> = fc.oneof(
  fc.record({ op: fc.constant("map" as const), a: fc.integer({ min: 1, max: 7 }), b: fc.integer({ min: 0, max: 9 }) }),
  fc.record({ op: fc.constant("filter" as const), k: fc.integer({ min: 1, max: 5 }), r: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ op: fc.constant("flatMap" as const), n: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ op: fc.constant("window" as const), size: fc.integer({ min: 1, max: 4 }) }),
);
const shuffleArb: fc.Arbitrary<ChainOp> = fc.oneof(
  fc.record({ op: fc.constant("groupBy" as const), k: fc.integer({ min: 1, max: 6 }), shards: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ op: fc.constant("deduplicate" as const), k: fc.integer({ min: 0, max: 6 }) }),
);
const caseArb: fc.Arbitrary<Chain> = fc
  .tuple(
    fc.array(fc.integer({ min: -50, max: 200 }), { maxLength: 40 }),
    fc.integer({ min: 1, max: 4 }),
    fc.array(opArb, { maxLength: 3 }),
    fc.option(shuffleArb, { nil: undefined }),
  )
  .map(([items, shards, ops, shuffle]) => ({ items, shards, ops: shuffle ? [...ops, shuffle] : ops }));

/** Every file under `root`, relative to it. */
async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}

/** Asserts zephyr's side of the runs left no shard result files: results travel through iris. */
async function expectNoResultFiles(root: string): Promise<void> {
  const files = await filesUnder(root);
  // The stage jobs' task specs are there (the directory is the one the run used)...
  expect(files.some((f) => path.basename(f) === "tasks.json")).toBe(true);
  // ...and no result file: not `result-<i>.json`, nor any other.
  expect(files.filter((f) => /result/i.test(path.basename(f)))).toEqual([]);
}

describe("iris backend (LocalCluster)", () => {
  it("seeded operation chains match the reference", async () => {
    const cases = fc.sample(caseArb, { seed: 20261130, numRuns: 2 });
    const scratchDir = path.join(dir, "scratch-chains");
    for (const chain of cases) {
      const { records, stats } = await chainPipeline(chain).collect({ backend: "iris", iris: { client: cluster.client }, withStats: true, scratchDir });
      expect(stats.backend).toBe("iris");
      const expected = referenceChain(chain);
      if (outputOrdered(chain.ops)) expect(records).toEqual(expected);
      else expect([...records].sort((a, b) => a - b)).toEqual([...expected].sort((a, b) => a - b));
    }
    const join = {
      left: [
        { k: 1, v: 1 },
        { k: 2, v: 2 },
        { k: 3, v: 3 },
      ],
      right: [
        { k: 2, w: 20 },
        { k: 3, w: 30 },
        { k: 3, w: 31 },
      ],
      kind: "left" as const,
      shards: 2,
    };
    const joined = await joinPipeline(join).collect({ backend: "iris", iris: { client: cluster.client }, scratchDir });
    const canon = (xs: unknown[]): string[] => xs.map((x) => JSON.stringify(x)).sort();
    expect(canon(joined)).toEqual(canon(referenceJoin(join)));
    await expectNoResultFiles(scratchDir);
  });

  it("a bad record fails its task once (iris APP_ERROR, no retry) and the run rethrows BAD_RECORD with its message", async () => {
    const input = path.join(dir, "bad-input");
    await mkdir(input, { recursive: true });
    await writeFile(path.join(input, "a.jsonl"), '{"x": 1}\n{"x": 2}\n');
    await writeFile(path.join(input, "b.jsonl"), '{"x": 3}\n{"x": oops\n');
    const scratchDir = path.join(dir, "scratch-bad");
    const err = await doubledJsonl({ glob: path.join(input, "*.jsonl") })
      .collect({ backend: "iris", iris: { client: cluster.client, jobPrefix: "zbad" }, maxShardRetries: 2, scratchDir })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("BAD_RECORD");
    expect((err as ZephyrError).message).toMatch(/b\.jsonl:2: malformed JSON line/);
    const jobs = (await cluster.client.list()).filter((j) => path.basename(j.name).startsWith("zbad-"));
    expect(jobs).toHaveLength(1);
    const failed = (await cluster.client.job(jobs[0].name).status()).tasks.find((t) => t.index === 1)!;
    expect(failed).toMatchObject({ state: "FAILED", failureKind: "APP_ERROR", errorCode: "BAD_RECORD" });
    expect(failed.attempts).toHaveLength(1);
    expect(failed.error).toBe((err as ZephyrError).message);
    await expectNoResultFiles(scratchDir);
  });

  it("a writeJsonl run failing on its third file publishes no shard and leaves no temp file", async () => {
    const input = path.join(dir, "fail-input");
    await mkdir(input, { recursive: true });
    for (const [i, body] of ['{"x":1}\n', '{"x":2}\n', "{oops\n", '{"x":4}\n'].entries()) await writeFile(path.join(input, `f${i}.jsonl`), body);
    const out = path.join(dir, "fail-out");
    const err = await doubledJsonl({ glob: path.join(input, "*.jsonl") })
      .writeJsonl(path.join(out, "part-{shard}.jsonl"), { backend: "iris", iris: { client: cluster.client, jobPrefix: "zfail" }, maxShardRetries: 0 })
      .catch((e: unknown) => e);
    expect((err as ZephyrError).code).toBe("BAD_RECORD");
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  });

  it("inside an iris task, the pipeline's stage jobs are children of the task's job", async () => {
    const out = path.join(dir, "inside.json");
    const job = await cluster.client.submit({
      name: "zephyr-driver",
      entrypoint: { module: fileURLToPath(new URL("../fixtures/irisDriver.ts", import.meta.url)), export: "collectFromInsideTask", args: { out } },
      resources: { cpuMillis: 1000 },
    });
    const status = await job.wait({ timeoutMs: 120_000 });
    expect(status.state).toBe("SUCCEEDED");
    const got = JSON.parse(await readFile(out, "utf8")) as { records: number[]; backend: string };
    expect(got.backend).toBe("iris");
    expect(got.records).toEqual(await numbers({ n: 40, shards: 2 }).collect({ backend: "inline" }));
    const children = await cluster.client.list({ prefix: `${job.name}/` });
    expect(children.length).toBeGreaterThanOrEqual(1);
    expect(children.every((c) => c.state === "SUCCEEDED")).toBe(true);
  });

  it("a task process that dies mid-shard is retried by iris and the output is exactly once", async () => {
    const markerDir = path.join(dir, "markers");
    await mkdir(markerDir, { recursive: true });
    const out = path.join(dir, "out");
    const scratchDir = path.join(dir, "scratch-crash");
    const r = await crashPipeline({ n: 900, shards: 3, crashShard: 1, crashAt: 100, markerDir }).writeJsonl(path.join(out, "p-{shard}.jsonl.gz"), {
      backend: "iris",
      iris: { client: cluster.client },
      maxShardRetries: 2,
      scratchDir,
    });
    expect(r.counts).toEqual([300, 300, 300]);
    expect(r.stats.stages[0].retries).toBeGreaterThanOrEqual(1);
    const ids: number[] = [];
    for (const p of r.paths)
      for (const line of gunzipSync(await readFile(p))
        .toString("utf8")
        .split("\n"))
        if (line) ids.push((JSON.parse(line) as { id: number }).id);
    expect(ids.sort((a, b) => a - b)).toEqual(Array.from({ length: 900 }, (_, i) => i));
    const manifest = JSON.parse(await readFile(path.join(out, "_SUCCESS"), "utf8")) as { total: number };
    expect(manifest.total).toBe(900);
    await expectNoResultFiles(scratchDir);
    expect((await filesUnder(out)).filter((f) => /result/.test(f))).toEqual([]);
  });
});
