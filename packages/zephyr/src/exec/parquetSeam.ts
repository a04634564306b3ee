// Parquet reading and writing for stages (the format code lives in src/io).
import { ZephyrError } from "../errors.ts";
import type { ColumnFilter } from "../plan/columnFilter.ts";

/** Streams the rows of a Parquet file in batches, reading only `columns` and rows passing `filter`. */
export async function* readParquetBatches(file: string, _opts: { columns?: readonly string[]; filter?: ColumnFilter }): AsyncGenerator<unknown[], void, undefined> {
  yield [];
  throw new ZephyrError("INTERNAL", `Parquet reading is not wired yet (${file})`);
}

/** A Parquet file writer. */
export interface ParquetSink {
  writeMany(records: Iterable<unknown>): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

/** Opens a Parquet writer at `file`. */
export async function openParquetWriter(file: string): Promise<ParquetSink> {
  throw new ZephyrError("INTERNAL", `Parquet writing is not wired yet (${file})`);
}
