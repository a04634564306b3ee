// The logical plan: a source plus the ordered operations a Dataset records. Plain data plus user
// functions; the planner turns it into stages, and workers rebuild it from a pipeline module.
import type { BadRecordPolicy } from "../io/jsonl.ts";
import type { ColumnFilter } from "./columnFilter.ts";

/** What user functions receive besides the record: where they run, and user counters. */
export interface TaskContext {
  /** Index of the shard being processed (0-based). */
  readonly shard: number;
  /** Number of shards of this stage. */
  readonly numShards: number;
  /** Index of the stage in the plan. */
  readonly stage: number;
  /** Adds `n` (default 1) to the user counter `name`; totals come back with the run's stats. */
  counter(name: string, n?: number): void;
}

/** Where a Dataset's records come from. */
export type SourceSpec =
  | { readonly kind: "list"; readonly items: readonly unknown[]; readonly shards: number }
  | { readonly kind: "iterable"; readonly iterable: Iterable<unknown> | AsyncIterable<unknown> }
  | { readonly kind: "files"; readonly patterns: readonly string[] }
  | { readonly kind: "jsonl"; readonly patterns: readonly string[]; readonly onBadRecord: BadRecordPolicy; readonly invalidUtf8?: "replace" }
  | { readonly kind: "text"; readonly patterns: readonly string[]; readonly onBadRecord?: BadRecordPolicy; readonly invalidUtf8?: "replace" }
  | {
      readonly kind: "parquet";
      readonly patterns: readonly string[];
      readonly columns?: readonly string[];
      readonly filter?: ColumnFilter;
    };

/** Any user function; the planner only stores and the executor only calls them. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export type UserFn = Function;

/** One recorded operation. Per-record kinds fuse; the others cut stages. */
export type OpSpec =
  | { readonly kind: "map"; readonly fn: UserFn }
  | { readonly kind: "filter"; readonly fn: UserFn }
  | { readonly kind: "where"; readonly filter: ColumnFilter }
  | { readonly kind: "select"; readonly columns: readonly string[] }
  | { readonly kind: "flatMap"; readonly fn: UserFn }
  | { readonly kind: "mapShard"; readonly fn: UserFn }
  | { readonly kind: "window"; readonly size: number }
  | { readonly kind: "take"; readonly n: number }
  | { readonly kind: "reshard"; readonly shards: number }
  | { readonly kind: "groupBy"; readonly key: UserFn; readonly reducer: UserFn; readonly shards?: number }
  | { readonly kind: "deduplicate"; readonly key: UserFn; readonly shards?: number }
  | { readonly kind: "reduce"; readonly step: UserFn; readonly init: { readonly value: unknown } | undefined; readonly combine: UserFn }
  | {
      /**
       * A fixed-point loop (used by connected components): records scatter by `key`, each group
       * goes through `step` and the result through `emit`, again and again, until a round adds
       * nothing to the user counter `counter`; then `finish` reduces each group once.
       */
      readonly kind: "iterate";
      readonly key: UserFn;
      readonly step: UserFn;
      readonly emit: UserFn;
      readonly finish: UserFn;
      readonly counter: string;
      readonly roundsCounter: string;
      readonly maxRounds: number;
    }
  | {
      readonly kind: "join";
      readonly other: LogicalPlan;
      readonly key: UserFn;
      readonly joinKind: "inner" | "left";
      readonly shards?: number;
    };

/** A source and its operations, in order. */
export interface LogicalPlan {
  /** Where the records come from. */
  readonly source: SourceSpec;
  /** The recorded operations, in order. */
  readonly ops: readonly OpSpec[];
}

/** Operations that run record by record inside a stage (and so fuse). */
export const PER_RECORD_KINDS = new Set<OpSpec["kind"]>(["map", "filter", "where", "select", "flatMap", "mapShard", "window", "take"]);
