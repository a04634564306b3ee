// Dataset<T>: an immutable, lazy plan. Operations return new Datasets; sinks plan and hand the
// run to the coordinator (loaded on first use) through the contracts in exec/contracts.ts.
import { ZephyrError } from "./errors.ts";
import type { DatasetRunOptions, PipelineOrigin, RunOutcome, RunSource, RunStats, SinkOptions, SinkSpec, TokenCacheOptions, WriteOptions, WriteResult } from "./exec/contracts.ts";
import { cores } from "./exec/cores.ts";
import type { BadRecordPolicy, InvalidUtf8Policy } from "./io/jsonl.ts";
import { isColumnFilter } from "./plan/columnFilter.ts";
import type { ColumnFilter } from "./plan/columnFilter.ts";
import type { LogicalPlan, OpSpec, SourceSpec, TaskContext } from "./plan/ops.ts";
import { planStages } from "./plan/planner.ts";
import type { DatasetPlan } from "./plan/planner.ts";

/** Shard information handed to a `mapShard` function. */
export type ShardContext = TaskContext;

/** The pair a join yields: the left record and its match (`undefined` for an unmatched left join row). */
export type Joined<T, U> = [left: T, right: U];

/** Options of {@link Dataset.join}. */
export interface JoinOptions {
  /** `inner` (default): only matched pairs. `left`: every left record, with `undefined` when unmatched. */
  kind?: "inner" | "left";
  /** Number of output shards (default: the left side's). */
  shards?: number;
}

/** Options of the shuffling operations. */
export interface ShuffleOptions {
  /** Number of output shards (default: the input stage's). */
  shards?: number;
}

function checkPositiveInt(what: string, n: number): void {
  if (!Number.isInteger(n) || n <= 0) throw new ZephyrError("INVALID_ARGUMENT", `${what}: expected a positive integer, got ${String(n)}`);
}

function checkNonNegativeInt(what: string, n: number): void {
  if (!Number.isInteger(n) || n < 0) throw new ZephyrError("INVALID_ARGUMENT", `${what}: expected a non-negative integer, got ${String(n)}`);
}

function patternList(glob: string | readonly string[]): string[] {
  const list = typeof glob === "string" ? [glob] : [...glob];
  if (list.length === 0 || list.some((p) => typeof p !== "string" || p.length === 0)) {
    throw new ZephyrError("INVALID_ARGUMENT", `expected a glob pattern or a non-empty list of them, got ${JSON.stringify(glob)}`);
  }
  return list;
}

/**
 * An immutable, lazy dataset of records of type `T`. Operations record themselves and return a
 * new Dataset; nothing runs until a sink (`count`, `collect`, `writeJsonl`, `writeParquet`,
 * `writeTokenCache`) is awaited.
 *
 * *When to use:* for any batch transformation of records that may not fit in memory. Per-record
 * operations fuse into one pass; `groupBy`, `deduplicate`, `reshard`, `join` and `reduce` shuffle.
 *
 * @example
 * const n = await fromList([1, 2, 3, 4]).map((x) => x * 2).filter((x) => x > 2).count();
 */
export class Dataset<T> implements RunSource {
  /** The recorded source and operations (read by the planner). */
  readonly logical: LogicalPlan;
  /** Set only on a Dataset returned by a `definePipeline` build, untouched since. */
  readonly origin: PipelineOrigin | undefined;

  /** Use the source functions (`fromList`, `readJsonl`, …) instead. */
  constructor(logical: LogicalPlan, origin?: PipelineOrigin) {
    this.logical = logical;
    this.origin = origin;
  }

  private with<U>(op: OpSpec): Dataset<U> {
    return new Dataset<U>({ source: this.logical.source, ops: [...this.logical.ops, op] });
  }

  /** Transforms every record. */
  map<U>(fn: (record: T, ctx: TaskContext) => U): Dataset<U> {
    return this.with({ kind: "map", fn });
  }

  /**
   * Keeps the records for which `predicate` is truthy. A declarative {@link ColumnFilter} right
   * after `readParquet` is pushed into the reader.
   */
  filter<S extends T>(predicate: (record: T, ctx: TaskContext) => record is S): Dataset<S>;
  filter(predicate: ((record: T, ctx: TaskContext) => unknown) | ColumnFilter): Dataset<T>;
  filter(predicate: ((record: T, ctx: TaskContext) => unknown) | ColumnFilter): Dataset<T> {
    if (typeof predicate === "function") return this.with({ kind: "filter", fn: predicate });
    if (isColumnFilter(predicate)) return this.with({ kind: "where", filter: predicate });
    throw new ZephyrError("INVALID_ARGUMENT", `filter: expected a function or a column filter object, got ${typeof predicate}`);
  }

