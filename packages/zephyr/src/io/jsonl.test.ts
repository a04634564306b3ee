// JsonlWriter and readJsonlBatches: round trips, compression, bad records, chunk boundaries.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ZephyrError } from "../errors.ts";
import { JsonlWriter, readJsonl, readJsonlBatches } from "./jsonl.ts";
import type { BadRecord, ReadStats } from "./jsonl.ts";

const zstd = createRequire(import.meta.url)("zstd-napi") as { decompress(b: Uint8Array): Buffer; compress(b: Uint8Array): Buffer };

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-jsonl-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function collect<T>(it: AsyncIterable<T[]>): Promise<T[]> {
  const out: T[] = [];
  for await (const batch of it) {
    expect(batch.length).toBeGreaterThan(0);
    out.push(...batch);
  }
  return out;
}

// JSON round trips lose -0 and undefined members; keep to values JSON represents exactly.
const jsonRecord = fc.dictionary(
  fc.string({ maxLength: 6 }),
  fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string({ maxLength: 3 }), { maxLength: 3 })),
  { maxKeys: 4 },
);

describe("JsonlWriter + readJsonlBatches", () => {
  it.each(["plain.jsonl", "gz.jsonl.gz", "zst.jsonl.zst"])("round-trips records through %s", async (name) => {
    await fc.assert(
      fc.asyncProperty(fc.array(jsonRecord, { maxLength: 40 }), async (records) => {
        const file = path.join(dir, name);
        const w = JsonlWriter.create(file);
        await w.writeMany(records.slice(0, 5));
        for (const r of records.slice(5)) await w.write(r);
        const result = await w.close();
        expect(result.count).toBe(records.length);
        expect(result.bytes).toBe((await readFile(file)).length);
        expect(await collect(readJsonlBatches(file))).toEqual(records);
      }),
      { numRuns: 25 },
    );
  });

  it("writes real gzip and zstd that other decoders read", async () => {
    const records = Array.from({ length: 3000 }, (_, i) => ({ i, text: `row ${i} ` + "é".repeat(i % 7) }));
    const expected = records.map((r) => JSON.stringify(r) + "\n").join("");
    for (const [name, decode] of [
      ["x.jsonl.gz", gunzipSync],
      ["x.jsonl.zst", zstd.decompress],
    ] as const) {
      const file = path.join(dir, name);
      const w = JsonlWriter.create(file);
      await w.writeMany(records);
      await w.close();
      expect(decode(await readFile(file)).toString("utf8")).toBe(expected);
    }
  });

  it("streams a file larger than one chunk, splitting multi-byte characters across chunks", async () => {
    const records = Array.from({ length: 40_000 }, (_, i) => ({ i, s: "ü€😀".repeat((i % 13) + 1) }));
    const file = path.join(dir, "big.jsonl.gz");
    await writeFile(file, gzipSync(records.map((r) => JSON.stringify(r)).join("\n")));
    let batches = 0;
    const got: unknown[] = [];
    for await (const b of readJsonlBatches(file)) {
      batches++;
      got.push(...b);
    }
    expect(batches).toBeGreaterThan(1);
    expect(got).toEqual(records);
  });

  it("reads zstd written by another encoder, a byte order mark, CRLF line ends and blank lines", async () => {
    const file = path.join(dir, "crlf.jsonl.zst");
    await writeFile(file, zstd.compress(Buffer.from('\uFEFF{"a":1}\r\n\r\n  \n{"a":2}\r\n')));
    const got: unknown[] = [];
    for await (const r of readJsonl(file)) got.push(r);
    expect(got).toEqual([{ a: 1 }, { a: 2 }]);
  });

  it("names file and line of a malformed record under policy fail", async () => {
    const file = path.join(dir, "bad.jsonl");
    await writeFile(file, '{"a":1}\n\n{"a":2}\n{"a":\n{"a":3}\n');
    const err = await collect(readJsonlBatches(file)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("BAD_RECORD");
    expect((err as ZephyrError).message).toContain(`${file}:4:`);
  });

  it("skips and counts malformed lines under policy skip", async () => {
    const file = path.join(dir, "bad.jsonl.gz");
    const lines = Array.from({ length: 5000 }, (_, i) => (i % 1000 === 7 ? `{broken ${i}` : JSON.stringify({ i })));
    await writeFile(file, gzipSync(lines.join("\n") + "\n"));
    const stats: ReadStats = { skipped: 0 };
    const seen: BadRecord[] = [];
    const got = await collect(readJsonlBatches<{ i: number }>(file, { onBadRecord: "skip", stats, onSkip: (b) => seen.push(b) }));
    expect(stats.skipped).toBe(5);
    expect(seen.map((b) => b.line)).toEqual([8, 1008, 2008, 3008, 4008]);
    expect(seen.every((b) => b.path === file)).toBe(true);
    expect(got.map((r) => r.i)).toEqual(lines.map((_, i) => i).filter((i) => i % 1000 !== 7));
  });

  it("reports a corrupt gzip file as an IO error naming the file", async () => {
    const file = path.join(dir, "corrupt.jsonl.gz");
    const good = gzipSync(Buffer.from('{"a":1}\n'.repeat(1000)));
    await writeFile(file, Buffer.concat([good.subarray(0, 20), Buffer.alloc(40, 7)]));
    const err = await collect(readJsonlBatches(file)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("IO");
    expect((err as ZephyrError).message).toContain(file);
  });

  it("finds every bad line under both policies, across chunk boundaries (property)", async () => {
    const lineArb = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({ s: fc.string({ maxLength: 3000, unit: "binary" }) }).map((r) => ({ good: true as const, text: JSON.stringify(r), value: r as unknown })),
      },
      { weight: 1, arbitrary: fc.constantFrom("{", "nope", '{"a":}', "[1,,2]").map((t) => ({ good: false as const, text: t, value: undefined as unknown })) },
      { weight: 1, arbitrary: fc.constantFrom("", "  ", "\r").map((t) => ({ good: null, text: t, value: undefined as unknown })) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(lineArb, { maxLength: 120 }), fc.boolean(), async (lines, gz) => {
        const file = path.join(dir, gz ? "prop.jsonl.gz" : "prop.jsonl");
        const body = Buffer.from(lines.map((l) => l.text).join("\n"));
        await writeFile(file, gz ? gzipSync(body) : body);
        const badLines = lines.flatMap((l, i) => (l.good === false ? [i + 1] : []));
        const stats: ReadStats = { skipped: 0 };
        const seen: number[] = [];
        const got = await collect(readJsonlBatches(file, { onBadRecord: "skip", stats, onSkip: (b) => seen.push(b.line) }));
        expect(got).toEqual(lines.filter((l) => l.good === true).map((l) => l.value));
        expect(seen).toEqual(badLines);
        expect(stats.skipped).toBe(badLines.length);
        const err = await collect(readJsonlBatches(file)).then(
          () => undefined,
          (e: unknown) => e as ZephyrError,
        );
        if (badLines.length === 0) expect(err).toBeUndefined();
        else expect(err?.message).toContain(`${file}:${badLines[0]}:`);
      }),
      { numRuns: 30 },
    );
  });

  it("reports a missing file as an IO error naming it", async () => {
    const missing = path.join(dir, "missing.jsonl.zst");
    await expect(collect(readJsonlBatches(missing))).rejects.toMatchObject({ code: "IO", message: expect.stringContaining(missing) });
  });

  it("reads concatenated gzip members and reports a truncated gzip file as IO", async () => {
    const multi = path.join(dir, "multi.jsonl.gz");
    await writeFile(multi, Buffer.concat([gzipSync('{"a":1}\n'), gzipSync('{"a":2}\n')]));
    expect(await collect(readJsonlBatches(multi))).toEqual([{ a: 1 }, { a: 2 }]);
    const truncated = path.join(dir, "truncated.jsonl.gz");
    const full = gzipSync('{"a":1}\n'.repeat(5000));
    await writeFile(truncated, full.subarray(0, full.length - 10));
    await expect(collect(readJsonlBatches(truncated))).rejects.toMatchObject({ code: "IO", message: expect.stringContaining(truncated) });
  });

  it("refuses records without a JSON form and writes after close", async () => {
    const w = JsonlWriter.create(path.join(dir, "refuse.jsonl"));
    await expect(w.write(undefined)).rejects.toMatchObject({ code: "BAD_RECORD" });
    await expect(w.write({ n: 1n })).rejects.toBeInstanceOf(ZephyrError);
    await w.write({ ok: true });
    expect(await w.close()).toMatchObject({ count: 1 });
    await expect(w.write({})).rejects.toThrow(/closed/);
  });

  it("reports a missing directory as an IO error", async () => {
    const w = JsonlWriter.create(path.join(dir, "no-such-dir", "x.jsonl"));
    await w.write({ a: 1 });
    await expect(w.close()).rejects.toMatchObject({ code: "IO" });
  });
});
