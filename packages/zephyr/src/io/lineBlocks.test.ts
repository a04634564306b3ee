// LineSplitter and the readers on top of it: linear work on long lines, UTF-8 checks, over-long lines.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ZephyrError } from "../errors.ts";
import { readJsonl, readJsonlBatches } from "./jsonl.ts";
import type { BadRecord, ReadStats } from "./jsonl.ts";
import { LineSplitter } from "./lineBlocks.ts";
import type { LineBlock } from "./lineBlocks.ts";
import { readText } from "./text.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-lines-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function splitAll(splitter: LineSplitter, chunks: Iterable<Buffer>): LineBlock[] {
  const out: LineBlock[] = [];
  for (const c of chunks) {
    const b = splitter.push(c);
    if (b) out.push(b);
  }
  const rest = splitter.end();
  if (rest) out.push(rest);
  return out;
}

function* chunksOf(buf: Buffer, size: number): Generator<Buffer> {
  for (let at = 0; at < buf.length; at += size) yield buf.subarray(at, Math.min(buf.length, at + size));
}

async function collectAll<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe("LineSplitter", () => {
  it("examines and copies each byte of a 40 MB line a constant number of times", () => {
    const size = 40 * 1024 * 1024;
    const line = Buffer.alloc(size, 0x61);
    const splitter = new LineSplitter();
    // 64 KiB chunks, as a file stream delivers them; the line ends with a newline and one more line.
    const blocks = splitAll(splitter, chunksOf(Buffer.concat([line, Buffer.from("\nnext\n")]), 64 * 1024));
    expect(blocks).toHaveLength(1);
    expect(blocks[0].text === `${"a".repeat(size)}\nnext`).toBe(true);
    // Before: every chunk re-scanned the whole carried line (640 chunks × 20 MB on average).
    expect(splitter.scannedBytes).toBeLessThanOrEqual(2 * (size + 6));
    expect(splitter.copiedBytes).toBeLessThanOrEqual(size + 6);
  });

  it("gives the same lines for every chunking (property)", () => {
    const text = fc.array(fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom("é", "日本", "😀", "\r", "")), { maxLength: 20 });
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 17 }), fc.boolean(), (lines, size, finalNewline) => {
        const joined = lines.join("\n") + (finalNewline && lines.length > 0 ? "\n" : "");
        const blocks = splitAll(new LineSplitter(), chunksOf(Buffer.from(joined), size));
        const got = blocks.map((b) => b.text).join("\n");
        expect(blocks.every((b) => b.bad === undefined)).toBe(true);
        // The final newline ends the last line; it does not start another.
        expect(got).toBe(joined.endsWith("\n") ? joined.slice(0, -1) : joined);
      }),
    );
  });

  it("reports lines with invalid UTF-8 (empty in the block), or replaces them with U+FFFD", () => {
    const bytes = Buffer.concat([Buffer.from('{"a":1}\n{"b":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n{"c":"é"}\n')]);
    const strict = splitAll(new LineSplitter(), chunksOf(bytes, 5));
    expect(strict.flatMap((b) => b.text.split("\n"))).toEqual(['{"a":1}', "", '{"c":"é"}']);
    expect(strict.flatMap((b) => b.bad ?? [])).toEqual([{ index: expect.any(Number), reason: "invalid UTF-8" }]);
    const replaced = splitAll(new LineSplitter({ invalidUtf8: "replace" }), [bytes]);
    expect(replaced.map((b) => b.text)).toEqual(['{"a":1}\n{"b":"\uFFFD("}\n{"c":"é"}']);
  });

  it("a truncated sequence at the end of a line is invalid, a sequence split across chunks is not", () => {
    const e = Buffer.from("é"); // c3 a9
    const ok = splitAll(new LineSplitter(), [Buffer.from("x"), e.subarray(0, 1), e.subarray(1), Buffer.from("\n")]);
    expect(ok).toEqual([{ text: "xé" }]);
    const cut = splitAll(new LineSplitter(), [Buffer.concat([Buffer.from("x"), e.subarray(0, 1), Buffer.from("\ny")])]);
    expect(cut).toEqual([{ text: "", bad: [{ index: 0, reason: "invalid UTF-8" }] }, { text: "y" }]);
  });

  it("drops a line longer than maxLineBytes without keeping its bytes, and reports it", () => {
    const splitter = new LineSplitter({ maxLineBytes: 100 });
    const blocks = splitAll(splitter, chunksOf(Buffer.from(`ok\n${"x".repeat(1000)}\nafter`), 64));
    expect(blocks.map((b) => b.text).join("\n")).toBe("ok\n\nafter");
    const bad = blocks.flatMap((b) => b.bad ?? []);
    expect(bad).toHaveLength(1);
    expect(bad[0].reason).toMatch(/longer than 100 bytes/);
    expect(splitter.copiedBytes).toBeLessThan(200);
  });
});