  /** Keeps only the named fields of each record (pushed into a Parquet read that it follows). */
  select<K extends keyof T & string>(...columns: K[]): Dataset<Pick<T, K>> {
    if (columns.length === 0) throw new ZephyrError("INVALID_ARGUMENT", "select: expected at least one column");
    return this.with({ kind: "select", columns });
  }

  /** Replaces every record by the records `fn` returns (any iterable, such as an array). */
  flatMap<U>(fn: (record: T, ctx: TaskContext) => Iterable<U>): Dataset<U> {
    return this.with({ kind: "flatMap", fn });
  }

  /**
   * Transforms a whole shard at once: `fn` receives the shard's records as an async iterable and
   * returns the output records (an iterable or async iterable).
   *
   * *When to use:* per-shard state (an in-shard dedup, a model loaded once). Slower per record
   * than `map`, because records cross an async iterator.
   */
  mapShard<U>(fn: (records: AsyncIterable<T>, ctx: ShardContext) => Iterable<U> | AsyncIterable<U>): Dataset<U> {
    return this.with({ kind: "mapShard", fn });
  }

  /** Groups consecutive records of each shard into arrays of `size` (the last one may be shorter). */
  window(size: number): Dataset<T[]> {
    checkPositiveInt("window", size);
    return this.with({ kind: "window", size });
  }

  /** Redistributes the records into `shards` shards of near-equal size, keeping their order. */
  reshard(shards: number): Dataset<T> {
    checkPositiveInt("reshard", shards);
    return this.with({ kind: "reshard", shards });
  }

  /**
   * Groups records by `key` (hash shuffle with spill files) and calls `reducer(key, records)` once
   * per key. Groups come out in no particular order.
   */
  groupBy<K, R>(key: (record: T) => K, reducer: (key: K, records: T[], ctx: TaskContext) => R, options: ShuffleOptions = {}): Dataset<R> {
    if (options.shards !== undefined) checkPositiveInt("groupBy shards", options.shards);
    return this.with({ kind: "groupBy", key, reducer, shards: options.shards });
  }

  /** Keeps one record per distinct `key` (the first one met in shard order). */
  deduplicate<K>(key: (record: T) => K, options: ShuffleOptions = {}): Dataset<T> {
    if (options.shards !== undefined) checkPositiveInt("deduplicate shards", options.shards);
    return this.with({ kind: "deduplicate", key, shards: options.shards });
  }

  /** Folds all records with `fn` (no record if the dataset is empty). `fn` must be associative. */
  reduce(fn: (a: T, b: T) => T): Dataset<T>;
  /**
   * Folds each shard from `init` with `step`, then merges the per-shard results with `combine`:
   * always exactly one record. `init` starts every shard's fold, so it must be neutral for
   * `combine` (0 for a sum, `[]` for a concatenation).
   */
  reduce<A>(step: (acc: A, record: T) => A, init: A, combine: (a: A, b: A) => A): Dataset<A>;
  reduce<A>(step: (acc: A, record: T) => A, ...rest: [] | [A, (a: A, b: A) => A]): Dataset<A> {
    if (rest.length === 0) return this.with({ kind: "reduce", step, init: undefined, combine: step });
    return this.with({ kind: "reduce", step, init: { value: rest[0] }, combine: rest[1] });
  }

  /**
   * Joins with `other` on equal keys (hash join: both sides shuffle by key). `key` is applied to
   * records of both sides. Inner joins yield `[left, right]` for each matching pair; left joins
   * also yield `[left, undefined]` for left records without a match.
   */
  join<U, K>(other: Dataset<U>, key: (record: T | U) => K, options: JoinOptions & { kind: "left" }): Dataset<Joined<T, U | undefined>>;
  join<U, K>(other: Dataset<U>, key: (record: T | U) => K, options?: JoinOptions & { kind?: "inner" }): Dataset<Joined<T, U>>;
  join<U, K>(other: Dataset<U>, key: (record: T | U) => K, options: JoinOptions = {}): Dataset<Joined<T, U | undefined>> {
    if (!(other instanceof Dataset)) throw new ZephyrError("INVALID_ARGUMENT", "join: expected a Dataset as the other side");
    const kind = options.kind ?? "inner";
    if (kind !== "inner" && kind !== "left") throw new ZephyrError("INVALID_ARGUMENT", `join kind: expected "inner" or "left", got ${JSON.stringify(kind)}`);
    if (options.shards !== undefined) checkPositiveInt("join shards", options.shards);
    return this.with({ kind: "join", other: other.logical, key, joinKind: kind, shards: options.shards });
  }

