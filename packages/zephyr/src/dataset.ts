// Dataset<T>: an immutable, lazy plan. Operations return new Datasets; sinks plan and hand the
// run to the coordinator (loaded on first use) through the contracts in exec/contracts.ts.
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { ZephyrError } from "./errors.ts";
import type { DatasetRunOptions, PipelineOrigin, RunOutcome, RunSource, RunStats, SinkOptions, SinkSpec, TokenCacheOptions, WriteOptions, WriteResult } from "./exec/contracts.ts";
import { cores } from "./exec/cores.ts";
import type { BadRecordPolicy, InvalidUtf8Policy } from "./io/jsonl.ts";
import { isColumnFilter } from "./plan/columnFilter.ts";
import type { ColumnFilter } from "./plan/columnFilter.ts";
import type { LogicalPlan, OpSpec, SourceSpec, TaskContext } from "./plan/ops.ts";
import { planStages } from "./plan/planner.ts";
import type { DatasetPlan } from "./plan/planner.ts";
import { overlapFraction, sharedNgramFilter } from "./text/bloom.ts";
import type { BloomFilter } from "./text/bloom.ts";
import { bandBatches, fuzzyParams, groupEdges } from "./text/fuzzy.ts";
import type { BandBatch, FuzzyParams } from "./text/fuzzy.ts";
import { failedRules, QUALITY_RULE_NAMES, resolveRules } from "./text/quality.ts";
import type { QualityRules } from "./text/quality.ts";

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

/** Options of {@link Dataset.dedupFuzzy}. */
export interface DedupFuzzyOptions<T> {
  /** The text of a record. */
  text: (record: T) => string;
  /** Jaccard similarity (of word n-gram sets) from which two records are near-duplicates. Default 0.8. */
  threshold?: number;
  /** Words per shingle. Default 5. */
  ngram?: number;
  /** MinHash permutations. Default 128. */
  permutations?: number;
  /** Seed of the permutations. Default 1. */
  seed?: number;
  /** Check every candidate pair's exact Jaccard similarity (costs the texts in the shuffle). Default false. */
  verify?: boolean;
  /** LSH bands and rows (both, or neither: then derived from `threshold`). */
  bands?: number;
  rows?: number;
}

/** One evaluation set of {@link Dataset.decontaminate}: its texts, or a file of them. */
export interface EvalSet {
  /** Names the set in counters and marks. */
  name: string;
  /** The texts. */
  texts?: readonly string[];
  /** A file: JSON Lines (a `text` field per line; `.jsonl`, `.jsonl.gz`) or plain text (one text per line). */
  path?: string;
}

/** Options of {@link Dataset.decontaminate}. */
export interface DecontaminateOptions<T> {
  /** The text of a record. */
  text: (record: T) => string;
  /** The evaluation sets. */
  evalSets: readonly EvalSet[];
  /** Words per n-gram. Default 13. */
  ngram?: number;
  /** The Bloom filters' false-positive rate per n-gram. Default 1e-4. */
  falsePositiveRate?: number;
  /** A record counts as contaminated by a set when this fraction of its n-grams is in it. Default 0.05. */
  threshold?: number;
  /** `drop` (default) contaminated records, or `mark` them (field `contamination`). */
  mode?: "drop" | "mark";
  /** Where filter files go (default: `zephyr-filters` in the OS temp folder). */
  filterDir?: string;
}

/** What `decontaminate({ mode: "mark" })` adds to a contaminated record. */
export interface Contamination {
  /** The largest overlap fraction over the sets. */
  overlap: number;
  /** Overlap fraction per set that reached the threshold. */
  sets: Record<string, number>;
}

/** Options of {@link Dataset.qualityFilter}. */
export interface QualityFilterOptions<T> {
  /** The text of a record. */
  text: (record: T) => string;
  /** Rule thresholds over the defaults; `false` turns a rule off. */
  rules?: QualityRules;
}

function checkText(what: string, fn: unknown): void {
  if (typeof fn !== "function") throw new ZephyrError("INVALID_ARGUMENT", `${what}: text: expected a function (record) => string, got ${typeof fn}`);
}

function checkRange(what: string, v: unknown, lo: number, hi: number, open = false): void {
  if (typeof v !== "number" || !(open ? v > lo && v < hi : v >= lo && v <= hi)) {
    throw new ZephyrError("INVALID_ARGUMENT", `${what}: expected a number in ${open ? "(" : "["}${lo}, ${hi}${open ? ")" : "]"}, got ${String(v)}`);
  }
}