describe("readers and invalid UTF-8", () => {
  const bad = Buffer.concat([Buffer.from('{"i":1}\n{"i":2,"t":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n{"i":3}\n')]);

  it("readJsonl fails on invalid UTF-8 as BAD_RECORD naming file and line", async () => {
    const file = path.join(dir, "bad-utf8.jsonl.gz");
    await writeFile(file, gzipSync(bad));
    const err = await collectAll(readJsonl(file)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("BAD_RECORD");
    expect((err as Error).message).toBe(`${file}:2: invalid UTF-8`);
  });

  it("readJsonl skips and counts it under skip, and replaces it on request", async () => {
    const file = path.join(dir, "bad-utf8.jsonl");
    await writeFile(file, bad);
    const stats: ReadStats = { skipped: 0 };
    const seen: BadRecord[] = [];
    const got = await collectAll(readJsonl<{ i: number }>(file, { onBadRecord: "skip", stats, onSkip: (b) => seen.push(b) }));
    expect(got.map((r) => r.i)).toEqual([1, 3]);
    expect(stats.skipped).toBe(1);
    expect(seen.map((b) => b.line)).toEqual([2]);
    const replaced = await collectAll(readJsonl<{ i: number; t?: string }>(file, { invalidUtf8: "replace" }));
    expect(replaced).toEqual([{ i: 1 }, { i: 2, t: "\uFFFD\uFFFD" }, { i: 3 }]);
  });

  it("readText applies the same policy, keeping line numbers", async () => {
    const file = path.join(dir, "bad-utf8.txt");
    await writeFile(file, Buffer.concat([Buffer.from("a\n\nb"), Buffer.from([0x80]), Buffer.from("\nc\n")]));
    const err = await collectAll(readText(file)).catch((e: unknown) => e);
    expect((err as ZephyrError).code).toBe("BAD_RECORD");
    expect((err as Error).message).toBe(`${file}:3: invalid UTF-8`);
    const stats: ReadStats = { skipped: 0 };
    expect(await collectAll(readText(file, { onBadRecord: "skip", stats }))).toEqual(["a", "", "c"]);
    expect(stats.skipped).toBe(1);
    expect(await collectAll(readText(file, { invalidUtf8: "replace" }))).toEqual(["a", "", "b\uFFFD", "c"]);
  });

  it("a JSON error after a bad block keeps its line number", async () => {
    const file = path.join(dir, "bad-then-json.jsonl");
    await writeFile(file, Buffer.concat([bad, Buffer.from("{oops\n")]));
    const stats: ReadStats = { skipped: 0 };
    const lines: number[] = [];
    const got = await collectAll(readJsonlBatches<{ i: number }>(file, { onBadRecord: "skip", stats, onSkip: (b) => lines.push(b.line) }));
    expect(got.flat().map((r) => r.i)).toEqual([1, 3]);
    expect(lines).toEqual([2, 4]);
  });
});
