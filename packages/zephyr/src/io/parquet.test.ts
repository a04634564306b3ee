// ParquetFileWriter and readParquetBatches: round trips, projections and filter pushdown by row-group statistics.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { asyncBufferFromFile, parquetMetadataAsync } from "hyparquet";
import { ParquetWriter, fileWriter } from "hyparquet-writer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ZephyrError } from "../errors.ts";
import { ParquetFileWriter, readParquetBatches, readParquetInfo } from "./parquet.ts";
import type { ParquetReadStats, ReadParquetOptions } from "./parquet.ts";

let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-parquet-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
const file = (): string => path.join(dir, `f${n++}.parquet`);

async function readAll(p: string, opts: ReadParquetOptions = {}): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for await (const b of readParquetBatches(p, opts)) out.push(...b);
  return out;
}

describe("ParquetFileWriter + readParquetBatches", () => {
  it("round-trips inferred columns of every kind", async () => {
    const rowArb = fc.record(
      {
        id: fc.integer(),
        score: fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => (Object.is(d, -0) ? 0 : d)),
        text: fc.option(fc.string(), { nil: null }),
        ok: fc.boolean(),
        tags: fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }),
        big: fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }),
      },
      // Optional keys may first appear in any row group.
      { requiredKeys: ["id", "score", "ok", "big"] },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { minLength: 1, maxLength: 60 }), fc.integer({ min: 1, max: 25 }), async (rows, rowGroupRows) => {
        const p = file();
        const w = ParquetFileWriter.create(p, { rowGroupRows });
        await w.writeMany(rows);
        expect((await w.close()).count).toBe(rows.length);
        const info = await readParquetInfo(p);
        expect(info.numRows).toBe(rows.length);
        expect(info.rowGroups.length).toBe(Math.ceil(rows.length / rowGroupRows));
        const got = await readAll(p);
        // Absent keys read back as null; safe INT64 values come back as numbers.
        const norm = (r: Record<string, unknown>) => ({
          id: r.id,
          score: r.score,
          text: r.text ?? null,
          ok: r.ok,
          tags: r.tags ?? null,
          big: typeof r.big === "bigint" && r.big <= BigInt(Number.MAX_SAFE_INTEGER) && r.big >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(r.big) : r.big,
        });
        expect(got.map(norm)).toEqual(rows.map(norm));
      }),
      { numRuns: 25 },
    );
  });

  it("widens a column that was null in earlier row groups", async () => {
    const p = file();
    const w = ParquetFileWriter.create(p, { rowGroupRows: 3 });
    const rows = Array.from({ length: 10 }, (_, i) => ({ i, late: i >= 7 ? i * 10 : null }));
    await w.writeMany(rows);
    await w.close();
    const info = await readParquetInfo(p);
    expect(info.columns).toContainEqual({ name: "late", type: "DOUBLE" });
    expect(await readAll(p)).toEqual(rows);
  });

  it("honours an explicit schema (INT64 from numbers) and rejects records that break it", async () => {
    const p = file();
    const w = ParquetFileWriter.create(p, {
      columns: [
        { name: "tok", type: "INT64", nullable: false },
        { name: "s", type: "STRING" },
      ],
    });
    await w.write({ tok: 2 ** 40, s: "a" });
    await w.write({ tok: 7n, s: null });
    await expect(w.write({ tok: 1, extra: true })).rejects.toMatchObject({ code: "BAD_RECORD" });
    await expect(w.write({ tok: 1.5 })).rejects.toThrow(/INT64/);
    await expect(w.write({ tok: null })).rejects.toThrow(/not nullable/);
    await w.close();
    expect((await readParquetInfo(p)).columns.map((c) => c.type)).toEqual(["INT64", "BYTE_ARRAY"]);
    expect(await readAll(p)).toEqual([
      { tok: 2 ** 40, s: "a" },
      { tok: 7, s: null },
    ]);
  });

  it("reports an inferred type conflict with both schemas", async () => {
    const w = ParquetFileWriter.create(file(), { rowGroupRows: 2 });
    await w.writeMany([{ a: 1 }, { a: 2 }]);
    const err = await w.write({ a: "x" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as Error).message).toMatch(/column "a" is DOUBLE but the value is STRING; schema \{a: DOUBLE\}, record \{a: STRING\}/);
  });

  it("adds top-level keys first seen after earlier row groups were written", async () => {
    const p = file();
    const w = ParquetFileWriter.create(p, { rowGroupRows: 4 });
    const rows: Record<string, unknown>[] = Array.from({ length: 11 }, (_, i) => ({ i, ...(i >= 5 ? { late: `v${i}` } : {}), ...(i === 9 ? { later: [i] } : {}) }));
    await w.writeMany(rows);
    await w.close();
    const info = await readParquetInfo(p);
    expect(info.columns.map((c) => c.name)).toEqual(["i", "late", "later"]);
    expect(info.rowGroups.map((g) => g.numRows)).toEqual([4, 4, 3]);
    expect(await readAll(p)).toEqual(rows.map((r) => ({ i: r.i, late: r.late ?? null, later: r.later ?? null })));
    expect(await readAll(p, { columns: ["later"], filter: { i: { $gte: 9 } } })).toEqual([{ later: [9] }, { later: null }]);
  });

  it("writes and reads an empty file", async () => {
    const p = file();
    const w = ParquetFileWriter.create(p, { columns: [{ name: "x", type: "STRING" }] });
    expect(await w.close()).toMatchObject({ count: 0 });
    expect(await readAll(p)).toEqual([]);
    const q = file();
    await ParquetFileWriter.create(q).close();
    expect((await readParquetInfo(q)).numRows).toBe(0);
  });

  it("projects columns and skips row groups by statistics", async () => {
    const p = file();
    const w = ParquetFileWriter.create(p, { rowGroupRows: 1000 });
    // Incompressible text, so the file is much larger than the footer read (hyparquet fetches the last 512 KiB at once).
    const rows = Array.from({ length: 10_000 }, (_, i) => ({ id: i, text: randomBytes(150).toString("hex"), lang: i % 2 ? "en" : "fr" }));
    await w.writeMany(rows);
    await w.close();

    const all: ParquetReadStats = { rowGroups: 0, rowGroupsRead: 0, bytesRead: 0 };
    expect((await readAll(p, { stats: all })).length).toBe(10_000);
    expect(all).toMatchObject({ rowGroups: 10, rowGroupsRead: 10 });

    const some: ParquetReadStats = { rowGroups: 0, rowGroupsRead: 0, bytesRead: 0 };
    const got = await readAll(p, { columns: ["id"], filter: { id: { $gte: 4200, $lt: 4205 } }, stats: some });
    expect(got).toEqual([4200, 4201, 4202, 4203, 4204].map((id) => ({ id })));
    expect(some.rowGroupsRead).toBe(1);
    expect(some.bytesRead).toBeLessThan(all.bytesRead / 3);
    const projected: ParquetReadStats = { rowGroups: 0, rowGroupsRead: 0, bytesRead: 0 };
    expect((await readAll(p, { columns: ["lang"], stats: projected })).slice(0, 2)).toEqual([{ lang: "fr" }, { lang: "en" }]);
    expect(projected.bytesRead).toBeLessThan(all.bytesRead / 3);

    const ors = await readAll(p, { columns: ["id", "lang"], filter: { $or: [{ id: { $lt: 2 } }, { id: { $in: [9998] } }] } });
    expect(ors).toEqual([
      { id: 0, lang: "fr" },
      { id: 1, lang: "en" },
      { id: 9998, lang: "fr" },
    ]);
    await expect(readAll(p, { columns: ["nope"] })).rejects.toThrow(/column "nope" is not in/);
    await expect(readAll(p, { filter: { nope: { $eq: 1 } } })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("pushed-down filters return exactly the rows an in-memory filter keeps (property)", async () => {
    // Long shared prefixes make the writer truncate string statistics (16 bytes by default).
    const prefix = "a-long-shared-prefix-";
    const rowArb = fc.record({ id: fc.integer({ min: -50, max: 50 }), s: fc.constantFrom("a", "b", "c", "d").map((c) => prefix + c), n: fc.bigInt({ min: -20n, max: 20n }) });
    const opArb = fc.constantFrom("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin");
    const predArb = fc.oneof(
      fc.tuple(fc.constant("id"), opArb, fc.integer({ min: -60, max: 60 }), fc.array(fc.integer({ min: -60, max: 60 }), { maxLength: 3 })),
      // An INT64 column filtered with plain numbers (the reader compares them as bigint).
      fc.tuple(fc.constant("n"), opArb, fc.integer({ min: -25, max: 25 }), fc.array(fc.integer({ min: -25, max: 25 }), { maxLength: 3 })),
      fc.tuple(
        fc.constant("s"),
        opArb,
        fc.constantFrom("a", "b", "c", "e").map((c) => prefix + c),
        fc.array(
          fc.constantFrom("a", "c").map((c) => prefix + c),
          { maxLength: 2 },
        ),
      ),
    );
    const holds = (v: number | string, op: string, x: number | string, xs: (number | string)[]): boolean =>
      op === "$eq"
        ? v === x
        : op === "$ne"
          ? v !== x
          : op === "$gt"
            ? v > x
            : op === "$gte"
              ? v >= x
              : op === "$lt"
                ? v < x
                : op === "$lte"
                  ? v <= x
                  : op === "$in"
                    ? xs.includes(v)
                    : !xs.includes(v);
    await fc.assert(
      fc.asyncProperty(
        fc.array(rowArb, { minLength: 1, maxLength: 80 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 20 }),
        fc.array(predArb, { minLength: 1, maxLength: 2 }),
        fc.boolean(),
        async (rows, sorted, rowGroupRows, preds, any) => {
          const data = sorted ? [...rows].sort((a, b) => a.id - b.id) : rows;
          const p = file();
          const w = ParquetFileWriter.create(p, { rowGroupRows });
          await w.writeMany(data);
          await w.close();
          const clauses = preds.map(([col, op, x, xs]) => ({ [col]: { [op]: op === "$in" || op === "$nin" ? xs : x } }));
          const filter = any ? { $or: clauses } : { $and: clauses };
          const keep = (r: { id: number; s: string; n: bigint }) => {
            const ok = preds.map(([col, op, x, xs]) => holds(col === "n" ? Number(r.n) : r[col as "id" | "s"], op, x, xs as (number | string)[]));
            return any ? ok.some(Boolean) : ok.every(Boolean);
          };
          expect(await readAll(p, { filter })).toEqual(data.filter(keep).map((r) => ({ ...r, n: Number(r.n) })));
        },
      ),
      { numRuns: 60 },
    );
  });

  it("reads a row-group-aligned span of a file", async () => {
    const p = file();
    const w = ParquetFileWriter.create(p, { rowGroupRows: 10 });
    await w.writeMany(Array.from({ length: 35 }, (_, i) => ({ i })));
    await w.close();
    expect((await readParquetInfo(p)).rowGroups.map((g) => g.numRows)).toEqual([10, 10, 10, 5]);
    const spans = [
      [0, 1],
      [1, 3],
      [3, 4],
    ] as const;
    const parts = await Promise.all(spans.map(async ([start, end]) => (await readAll(p, { rowGroups: { start, end } })).map((r) => r.i)));
    expect(parts.map((x) => x.length)).toEqual([10, 20, 5]);
    expect(parts.flat()).toEqual(Array.from({ length: 35 }, (_, i) => i));
    await expect(readAll(p, { rowGroups: { start: 2, end: 1 } })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("reads INT64 written by another writer as numbers when safe, filtering on them", async () => {
    const p = file();
    const pq = new ParquetWriter({
      writer: fileWriter(p),
      schema: [
        { name: "root", num_children: 1 },
        { name: "n", type: "INT64", repetition_type: "REQUIRED" },
      ],
    });
    pq.write({ columnData: [{ name: "n", data: [1n, 2n ** 60n, 3n] }], rowGroupSize: 2 });
    pq.finish();
    expect(await readAll(p)).toEqual([{ n: 1 }, { n: 2n ** 60n }, { n: 3 }]);
    expect(await readAll(p, { filter: { n: { $eq: 3 } } })).toEqual([{ n: 3 }]);
    const meta = await parquetMetadataAsync(await asyncBufferFromFile(p));
    expect(meta.row_groups.length).toBe(2);
  });

  it("reports a file that is not Parquet as an IO error naming it", async () => {
    const p = path.join(dir, "not.parquet");
    await import("node:fs/promises").then((fs) => fs.writeFile(p, "hello, not parquet at all"));
    await expect(readAll(p)).rejects.toMatchObject({ code: "IO", message: expect.stringContaining(p) });
  });
});
