// The output commit protocol: temp files, atomic links, commit markers and the _SUCCESS manifest.
import { existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ZephyrError } from "../errors.ts";
import { commitFile, commonDir, publishShards, readCommitted, removeStaleTemps, shardPath, tempPathFor, writeSuccessManifest } from "./commit.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-commit-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the output commit protocol", () => {
  it("a late duplicate attempt never overwrites the committed shard", async () => {
    const final = path.join(dir, "part-00000.jsonl");
    const a = tempPathFor(final);
    const b = tempPathFor(final);
    expect(a).not.toBe(b);
    expect(path.basename(a).startsWith(".")).toBe(true);
    expect(a.endsWith(".part-00000.jsonl")).toBe(true);
    await writeFile(a, "first\n");
    await writeFile(b, "second attempt, longer\n");
    expect(await commitFile(a, final, 1, "fp")).toBe("committed");
    expect(await commitFile(b, final, 1, "fp")).toBe("already");
    expect(await readFile(final, "utf8")).toBe("first\n");
    expect(existsSync(a)).toBe(false);
    expect(existsSync(b)).toBe(false);
    expect(await readCommitted(final)).toEqual({ path: final, count: 1, bytes: 6 });
    expect(await readCommitted(final, "fp")).toEqual({ path: final, count: 1, bytes: 6 });
    // A shard another plan committed is not this plan's.
    expect(await readCommitted(final, "another plan")).toBeUndefined();
  });

  it("publishShards publishes all staged shards, or none when one cannot be published", async () => {
    const finals = [0, 1, 2].map((i) => path.join(dir, `part-0000${i}.jsonl`));
    const staged = finals.map((f) => tempPathFor(f));
    await Promise.all(staged.map((t, i) => writeFile(t, `${i}\n`)));
    const got = await publishShards(
      staged.map((t, i) => ({ staged: t, path: finals[i], count: 1 })),
      "fp",
    );
    expect(got).toEqual(finals.map((f) => ({ path: f, count: 1, bytes: 2 })));
    expect(readdirSync(dir).sort()).toEqual([".zephyr", ...finals.map((f) => path.basename(f))]);
    // A second set whose middle temp file is gone: nothing of it stays visible, no temp stays.
    const out2 = path.join(dir, "two");
    const finals2 = [0, 1, 2].map((i) => path.join(out2, `part-0000${i}.jsonl`));
    const staged2 = finals2.map((f) => tempPathFor(f));
    await mkdir(out2);
    await writeFile(staged2[0], "a\n");
    await writeFile(staged2[2], "c\n");
    const err = await publishShards(
      staged2.map((t, i) => ({ staged: t, path: finals2[i], count: 1 })),
      "fp",
    ).catch((e: unknown) => e);
    expect((err as ZephyrError).code).toBe("IO");
    expect(readdirSync(out2).filter((n) => n !== ".zephyr")).toEqual([]);
    expect(existsSync(path.join(out2, ".zephyr")) ? readdirSync(path.join(out2, ".zephyr")) : []).toEqual([]);
  });

  it("a committed file whose size no longer matches its marker is not committed", async () => {
    const final = path.join(dir, "x.jsonl");
    const t = tempPathFor(final);
    await writeFile(t, "abc\n");
    await commitFile(t, final, 1, "fp");
    await writeFile(final, "abcdef\n");
    expect(await readCommitted(final)).toBeUndefined();
    expect(await readCommitted(path.join(dir, "missing.jsonl"))).toBeUndefined();
  });

  it("shard paths pad {shard} and {total}, and refuse a pattern without {shard} for several shards", () => {
    expect(shardPath("/o/p-{shard}-of-{total}.jsonl.gz", 3, 12)).toBe("/o/p-00003-of-00012.jsonl.gz");
    expect(shardPath("/o/all.jsonl", 0, 1)).toBe("/o/all.jsonl");
    expect(() => shardPath("/o/all.jsonl", 0, 2)).toThrow(ZephyrError);
    expect(() => shardPath("/o/all.jsonl", 0, 2)).toThrow(/\{shard\}/);
  });

  it("_SUCCESS lists shards relative to their common directory, and stale temps are removed", async () => {
    const files = [path.join(dir, "a", "p0.jsonl"), path.join(dir, "b", "p1.jsonl")];
    expect(commonDir(files)).toBe(dir);
    const m = await writeSuccessManifest(
      files.map((p, i) => ({ path: p, count: i + 1, bytes: 10 })),
      "f00",
    );
    expect(JSON.parse(await readFile(m, "utf8"))).toEqual({
      fingerprint: "f00",
      total: 3,
      shards: [
        { path: path.join("a", "p0.jsonl"), count: 1, bytes: 10 },
        { path: path.join("b", "p1.jsonl"), count: 2, bytes: 10 },
      ],
    });
    const final = path.join(dir, "q.jsonl");
    await writeFile(tempPathFor(final), "partial");
    await writeFile(path.join(dir, "keep.txt"), "x");
    await removeStaleTemps([final]);
    expect(readdirSync(dir).sort()).toEqual(["_SUCCESS", "keep.txt"]);
  });
});