  /** The first `n` records in shard order. */
  take(n: number): Dataset<T> {
    checkNonNegativeInt("take", n);
    return this.with({ kind: "take", n });
  }

  /** The physical plan: stages, their fused operations, and the plan's fingerprint. */
  plan(): DatasetPlan {
    return planStages(this.logical);
  }

  /** The stages this Dataset would run, as text (same as `plan().explain()`). */
  explain(): string {
    return this.plan().explain();
  }

  /** Runs the plan and resolves to the number of records. */
  count(options?: DatasetRunOptions): Promise<number>;
  /** Runs the plan and resolves to the number of records and the run's counters. */
  count(options: DatasetRunOptions & { withStats: true }): Promise<{ count: number; stats: RunStats }>;
  async count(options: DatasetRunOptions & { withStats?: boolean } = {}): Promise<number | { count: number; stats: RunStats }> {
    const { value, stats } = await runPlan(this, { kind: "count" }, options);
    return options.withStats ? { count: value as number, stats } : (value as number);
  }

  /** Runs the plan and resolves to all records, in shard order. */
  collect(options?: DatasetRunOptions): Promise<T[]>;
  /** Runs the plan and resolves to all records and the run's counters. */
  collect(options: DatasetRunOptions & { withStats: true }): Promise<{ records: T[]; stats: RunStats }>;
  async collect(options: DatasetRunOptions & { withStats?: boolean } = {}): Promise<T[] | { records: T[]; stats: RunStats }> {
    const { value, stats } = await runPlan(this, { kind: "collect" }, options);
    return options.withStats ? { records: value as T[], stats } : (value as T[]);
  }

  /**
   * Writes one JSON Lines file per shard (gzip for `.gz`, zstd for `.zst`). `pattern` may use
   * `{shard}` and `{total}` (zero-padded to 5 digits); it must contain `{shard}` when there is more
   * than one shard. Each file appears atomically; a `_SUCCESS` manifest follows the last one.
   */
  async writeJsonl(pattern: string, options: WriteOptions = {}): Promise<WriteResult> {
    return (await runPlan(this, { kind: "jsonl", pattern }, options)).value as WriteResult;
  }

  /** Writes one Parquet file per shard (same pattern and commit rules as {@link writeJsonl}). */
  async writeParquet(pattern: string, options: WriteOptions = {}): Promise<WriteResult> {
    return (await runPlan(this, { kind: "parquet", pattern }, options)).value as WriteResult;
  }

  /**
   * Writes records of token ids (`number[]`, `Int32Array`/`Uint32Array`, or `{ ids }` /
   * `{ tokens }` objects) as a levanter token cache in `dir`. Needs `@marin/levanter`.
   */
  async writeTokenCache(dir: string, options: TokenCacheOptions = {}): Promise<WriteResult> {
    return (await runPlan(this, { kind: "tokenCache", dir }, options)).value as WriteResult;
  }
}

/**
 * The executor, loaded when a sink first runs: worker threads and iris tasks import a pipeline's
 * module (and so this one) only to rebuild its plan, and the coordinator's dependencies (option
 * schemas, the thread pool, progress bars) would add about a third to their start-up.
 */
async function runPlan(ds: RunSource, sink: SinkSpec, options: SinkOptions): Promise<RunOutcome> {
  // A definePipeline plan runs on threads unless told otherwise: start the pool first, so that
  // its workers load while this thread loads the coordinator and plans (~0.3 s on 2 cores).
  // (Options are checked by the coordinator; a bad thread count here only skips the early start.)
  if (ds.origin !== undefined && (options?.backend ?? "threads") === "threads") {
    (await import("./exec/threads.ts")).prestartThreadPool(options?.threads ?? cores());
  }
  const { runPlan: run } = await import("./exec/coordinator.ts");
  return run(ds, sink, options);
}

function source<T>(spec: SourceSpec): Dataset<T> {
  return new Dataset<T>({ source: spec, ops: [] });
}

/**
 * A Dataset of the given items, split into `shards` contiguous shards (default:
 * `min(items.length, cores)`, at least 1).
 */
