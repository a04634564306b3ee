// Parquet: a row-group-at-a-time reader (hyparquet) with projection and filter pushdown, and a
// bounded-memory writer (hyparquet-writer, ZSTD) with explicit or inferred column types.
// Over 500 lines: the format's two directions kept together with their shared column-type
// vocabulary (ParquetColumnType, INT64 as bigint); the writer class alone is ~220 lines.
import { statSync } from "node:fs";
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from "hyparquet";
import type { AsyncBuffer, FileMetaData, ParquetQueryFilter } from "hyparquet";
import { compressors as decompressors } from "hyparquet-compressors";
import { ParquetWriter, fileWriter } from "hyparquet-writer";
import { ZephyrError } from "../errors.ts";
import { zstd } from "./files.ts";

/** Comparison operators on one column (MongoDB-style, as hyparquet evaluates them). */
export interface ParquetPredicate {
  $eq?: unknown;
  $ne?: unknown;
  $gt?: unknown;
  $gte?: unknown;
  $lt?: unknown;
  $lte?: unknown;
  $in?: readonly unknown[];
  $nin?: readonly unknown[];
  $not?: ParquetPredicate;
}

/** A row filter: `{ column: predicate }` (all must hold), or `$and` / `$or` / `$nor` of filters. */
export type ParquetFilter =
  | { readonly $and: readonly ParquetFilter[] }
  | { readonly $or: readonly ParquetFilter[] }
  | { readonly $nor: readonly ParquetFilter[] }
  | { readonly [column: string]: ParquetPredicate };

/** Options of {@link readParquetBatches}. */
export interface ReadParquetOptions {
  /** Top-level columns to read (default: all). Only these column chunks are fetched and decoded. */
  columns?: readonly string[];
  /**
   * Rows to keep. Pushed down in two ways: row groups whose column statistics (min/max, null
   * count) prove no row can match are not read at all (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`,
   * `$in`, `$nin` under `$and`/`$or`/`$nor`), and the remaining rows are filtered while decoded.
   * Filter columns need not be in `columns`; they are read and dropped.
   */
  filter?: ParquetFilter;
  /** Most rows per yielded batch (default 8192). */
  batchRows?: number;
  /**
   * Only row groups with index in `[start, end)` (default: all). Splits one large file into
   * row-group-aligned shards; {@link readParquetInfo} tells how many row groups a file has.
   */
  rowGroups?: { readonly start: number; readonly end: number };
  /** Counters of this read (pass the same object to several reads to total them). */
  stats?: ParquetReadStats;
}

/** What a Parquet read did. */
export interface ParquetReadStats {
  /** Row groups in the files read. */
  rowGroups: number;
  /** Row groups that were decoded (the rest were skipped by statistics). */
  rowGroupsRead: number;
  /** Bytes fetched from the files (footer included). */
  bytesRead: number;
}

/** A top-level column of a Parquet file. */
export interface ParquetColumnInfo {
  readonly name: string;
  /** Physical type (`INT64`, `BYTE_ARRAY`, …), or `GROUP` for a nested column. */
  readonly type: string;
  /** Converted or logical type when present (`UTF8`, `JSON`, `TIMESTAMP_MILLIS`, …). */
  readonly logicalType?: string;
}

/** The shape of a Parquet file, read from its footer only. */
export interface ParquetFileInfo {
  readonly numRows: number;
  readonly rowGroups: readonly { readonly numRows: number }[];
  readonly columns: readonly ParquetColumnInfo[];
}

function countingFile(file: AsyncBuffer, stats: ParquetReadStats | undefined): AsyncBuffer {
  if (!stats) return file;
  return {
    byteLength: file.byteLength,
    slice(start: number, end?: number) {
      stats.bytesRead += (end ?? file.byteLength) - start;
      return file.slice(start, end);
    },
  };
}

const readDecompressors = ((): typeof decompressors => {
  try {
    const native = zstd();
    // The native decoder is several times faster than the pure-JS fallback.
    return { ...decompressors, ZSTD: (input: Uint8Array) => native.decompress(input) };
  } catch {
    return decompressors;
  }
})();

