// Declarative row filters: plain data (so they can be pushed into a Parquet reader and
// fingerprinted), in the MongoDB-style shape hyparquet's query understands.
import type { ParquetFilter, ParquetPredicate } from "../io/parquet.ts";

/** Comparison operators on one column: the reader's own predicate shape (see io/parquet.ts). */
export type ColumnPredicate = ParquetPredicate;

/**
 * A row filter: `{ column: predicate }` (all must hold), or `$and` / `$or` / `$nor` of filters.
 * Right after `readParquet` it is evaluated by the reader (skipping row groups by statistics);
 * anywhere else it is evaluated record by record.
 *
 * @example
 * readParquet("data/*.parquet").filter({ score: { $gte: 0.5 }, lang: { $in: ["en", "fr"] } })
 */
export type ColumnFilter = ParquetFilter;

function compare(a: unknown, b: unknown): number {
  if (typeof a === "bigint" || typeof b === "bigint") {
    const x = typeof a === "bigint" ? a : BigInt(a as number);
    const y = typeof b === "bigint" ? b : BigInt(b as number);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
}

function eq(a: unknown, b: unknown): boolean {
  if (typeof a === "bigint" || typeof b === "bigint") return typeof a !== "object" && typeof b !== "object" && compare(a, b) === 0;
  return a === b;
}

function holds(value: unknown, p: ColumnPredicate): boolean {
  if ("$eq" in p && !eq(value, p.$eq)) return false;
  if ("$ne" in p && eq(value, p.$ne)) return false;
  if (p.$gt !== undefined && !(value != null && compare(value, p.$gt) > 0)) return false;
  if (p.$gte !== undefined && !(value != null && compare(value, p.$gte) >= 0)) return false;
  if (p.$lt !== undefined && !(value != null && compare(value, p.$lt) < 0)) return false;
  if (p.$lte !== undefined && !(value != null && compare(value, p.$lte) <= 0)) return false;
  if (p.$in !== undefined && !p.$in.some((v) => eq(value, v))) return false;
  if (p.$nin !== undefined && p.$nin.some((v) => eq(value, v))) return false;
  if (p.$not !== undefined && holds(value, p.$not)) return false;
  return true;
}

/** Whether `record` satisfies `filter` (the in-memory twin of the reader's evaluation). */
export function matchesFilter(record: unknown, filter: ColumnFilter): boolean {
  if ("$and" in filter) return (filter.$and as readonly ColumnFilter[]).every((f) => matchesFilter(record, f));
  if ("$or" in filter) return (filter.$or as readonly ColumnFilter[]).some((f) => matchesFilter(record, f));
  if ("$nor" in filter) return !(filter.$nor as readonly ColumnFilter[]).some((f) => matchesFilter(record, f));
  const row = record as Record<string, unknown>;
  for (const column of Object.keys(filter)) {
    if (!holds(row?.[column], (filter as Record<string, ColumnPredicate>)[column])) return false;
  }
  return true;
}

/** Whether a value passed to `filter` is a declarative filter rather than a function. */
export function isColumnFilter(value: unknown): value is ColumnFilter {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