export function fromList<T>(items: readonly T[], options: { shards?: number } = {}): Dataset<T> {
  if (!Array.isArray(items)) throw new ZephyrError("INVALID_ARGUMENT", "fromList: expected an array");
  const shards = options.shards ?? Math.max(1, Math.min(items.length, cores()));
  checkPositiveInt("fromList shards", shards);
  return source<T>({ kind: "list", items, shards });
}

/**
 * A one-shard Dataset streamed from an iterable or async iterable, read when the plan runs.
 * Inside a `definePipeline` module the build function (and so the iterable) is re-created on the
 * worker; elsewhere it runs inline.
 */
export function fromIterable<T>(iterable: Iterable<T> | AsyncIterable<T>): Dataset<T> {
  const ok = iterable != null && (typeof (iterable as Iterable<T>)[Symbol.iterator] === "function" || typeof (iterable as AsyncIterable<T>)[Symbol.asyncIterator] === "function");
  if (!ok) throw new ZephyrError("INVALID_ARGUMENT", "fromIterable: expected an iterable or async iterable");
  return source<T>({ kind: "iterable", iterable });
}

/** The paths matching `glob` (braces work; sorted), one shard per file, expanded when the plan runs. */
export function fromFiles(glob: string | readonly string[]): Dataset<string> {
  return source<string>({ kind: "files", patterns: patternList(glob) });
}

/** Options of {@link readJsonl}. */
export interface ReadJsonlOptions {
  /**
   * `fail` (default): a bad line (malformed JSON, invalid UTF-8, longer than 256 MiB) fails the run
   * as `BAD_RECORD` naming file and line. `skip`: drop and count it (counter `badRecords`).
   */
  onBadRecord?: BadRecordPolicy;
  /** `badRecord` (default): a line with invalid UTF-8 is a bad record. `replace`: read it with U+FFFD in place of each invalid sequence. */
  invalidUtf8?: InvalidUtf8Policy;
}

/** Options of {@link readText}. */
export type ReadTextOptions = ReadJsonlOptions;

function readerOptions(options: ReadJsonlOptions): { onBadRecord: BadRecordPolicy; invalidUtf8?: "replace" } {
  const onBadRecord = options.onBadRecord ?? "fail";
  if (onBadRecord !== "fail" && onBadRecord !== "skip") throw new ZephyrError("INVALID_ARGUMENT", `onBadRecord: expected "fail" or "skip", got ${JSON.stringify(onBadRecord)}`);
  const invalidUtf8 = options.invalidUtf8 ?? "badRecord";
  if (invalidUtf8 !== "badRecord" && invalidUtf8 !== "replace") throw new ZephyrError("INVALID_ARGUMENT", `invalidUtf8: expected "badRecord" or "replace", got ${JSON.stringify(invalidUtf8)}`);
  // Only a non-default choice goes into the plan, so plans (and fingerprints) without it are as before.
  return invalidUtf8 === "replace" ? { onBadRecord, invalidUtf8 } : { onBadRecord };
}

/** The records of the JSON Lines files matching `glob` (`.gz`/`.zst` by extension), one shard per file. */
export function readJsonl<T = unknown>(glob: string | readonly string[], options: ReadJsonlOptions = {}): Dataset<T> {
  return source<T>({ kind: "jsonl", patterns: patternList(glob), ...readerOptions(options) });
}

/**
 * The lines of the text files matching `glob` (compression by extension), one shard per file.
 * Bad lines (invalid UTF-8, longer than 256 MiB) follow `onBadRecord` as for {@link readJsonl}.
 */
export function readText(glob: string | readonly string[], options: ReadTextOptions = {}): Dataset<string> {
  const { onBadRecord, invalidUtf8 } = readerOptions(options);
  return source<string>({ kind: "text", patterns: patternList(glob), ...(onBadRecord === "skip" ? { onBadRecord } : {}), ...(invalidUtf8 ? { invalidUtf8 } : {}) });
}

/** Options of {@link readParquet}. */
export interface ReadParquetOptions {
  /** Read only these columns (also what a following `select` does). */
  columns?: readonly string[];
}

/**
 * The rows of the Parquet files matching `glob`, one shard per file. `select` and declarative
 * `filter`s directly after it are evaluated by the reader.
 */
export function readParquet<T = Record<string, unknown>>(glob: string | readonly string[], options: ReadParquetOptions = {}): Dataset<T> {
  return source<T>({ kind: "parquet", patterns: patternList(glob), columns: options.columns ? [...options.columns] : undefined });
}