async function openParquet(filePath: string, stats?: ParquetReadStats): Promise<{ file: AsyncBuffer; metadata: FileMetaData }> {
  try {
    const file = countingFile(await asyncBufferFromFile(filePath), stats);
    const metadata = await parquetMetadataAsync(file);
    return { file, metadata };
  } catch (cause) {
    throw new ZephyrError("IO", `reading Parquet footer of ${filePath} failed: ${(cause as Error).message}`, { cause });
  }
}

function topLevelColumns(metadata: FileMetaData): ParquetColumnInfo[] {
  return parquetSchema(metadata).children.map((c) => {
    const e = c.element;
    const logical = e.logical_type?.type ?? e.converted_type;
    return { name: e.name, type: c.children.length > 0 ? "GROUP" : (e.type ?? "GROUP"), ...(logical ? { logicalType: String(logical) } : {}) };
  });
}

/** Reads the footer of a Parquet file: row count, row groups and top-level columns. */
export async function readParquetInfo(filePath: string): Promise<ParquetFileInfo> {
  const { metadata } = await openParquet(filePath);
  return {
    numRows: Number(metadata.num_rows),
    rowGroups: metadata.row_groups.map((g) => ({ numRows: Number(g.num_rows) })),
    columns: topLevelColumns(metadata),
  };
}

/** Plain 64-bit integer columns: their values come back as bigint and become numbers when safe. */
function int64Columns(columns: readonly ParquetColumnInfo[]): Set<string> {
  return new Set(
    columns
      .filter((c) => c.type === "INT64" && (c.logicalType === undefined || c.logicalType === "INTEGER" || c.logicalType === "INT_64" || c.logicalType === "UINT_64"))
      .map((c) => c.name),
  );
}

/** Integer filter values on INT64 columns become bigint, so strict equality matches decoded values. */
function normaliseFilter(filter: ParquetFilter, int64: Set<string>, known: Set<string>, filePath: string): ParquetQueryFilter {
  const big = (v: unknown): unknown => (typeof v === "number" && Number.isInteger(v) ? BigInt(v) : v);
  const pred = (p: ParquetPredicate, isInt: boolean): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [op, v] of Object.entries(p)) {
      if (op === "$not") out[op] = pred(v as ParquetPredicate, isInt);
      else if (!isInt) out[op] = v;
      else out[op] = Array.isArray(v) ? v.map(big) : big(v);
    }
    return out;
  };
  const walk = (f: ParquetFilter): ParquetQueryFilter => {
    for (const op of ["$and", "$or", "$nor"] as const) {
      if (op in f) return { [op]: (f as Record<string, readonly ParquetFilter[]>)[op].map(walk) } as ParquetQueryFilter;
    }
    const out: Record<string, unknown> = {};
    for (const [column, p] of Object.entries(f as Record<string, ParquetPredicate>)) {
      if (!known.has(column)) {
        throw new ZephyrError("INVALID_ARGUMENT", `filter on column "${column}", which ${filePath} does not have (columns: ${[...known].join(", ")})`);
      }
      out[column] = typeof p === "object" && p !== null && !Array.isArray(p) ? pred(p, int64.has(column)) : { $eq: int64.has(column) ? big(p) : p };
    }
    return out as ParquetQueryFilter;
  };
  return walk(filter);
}

/**
 * Streams the rows of a Parquet file as arrays of objects, one row group at a time (memory is
 * bounded by the largest row group), with column projection and the filter pushed into the
 * reader (see {@link ReadParquetOptions.filter}). Top-level INT64 values become numbers when
 * within ±(2^53 − 1) and stay bigint otherwise; every codec hyparquet-compressors knows is read.
 */
