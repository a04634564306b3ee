// Parquet reading and writing for stages (the format code lives in src/io/parquet.ts). Loaded on
// first use: hyparquet and its codecs are a sizeable import that most pipelines (and every worker
// thread starting up) would otherwise pay for.
import type { ColumnFilter } from "../plan/columnFilter.ts";

/**
 * Streams the rows of a Parquet file in batches, reading only `columns` and the rows passing
 * `filter` (row groups skipped by their statistics): the pushed-down part of a plan.
 */
export async function* readParquetBatches(file: string, opts: { columns?: readonly string[]; filter?: ColumnFilter }): AsyncGenerator<unknown[], void, undefined> {
  const { readParquetBatches: readBatches } = await import("../io/parquet.ts");
  yield* readBatches(file, { columns: opts.columns, filter: opts.filter });
}

/** A Parquet file writer. */
export interface ParquetSink {
  writeMany(records: Iterable<unknown>): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

/** Opens a Parquet writer at `file` (ZSTD, schema inferred and widened from the records). */
export async function openParquetWriter(file: string): Promise<ParquetSink> {
  const { ParquetFileWriter } = await import("../io/parquet.ts");
  return ParquetFileWriter.create(file);
}