function readEvalSet(set: EvalSet): string[] {
  if (set.texts !== undefined) {
    if (!Array.isArray(set.texts) || set.texts.some((t) => typeof t !== "string"))
      throw new ZephyrError("INVALID_ARGUMENT", `decontaminate: evalSets "${set.name}": texts: expected an array of strings`);
    return [...set.texts];
  }
  const file = set.path!;
  let body: string;
  try {
    const raw = readFileSync(file);
    body = (file.endsWith(".gz") ? gunzipSync(raw) : raw).toString("utf8");
  } catch (e) {
    throw new ZephyrError("IO", `decontaminate: evalSets "${set.name}": cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  const lines = body.split("\n").filter((l) => l.trim().length > 0);
  if (!/\.jsonl(\.gz)?$/.test(file)) return lines;
  return lines.map((l, i) => {
    let v: unknown;
    try {
      v = JSON.parse(l);
    } catch {
      throw new ZephyrError("BAD_RECORD", `${file}:${i + 1}: malformed JSON line`);
    }
    const t = (v as { text?: unknown } | null)?.text;
    if (typeof t !== "string") throw new ZephyrError("BAD_RECORD", `${file}:${i + 1}: expected an object with a string "text" field`);
    return t;
  });
}

function withOp<U>(ds: Dataset<unknown>, op: OpSpec): Dataset<U> {
  return new Dataset<U>({ source: ds.logical.source, ops: [...ds.logical.ops, op] });
}

/** A CC node: [id, label, neighbours, active]; a message: [to, label]. */
type CcNode = [id: number, label: number, nbrs: number[], active: 0 | 1];
type CcMessage = [to: number, label: number];

/**
 * Connected components of an undirected graph given as edges `[u, v]` (ids are numbers; a
 * self-edge `[u, u]` adds a lone node), computed as a distributed job: min-label propagation,
 * one shuffle per round, until no label changes. Yields one `[id, component]` per node, where
 * `component` is the smallest id of its component. Counters: `<prefix>.rounds`,
 * `<prefix>.labelChanges`, `<prefix>.components` (components), `<prefix>.nonRoots` (nodes that
 * are not their component's smallest id).
 */
export function connectedComponents(edges: Dataset<readonly [number, number]>, options: { counterPrefix?: string } = {}): Dataset<[id: number, component: number]> {
  const prefix = options.counterPrefix ?? "components";
  const changed = `${prefix}.labelChanges`;
  const nodes = edges
    .flatMap((e): [number, number][] => {
      const [u, v] = e;
      if (typeof u !== "number" || typeof v !== "number") throw new ZephyrError("BAD_RECORD", `connectedComponents: expected an edge [number, number], got ${JSON.stringify(e)}`);
      return u === v
        ? [[u, v]]
        : [
            [u, v],
            [v, u],
          ];
    })
    .groupBy(
      (e) => e[0],
      (id, es): CcNode => {
        const nbrs = [...new Set(es.map((e) => e[1]))].filter((n) => n !== id);
        let label = id;
        for (const n of nbrs) if (n < label) label = n;
        return [id, label, nbrs, 1];
      },
    );
  return withOp(nodes as Dataset<unknown>, {
    kind: "iterate",
    key: (r: CcNode | CcMessage) => r[0],
    step: (id: number, rs: (CcNode | CcMessage)[], ctx: TaskContext): CcNode => {
      let node: CcNode | undefined;
      let min = Infinity;
      for (const r of rs) {
        if (r.length === 4) node = r;
        else if (r[1] < min) min = r[1];
      }
      if (!node) throw new ZephyrError("INTERNAL", `connectedComponents: a label was sent to node ${id}, which has no edges`);
      if (min < node[1]) {
        ctx.counter(changed);
        return [id, min, node[2], 1];
      }
      return node[3] === 0 ? node : [id, node[1], node[2], 0];
    },
    emit: function* (r: CcNode): Iterable<CcNode | CcMessage> {
      yield r;
      if (r[3] === 1) for (const n of r[2]) yield [n, r[1]];
    },
    finish: (id: number, rs: (CcNode | CcMessage)[], ctx: TaskContext): [number, number] => {
      const node = rs.find((r): r is CcNode => r.length === 4)!;
      ctx.counter(node[1] === id ? `${prefix}.components` : `${prefix}.nonRoots`);
      return [id, node[1]];
    },
    counter: changed,
    roundsCounter: `${prefix}.rounds`,
    maxRounds: 100_000,
  });
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

  /**
   * Keeps one record per group of near-duplicates (MinHash over word n-grams, LSH bands, then
   * connected components of the candidate pairs as a distributed job). The kept record of a group
   * is its first in input order (shard, then position), so the same records survive on every
   * backend and shard count; the output order is that of a join (not the input's). The records
   * before this operation are read twice (once for signatures, once for the output): write them
   * first if producing them is costly. Counters: `dedupFuzzy.components` (kept records, one per
   * component), `dedupFuzzy.removed`, `dedupFuzzy.duplicateGroups` (components of two or more),
   * `dedupFuzzy.candidatePairs`, `dedupFuzzy.rejectedPairs` (with `verify`), `dedupFuzzy.rounds`.
   */
  dedupFuzzy(options: DedupFuzzyOptions<T>): Dataset<T> {
    checkText("dedupFuzzy", options?.text);
    if (options.threshold !== undefined) checkRange("dedupFuzzy threshold", options.threshold, 0, 1, true);
    if (options.ngram !== undefined) checkPositiveInt("dedupFuzzy ngram", options.ngram);
    if (options.permutations !== undefined) checkPositiveInt("dedupFuzzy permutations", options.permutations);
    if (options.seed !== undefined && !Number.isInteger(options.seed))
      throw new ZephyrError("INVALID_ARGUMENT", `dedupFuzzy seed: expected an integer, got ${String(options.seed)}`);
    if ((options.bands === undefined) !== (options.rows === undefined)) throw new ZephyrError("INVALID_ARGUMENT", "dedupFuzzy: give both bands and rows, or neither");
    if (options.bands !== undefined) {
      checkPositiveInt("dedupFuzzy bands", options.bands);
      checkPositiveInt("dedupFuzzy rows", options.rows!);
      if (options.bands * options.rows! > (options.permutations ?? 128))
        throw new ZephyrError("INVALID_ARGUMENT", `dedupFuzzy: bands × rows (${options.bands * options.rows!}) exceeds permutations (${options.permutations ?? 128})`);
    }
    const p: FuzzyParams = fuzzyParams(options);
    const text = options.text;
    // Ids in input order: shard · 2^32 + position (windows keep mapShard's async step per 4,096 records).
    const tagWindows = <R>(make: (w: [number, T][], ctx: TaskContext) => Iterable<R>) =>
      this.window(4096).mapShard(async function* (windows: AsyncIterable<T[]>, ctx: TaskContext) {
        if (ctx.shard >= 2 ** 21) throw new ZephyrError("INVALID_ARGUMENT", "dedupFuzzy: at most 2^21 input shards");
        let pos = 0;
        for await (const w of windows)
          yield* make(
            w.map((r): [number, T] => [ctx.shard * 4294967296 + pos++, r]),
            ctx,
          );
      });
    const tagged = tagWindows((w) => [w]).flatMap((w) => w);
    const edges = tagWindows((w, ctx) => {
      const texts = w.map(([id, r]): [number, string] => {
        const t = text(r);
        if (typeof t !== "string") throw new ZephyrError("BAD_RECORD", `dedupFuzzy: text() returned ${typeof t}, expected a string`);
        return [id, t];
      });
      return bandBatches(texts, p, 64 * ctx.numShards);
    })
      .groupBy(
        (b: BandBatch) => b[0],
        (_g, batches: BandBatch[], ctx) => groupEdges(batches, p, (n, v) => ctx.counter(n, v)),
      )
      .flatMap((es) => es);
    // Only the records to drop (a label other than their own id) go to the join: a component's
    // root is counted here and then joins nothing, like a record with no near-duplicate.
    const dropped = connectedComponents(edges, { counterPrefix: "dedupFuzzy.cc" }).filter((lab, ctx) => {
      const root = lab[1] === lab[0];
      if (root) ctx.counter("dedupFuzzy.duplicateGroups");
      return !root;
    });
    return tagged
      .join(dropped as Dataset<unknown> as Dataset<[number, T]>, (r) => r[0], { kind: "left" })
      .filter(([, r], ctx) => {
        const keep = r === undefined;
        ctx.counter(keep ? "dedupFuzzy.components" : "dedupFuzzy.removed");
        return keep;
      })
      .map(([l]) => l[1]);
  }

  /**
   * Drops (or marks) records whose word n-grams overlap an evaluation set: one Bloom filter per
   * set, built once (in this call) and written to a content-addressed file that every worker of
   * the machine reads instead of building it again. Counters: `decontaminate.<set>` (records at
   * or over the threshold for that set), `decontaminate.dropped` or `decontaminate.marked`.
   */
  decontaminate(options: DecontaminateOptions<T> & { mode: "mark" }): Dataset<T & { contamination?: Contamination }>;
  decontaminate(options: DecontaminateOptions<T>): Dataset<T>;
  decontaminate(options: DecontaminateOptions<T>): Dataset<T> | Dataset<T & { contamination?: Contamination }> {
    checkText("decontaminate", options?.text);
    const ngram = options.ngram ?? 13;
    checkPositiveInt("decontaminate ngram", ngram);
    const fpr = options.falsePositiveRate ?? 1e-4;
    checkRange("decontaminate falsePositiveRate", fpr, 0, 1, true);
    const threshold = options.threshold ?? 0.05;
    checkRange("decontaminate threshold", threshold, 0, 1);
    const mode = options.mode ?? "drop";
    if (mode !== "drop" && mode !== "mark") throw new ZephyrError("INVALID_ARGUMENT", `decontaminate mode: expected "drop" or "mark", got ${JSON.stringify(mode)}`);
    if (!Array.isArray(options.evalSets) || options.evalSets.length === 0)
      throw new ZephyrError("INVALID_ARGUMENT", "decontaminate: evalSets: expected a non-empty array of { name, texts | path }");
    const names = new Set<string>();
    const filters: { name: string; filter: BloomFilter }[] = options.evalSets.map((set) => {
      if (typeof set?.name !== "string" || set.name.length === 0) throw new ZephyrError("INVALID_ARGUMENT", "decontaminate: every eval set needs a non-empty name");
      if (names.has(set.name)) throw new ZephyrError("INVALID_ARGUMENT", `decontaminate: eval set name "${set.name}" appears twice`);
      names.add(set.name);
      if ((set.texts === undefined) === (set.path === undefined))
        throw new ZephyrError("INVALID_ARGUMENT", `decontaminate: eval set "${set.name}": give texts or path (one of them)`);
      return { name: set.name, filter: sharedNgramFilter(readEvalSet(set), ngram, fpr, options.filterDir).filter };
    });
    const text = options.text;
    return this.flatMap((r, ctx) => {
      const t = text(r);
      if (typeof t !== "string") throw new ZephyrError("BAD_RECORD", `decontaminate: text() returned ${typeof t}, expected a string`);
      let hit: Contamination | undefined;
      for (const f of filters) {
        const frac = overlapFraction(f.filter, t, ngram);
        if (frac > 0 && frac >= threshold) {
          ctx.counter(`decontaminate.${f.name}`);
          hit ??= { overlap: 0, sets: {} };
          hit.sets[f.name] = frac;
          if (frac > hit.overlap) hit.overlap = frac;
        }
      }
      if (!hit) return [r];
      if (mode === "drop") {
        ctx.counter("decontaminate.dropped");
        return [];
      }
      ctx.counter("decontaminate.marked");
      if (r === null || typeof r !== "object") throw new ZephyrError("BAD_RECORD", `decontaminate mark: records must be objects to carry a contamination field, got ${typeof r}`);
      return [{ ...(r as object), contamination: hit } as T];
    });
  }

  /**
   * Keeps records that pass Gopher/C4-style quality rules (see `QualityRules` for names and
   * defaults). Every rule is evaluated; counters: `qualityFilter.<rule>` (records failing that
   * rule, so one record may count under several), `qualityFilter.dropped`, `qualityFilter.kept`.
   */
  qualityFilter(options: QualityFilterOptions<T>): Dataset<T> {
    checkText("qualityFilter", options?.text);
    const rules = resolveRules(options.rules ?? {});
    for (const [name, v] of Object.entries(options.rules ?? {})) {
      if (!(QUALITY_RULE_NAMES as readonly string[]).includes(name))
        throw new ZephyrError("INVALID_ARGUMENT", `qualityFilter rules: unknown rule "${name}" (known: ${QUALITY_RULE_NAMES.join(", ")})`);
      if (v !== false && (v === null || typeof v !== "object")) throw new ZephyrError("INVALID_ARGUMENT", `qualityFilter rules.${name}: expected bounds { min?, max? } or false`);
    }
    const text = options.text;
    return this.filter((r, ctx) => {
      const t = text(r);
      if (typeof t !== "string") throw new ZephyrError("BAD_RECORD", `qualityFilter: text() returned ${typeof t}, expected a string`);
      const failed = failedRules(t, rules);
      for (const name of failed) ctx.counter(`qualityFilter.${name}`);
      ctx.counter(failed.length === 0 ? "qualityFilter.kept" : "qualityFilter.dropped");
      return failed.length === 0;
    });
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
  if (invalidUtf8 !== "badRecord" && invalidUtf8 !== "replace")
    throw new ZephyrError("INVALID_ARGUMENT", `invalidUtf8: expected "badRecord" or "replace", got ${JSON.stringify(invalidUtf8)}`);
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
