// expandGlob, compression by file extension, and readText.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ZephyrError } from "../errors.ts";
import { compressionOf, expandGlob, stripCompressionSuffix } from "./files.ts";
import { readText, readTextBatches } from "./text.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-files-"));
  for (const rel of ["b/2.jsonl", "a/10.jsonl", "a/9.jsonl.gz", "c/x.txt", "a/.hidden.jsonl"]) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), "{}\n");
  }
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("expandGlob", () => {
  it("returns sorted absolute paths, with braces, relative to cwd", async () => {
    const got = await expandGlob("{a,b}/*.jsonl*", { cwd: dir });
    expect(got).toEqual([path.join(dir, "a/10.jsonl"), path.join(dir, "a/9.jsonl.gz"), path.join(dir, "b/2.jsonl")]);
  });

  it("merges several patterns without duplicates and accepts absolute patterns", async () => {
    const got = await expandGlob([path.join(dir, "a/*.jsonl"), "a/10.jsonl", "c/*.txt"], { cwd: dir });
    expect(got).toEqual([path.join(dir, "a/10.jsonl"), path.join(dir, "c/x.txt")]);
  });

  it("treats glob characters in literal directories and existing file names literally", async () => {
    const odd = path.join(dir, "run(1)[x]");
    await mkdir(odd);
    await writeFile(path.join(odd, "a.jsonl"), "{}\n");
    await writeFile(path.join(odd, "part[1].jsonl"), "{}\n");
    expect(await expandGlob(path.join(odd, "*.jsonl"))).toEqual([path.join(odd, "a.jsonl"), path.join(odd, "part[1].jsonl")]);
    expect(await expandGlob("run(1)[x]/part[1].jsonl", { cwd: dir })).toEqual([path.join(odd, "part[1].jsonl")]);
    expect(await expandGlob(path.join(dir, "{a,b}", "*.jsonl"))).toEqual([path.join(dir, "a/10.jsonl"), path.join(dir, "b/2.jsonl")]);
  });

  it("fails clearly on an empty match unless allowed", async () => {
    const err = await expandGlob("nothing/*.jsonl", { cwd: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("INVALID_ARGUMENT");
    expect((err as ZephyrError).message).toContain("nothing/*.jsonl");
    expect(await expandGlob("nothing/*.jsonl", { cwd: dir, allowEmpty: true })).toEqual([]);
  });
});

describe("compression by extension", () => {
  it("maps extensions", () => {
    expect(compressionOf("a.jsonl.gz")).toBe("gzip");
    expect(compressionOf("a.JSONL.ZST")).toBe("zstd");
    expect(compressionOf("a.jsonl")).toBe("none");
    expect(stripCompressionSuffix("/x/a.jsonl.zst")).toBe("/x/a.jsonl");
    expect(stripCompressionSuffix("/x/a.parquet")).toBe("/x/a.parquet");
  });
});

describe("readText", () => {
  it("yields lines without line ends, keeps empty lines, ignores the final newline", async () => {
    const file = path.join(dir, "t.txt.gz");
    await writeFile(file, gzipSync("one\r\n\ntwo\nthree\n"));
    const got: string[] = [];
    for await (const line of readText(file)) got.push(line);
    expect(got).toEqual(["one", "", "two", "three"]);
  });

  it("keeps a last line without newline and splits large files into several batches", async () => {
    const file = path.join(dir, "big.txt");
    const lines = Array.from({ length: 200_000 }, (_, i) => `line ${i}`);
    await writeFile(file, lines.join("\n"));
    let batches = 0;
    const got: string[] = [];
    for await (const b of readTextBatches(file)) {
      batches++;
      got.push(...b);
    }
    expect(batches).toBeGreaterThan(1);
    expect(got).toEqual(lines);
  });
});