export async function* readParquetBatches<T = Record<string, unknown>>(filePath: string, options: ReadParquetOptions = {}): AsyncGenerator<T[], void, undefined> {
  const batchRows = options.batchRows ?? 8192;
  if (!Number.isInteger(batchRows) || batchRows < 1) throw new ZephyrError("INVALID_ARGUMENT", `batchRows: expected a positive integer, got ${batchRows}`);
  const stats = options.stats;
  const { file, metadata } = await openParquet(filePath, stats);
  const columns = topLevelColumns(metadata);
  const known = new Set(columns.map((c) => c.name));
  for (const c of options.columns ?? []) {
    if (!known.has(c)) throw new ZephyrError("INVALID_ARGUMENT", `column "${c}" is not in ${filePath} (columns: ${[...known].join(", ")})`);
  }
  const int64 = int64Columns(columns);
  const convert = [...int64].filter((c) => !options.columns || options.columns.includes(c));
  const filter = options.filter ? normaliseFilter(options.filter, int64, known, filePath) : undefined;
  const projection = options.columns ? [...options.columns] : undefined;

  const span = options.rowGroups ?? { start: 0, end: metadata.row_groups.length };
  if (!Number.isInteger(span.start) || !Number.isInteger(span.end) || span.start < 0 || span.end < span.start) {
    throw new ZephyrError("INVALID_ARGUMENT", `rowGroups: expected integers 0 ≤ start ≤ end, got [${span.start}, ${span.end})`);
  }
  let groupStart = 0;
  for (let g = 0; g < metadata.row_groups.length; g++) {
    const groupRows = Number(metadata.row_groups[g].num_rows);
    const rowStart = groupStart;
    groupStart += groupRows;
    if (g < span.start || g >= span.end) continue;
    if (stats) stats.rowGroups++;
    if (groupRows === 0) continue;
    const before = stats?.bytesRead ?? 0;
    let rows: Record<string, unknown>[];
    try {
      rows = await parquetReadObjects({ file, metadata, columns: projection, filter, rowStart, rowEnd: rowStart + groupRows, compressors: readDecompressors });
    } catch (cause) {
      throw new ZephyrError("IO", `reading row group at row ${rowStart} of ${filePath} failed: ${(cause as Error).message}`, { cause });
    }
    if (stats && stats.bytesRead > before) stats.rowGroupsRead++;
    if (convert.length > 0) {
      for (const row of rows) {
        for (const c of convert) {
          const v = row[c];
          if (typeof v === "bigint" && v <= MAX_SAFE && v >= -MAX_SAFE) row[c] = Number(v);
        }
      }
    }
    for (let i = 0; i < rows.length; i += batchRows) yield (i === 0 && rows.length <= batchRows ? rows : rows.slice(i, i + batchRows)) as T[];
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Column types the writer accepts. JavaScript numbers are written as DOUBLE unless told otherwise. */
export type ParquetColumnType = "BOOLEAN" | "INT32" | "INT64" | "FLOAT" | "DOUBLE" | "STRING" | "BYTE_ARRAY" | "JSON" | "TIMESTAMP";

/** One column of an explicit Parquet schema. */
export interface ParquetColumn {
  readonly name: string;
  readonly type: ParquetColumnType;
  /** Whether nulls are allowed (default true). */
  readonly nullable?: boolean;
}

/** Options of {@link ParquetFileWriter.create}. */
export interface ParquetWriterOptions {
  /**
   * An explicit schema: a contract, never widened; a record with another field or a value of the
   * wrong type is a `BAD_RECORD` error. Without it the schema is inferred (see the class doc).
   */
  columns?: readonly ParquetColumn[];
  /** Most rows per row group (default 10,000). */
  rowGroupRows?: number;
  /** Estimated bytes per row group before it is written (default 32 MiB): bounds the writer's memory. */
  rowGroupBytes?: number;
  /** Compression (default `ZSTD`, level {@link ParquetWriterOptions.zstdLevel}). */
  codec?: "ZSTD" | "SNAPPY" | "UNCOMPRESSED";
  /** zstd level (default 3). */
  zstdLevel?: number;
}

type Inferred = ParquetColumnType | "NULL";
// hyparquet-writer pins its own hyparquet version; use its schema type, not the reader's.
type SchemaElement = ParquetWriter["schema"][number];

function typeOfValue(v: unknown): Inferred {
  if (v === null || v === undefined) return "NULL";
  switch (typeof v) {
    case "boolean":
      return "BOOLEAN";
    case "number":
      return "DOUBLE";
    case "bigint":
      return "INT64";
    case "string":
      return "STRING";
    default:
      if (v instanceof Uint8Array) return "BYTE_ARRAY";
      if (v instanceof Date) return "TIMESTAMP";
      return "JSON";
  }
}

/** The null-only placeholder: a chunk of nulls holds no values, so its type can still change. */
const PLACEHOLDER: SchemaElement = { name: "", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" };

function schemaElement(name: string, type: ParquetColumnType, nullable: boolean): SchemaElement {
  const repetition_type = nullable ? "OPTIONAL" : "REQUIRED";
  switch (type) {
    case "STRING":
      return { name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type };
    case "JSON":
      return { name, type: "BYTE_ARRAY", converted_type: "JSON", repetition_type };
    case "TIMESTAMP":
      return { name, type: "INT64", converted_type: "TIMESTAMP_MILLIS", repetition_type };
    default:
      return { name, type, repetition_type };
  }
}

const DEFAULT_ROW_GROUP_ROWS = 10_000;
const DEFAULT_ROW_GROUP_BYTES = 32 * 1024 * 1024;

/**
 * Writes records (plain objects) as one Parquet file at exactly the path given, one row group
 * per `rowGroupRows` rows or `rowGroupBytes` estimated bytes, whichever comes first, so memory
 * stays bounded by one row group.
 *
 * Inferred schemas: columns are the top-level keys in order of first appearance; types come from the values (boolean → BOOLEAN, number → DOUBLE, bigint → INT64,
 * string → STRING, Uint8Array → BYTE_ARRAY, Date → TIMESTAMP, objects and arrays → JSON); a
 * column that is null so far is **widened** to the first concrete type seen later (any row group),
 * and a top-level key first seen after some row groups were written becomes a new column (null in
 * those row groups). A real conflict (a DOUBLE column receiving a string) is a `BAD_RECORD` error
 * showing the schema and the record's types.
 *
 * @example
 * const w = ParquetFileWriter.create("/tmp/part-0.parquet");
 * await w.writeMany(rows);
 * const { count, bytes } = await w.close();
 */
export class ParquetFileWriter {
  readonly path: string;
  private readonly explicit: boolean;
  private readonly rowGroupRows: number;
  private readonly rowGroupBytes: number;
  private readonly codec: "ZSTD" | "SNAPPY" | "UNCOMPRESSED";
  private readonly zstdLevel: number;
  private names: string[] = [];
  private types: Inferred[] = [];
  private nullable: boolean[] = [];
  private index = new Map<string, number>();
  private rows: Record<string, unknown>[] = [];
  private rowBytes = 0;
  private count = 0;
  private pq: ParquetWriter | undefined;
  private closed = false;

  private constructor(filePath: string, options: ParquetWriterOptions) {
    this.path = filePath;
    this.rowGroupRows = options.rowGroupRows ?? DEFAULT_ROW_GROUP_ROWS;
    this.rowGroupBytes = options.rowGroupBytes ?? DEFAULT_ROW_GROUP_BYTES;
    this.codec = options.codec ?? "ZSTD";
    this.zstdLevel = options.zstdLevel ?? 3;
    this.explicit = options.columns !== undefined;
    for (const c of options.columns ?? []) {
      if (this.index.has(c.name)) throw new ZephyrError("INVALID_ARGUMENT", `parquet columns: "${c.name}" appears twice`);
      this.index.set(c.name, this.names.length);
      this.names.push(c.name);
      this.types.push(c.type);
      this.nullable.push(c.nullable ?? true);
    }
  }

  /** Validates the options; the file is created at the first row group (or at close). */
  static create(filePath: string, options: ParquetWriterOptions = {}): ParquetFileWriter {
    for (const [k, v] of [
      ["rowGroupRows", options.rowGroupRows],
      ["rowGroupBytes", options.rowGroupBytes],
    ] as const) {
      if (v !== undefined && (!Number.isInteger(v) || v < 1)) throw new ZephyrError("INVALID_ARGUMENT", `parquet ${k}: expected a positive integer, got ${v}`);
    }
    if (options.codec === "ZSTD" || options.codec === undefined) zstd();
    return new ParquetFileWriter(filePath, options);
  }

  /** Appends one record (a plain object). */
  async write(record: unknown): Promise<void> {
    this.append(record);
    if (this.rows.length >= this.rowGroupRows || this.rowBytes >= this.rowGroupBytes) this.flush();
  }

  /** Appends records in order. */
  async writeMany(records: Iterable<unknown>): Promise<void> {
    for (const r of records) {
      this.append(r);
      if (this.rows.length >= this.rowGroupRows || this.rowBytes >= this.rowGroupBytes) this.flush();
    }
  }

  /** Writes the last row group and the footer; reports rows and file bytes. */
  async close(): Promise<{ count: number; bytes: number }> {
    if (this.closed) throw new ZephyrError("INVALID_ARGUMENT", `${this.path}: parquet writer is closed`);
    this.flush(true);
    this.closed = true;
    try {
      await (this.pq as ParquetWriter).finish();
    } catch (cause) {
      throw new ZephyrError("IO", `finishing ${this.path} failed: ${(cause as Error).message}`, { cause });
    }
    return { count: this.count, bytes: statSync(this.path).size };
  }

  /** Stops writing; what was written is left for the caller to remove. */
  async abort(): Promise<void> {
    this.closed = true;
    this.rows = [];
  }

  private append(record: unknown): void {
    if (this.closed) throw new ZephyrError("INVALID_ARGUMENT", `${this.path}: parquet writer is closed`);
    if (record === null || typeof record !== "object" || Array.isArray(record)) {
      throw new ZephyrError(
        "BAD_RECORD",
        `${this.path}: record #${this.count} is not an object (got ${record === null ? "null" : Array.isArray(record) ? "an array" : typeof record})`,
      );
    }
    const row = record as Record<string, unknown>;
    let bytes = 16;
    for (const key in row) {
      const v = row[key];
      let i = this.index.get(key);
      if (i === undefined) {
        if (v === undefined) continue;
        if (this.explicit) throw this.conflict(row, `field "${key}" is not in the schema`);
        i = this.names.length;
        this.index.set(key, i);
        this.names.push(key);
        this.types.push("NULL");
        this.nullable.push(true);
      }
      const t = typeOfValue(v);
      const want = this.types[i];
      if (t === "NULL") {
        if (!this.nullable[i]) throw this.conflict(row, `column "${key}" is not nullable`);
      } else if (want === "NULL") {
        this.types[i] = t;
      } else if (t !== want && !compatible(want, t, v)) {
        throw this.conflict(row, `column "${key}" is ${want} but the value is ${t}`);
      }
      bytes += typeof v === "string" ? v.length : v instanceof Uint8Array ? v.byteLength : t === "JSON" ? 64 : 8;
    }
    this.rows.push(row);
    this.rowBytes += bytes;
    this.count++;
  }

  private conflict(row: Record<string, unknown>, what: string): ZephyrError {
    const schema = this.names.map((n, i) => `${n}: ${this.types[i]}`).join(", ");
    const got = Object.keys(row)
      .map((k) => `${k}: ${typeOfValue(row[k])}`)
      .join(", ");
    return new ZephyrError("BAD_RECORD", `${this.path}: record #${this.count}: ${what}; schema {${schema}}, record {${got}}`);
  }

  private open(): ParquetWriter {
    if (this.pq) return this.pq;
    const schema: SchemaElement[] = [{ name: "root", num_children: this.names.length }];
    for (let i = 0; i < this.names.length; i++) schema.push(this.elementOf(i));
    const level = this.zstdLevel;
    this.pq = new ParquetWriter({
      writer: fileWriter(this.path),
      schema,
      codec: this.codec,
      compressors: this.codec === "ZSTD" ? { ZSTD: (input: Uint8Array) => zstd().compress(input, { compressionLevel: level }) } : {},
    });
    return this.pq;
  }

  private elementOf(i: number): SchemaElement {
    const t = this.types[i];
    return t === "NULL" ? { ...PLACEHOLDER, name: this.names[i] } : schemaElement(this.names[i], t, this.nullable[i]);
  }

  /** Writes the buffered rows as one row group (and the footer's schema so far). */
  private flush(force = false): void {
    if (this.rows.length === 0 && !(force && this.pq === undefined)) return;
    let pq: ParquetWriter;
    try {
      pq = this.open();
    } catch (cause) {
      throw new ZephyrError("IO", `creating ${this.path} failed: ${(cause as Error).message}`, { cause });
    }
    this.addLateColumns(pq);
    this.widen(pq);
    if (this.rows.length === 0) return;
    const columnData = this.names.map((name, i) => ({ name, data: this.columnValues(name, this.types[i]) }));
    try {
      pq.write({ columnData, rowGroupSize: this.rows.length });
    } catch (cause) {
      throw new ZephyrError("IO", `writing a row group of ${this.path} failed: ${(cause as Error).message}`, { cause });
    }
    this.rows = [];
    this.rowBytes = 0;
  }

  /**
   * Adds columns first seen after row groups were written: each earlier row group gets a column
   * chunk of nulls, written now (Parquet locates every chunk by its own offset, so a chunk need
   * not sit next to the rest of its row group).
   */
  private addLateColumns(pq: ParquetWriter): void {
    const have = pq.schema.length - 1;
    if (have === this.names.length) return;
    for (let i = have; i < this.names.length; i++) {
      pq.schema.push(this.elementOf(i));
      pq.schema[0].num_children = pq.schema.length - 1;
      const groups = pq.row_groups.length;
      for (let g = 0; g < groups; g++) {
        const group = pq.row_groups[g];
        const rows = Number(group.num_rows);
        try {
          pq.write({ columnData: [{ name: this.names[i], data: new Array<null>(rows).fill(null) }], rowGroupSize: rows });
        } catch (cause) {
          throw new ZephyrError("IO", `writing nulls of late column "${this.names[i]}" to ${this.path} failed: ${(cause as Error).message}`, { cause });
        }
        // pq.write appended the chunk as a row group of its own: move it into row group g.
        const extra = pq.row_groups.pop() as (typeof pq.row_groups)[number];
        pq.num_rows -= extra.num_rows;
        group.columns.push(...extra.columns);
        group.total_byte_size += extra.total_byte_size;
        if (group.total_compressed_size !== undefined && extra.total_compressed_size !== undefined) group.total_compressed_size += extra.total_compressed_size;
      }
    }
  }

  /**
   * Replaces placeholders of columns that became concrete, in the schema and in the metadata of
   * row groups already written (their chunks of that column hold only nulls, so no bytes change).
   */
  private widen(pq: ParquetWriter): void {
    for (let i = 0; i < this.names.length; i++) {
      const element = pq.schema[i + 1];
      if (this.types[i] === "NULL" || element.type !== PLACEHOLDER.type || element.converted_type !== PLACEHOLDER.converted_type) continue;
      const next = this.elementOf(i);
      if (next.type === element.type && next.converted_type === element.converted_type) continue;
      pq.schema[i + 1] = next;
      for (const group of pq.row_groups) {
        const meta = group.columns[i].meta_data;
        if (meta) meta.type = next.type as NonNullable<typeof meta>["type"];
      }
    }
  }

  private columnValues(name: string, type: Inferred): unknown[] {
    const out = new Array<unknown>(this.rows.length);
    for (let r = 0; r < this.rows.length; r++) {
      const v = this.rows[r][name];
      out[r] = v === undefined || v === null ? null : coerce(type, v);
    }
    return out;
  }
}

/** Values an explicit column accepts besides its own inferred type. */
function compatible(want: Inferred, got: Inferred, v: unknown): boolean {
  if (got === "DOUBLE") return want === "FLOAT" || ((want === "INT32" || want === "INT64") && Number.isInteger(v));
  if (got === "INT64") return want === "DOUBLE" || want === "FLOAT" || want === "INT32";
  if (want === "JSON") return true;
  return false;
}

function coerce(type: Inferred, v: unknown): unknown {
  if (type === "INT64") return typeof v === "number" ? BigInt(v) : v;
  if ((type === "DOUBLE" || type === "FLOAT" || type === "INT32") && typeof v === "bigint") return Number(v);
  return v;
}
