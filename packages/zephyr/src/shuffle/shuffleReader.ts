// The reduce side of a shuffle: for one partition, merge every mapper's runs and walk the groups of
// equal keys. Group order is deterministic (key hash, then key bytes), values inside a group keep
// input order (runs in the order given, records in the order added).
import { Unpackr } from "msgpackr";
import { ZephyrError } from "../errors.ts";
import { decodeKey } from "./keyCodec.ts";
import { ExternalMerge } from "./mergeRuns.ts";
import type { MergeOptions } from "./mergeRuns.ts";
import { segmentsOf } from "./spillRun.ts";
import type { FrameCursor, SpillRun } from "./spillRun.ts";

// copyBuffers: binary values must not alias a read block that the next read overwrites.
const values = new Unpackr({ useRecords: false, copyBuffers: true });
const range = { start: 0, end: 0 };

/** Tag of the right side of a join; it merges before the left side among equal keys. */
export const JOIN_RIGHT_TAG = 0;
/** Tag of the left side of a join. */
export const JOIN_LEFT_TAG = 1;

/** The records sharing one key. */
export interface ShuffleGroup<V> {
  /** The key, decoded from its canonical encoding (plain objects come back with sorted keys). */
  readonly key: unknown;
  /**
   * The group's records, streamed from disk in input order: iterable once, and only until the
   * next group is requested (records not consumed by then are skipped).
   */
  readonly values: Iterable<V>;
}

/** Walks a merge group by group; `values` of the current group pull from the merge lazily. */
class GroupWalker {
  private readonly merge: ExternalMerge;
  private cur: FrameCursor | undefined;
  private groupKey: Buffer = Buffer.alloc(0);
  private groupHash = 0;
  private generation = 0;

  constructor(merge: ExternalMerge) {
    this.merge = merge;
    this.cur = merge.next();
  }

  /** Starts the next group (skipping what is left of the current one); false at the end. */
  nextGroup(): boolean {
    while (this.inGroup()) this.cur = this.merge.next();
    const c = this.cur;
    if (c === undefined) return false;
    this.groupKey = Buffer.from(c.buf.subarray(c.keyStart, c.keyEnd));
    this.groupHash = c.hash;
    this.generation++;
    return true;
  }

  get key(): unknown {
    return decodeKey(this.groupKey);
  }

  /** True while the merge is positioned at an unconsumed record of the current group. */
  inGroup(): boolean {
    const c = this.cur;
    return (
      c !== undefined &&
      c.hash === this.groupHash &&
      c.keyEnd - c.keyStart === this.groupKey.length &&
      this.groupKey.compare(c.buf, c.keyStart, c.keyEnd) === 0
    );
  }

  /** The current record's tag. Only valid while {@link inGroup}. */
  get tag(): number {
    return (this.cur as FrameCursor).tag;
  }

  /** Decodes the current record and moves on. Only valid while {@link inGroup}. */
  take<V>(): V {
    const c = this.cur as FrameCursor;
    // A range of the block, not a subarray: msgpackr caches its DataView on the block buffer.
    range.start = c.keyEnd;
    range.end = c.frameEnd;
    const v = values.unpack(c.buf, range) as V;
    this.cur = this.merge.next();
    return v;
  }

  /** The current group's values; an iterator kept past its group yields nothing more. */
  values<V>(): Iterable<V> {
    const generation = this.generation;
    return {
      [Symbol.iterator]: () => ({
        next: (): IteratorResult<V, undefined> =>
          generation === this.generation && this.inGroup() ? { done: false, value: this.take<V>() } : { done: true, value: undefined },
      }),
    };
  }
}

function* walk<T>(runs: readonly SpillRun[], partition: number, options: MergeOptions, body: (w: GroupWalker) => Iterable<T>): Generator<T, void, undefined> {
  const merge = new ExternalMerge(segmentsOf(runs, partition), options);
  try {
    const walker = new GroupWalker(merge);
    while (walker.nextGroup()) yield* body(walker);
  } finally {
    merge.close();
  }
}

/**
 * Groups of equal keys of one partition, merged from the runs of every mapper (pass them in
 * mapper order for a deterministic "first"). Memory stays within `memoryBudgetBytes` whatever the
 * partition's size; a group's values are streamed, so even a huge group is not held.
 *
 * @example
 * for (const { key, values } of groupPartition<Row>(allRuns, p, { tmpDir })) out.push(reducer(key, values));
 */
export function* groupPartition<V>(runs: readonly SpillRun[], partition: number, options: MergeOptions): Generator<ShuffleGroup<V>, void, undefined> {
  yield* walk(runs, partition, options, function* (w) {
    yield { key: w.key, values: w.values<V>() };
  });
}

/** The first record (in input order) of every key of one partition: exact deduplication. */
export function* dedupPartition<V>(runs: readonly SpillRun[], partition: number, options: MergeOptions): Generator<V, void, undefined> {
  yield* walk(runs, partition, options, function* (w) {
    yield w.take<V>();
  });
}

/** How {@link joinPartition} treats a left record without a match. */
export type JoinKind = "inner" | "left";

/** One output of a join: a left record and its matching right record (undefined: no match, left join). */
export type JoinedPair<L, R> = readonly [left: L, right: R | undefined];

/**
 * Joins one partition of two shuffles written with the same `numPartitions`: the left side's
 * writers with `tag: JOIN_LEFT_TAG`, the right side's with `tag: JOIN_RIGHT_TAG`. For each key,
 * the right side's records are held in memory (put the smaller side on the right) and every left
 * record is paired with each of them, in input order; `"left"` also emits unmatched left records
 * as `[left, undefined]`. Keys only on the right are dropped.
 */
export function* joinPartition<L, R>(
  left: readonly SpillRun[],
  right: readonly SpillRun[],
  partition: number,
  kind: JoinKind,
  options: MergeOptions,
): Generator<JoinedPair<L, R>, void, undefined> {
  if (kind !== "inner" && kind !== "left") throw new ZephyrError("INVALID_ARGUMENT", `join.kind: expected "inner" or "left", got ${JSON.stringify(kind)}`);
  yield* walk([...right, ...left], partition, options, function* (w) {
    const rights: R[] = [];
    while (w.inGroup() && w.tag === JOIN_RIGHT_TAG) rights.push(w.take<R>());
    while (w.inGroup()) {
      if (w.tag !== JOIN_LEFT_TAG) {
        throw new ZephyrError("INTERNAL", `joinPartition: a record tagged ${w.tag}; write the left side with JOIN_LEFT_TAG and the right with JOIN_RIGHT_TAG`);
      }
      const l = w.take<L>();
      if (rights.length === 0) {
        if (kind === "left") yield [l, undefined];
      } else {
        for (const r of rights) yield [l, r];
      }
    }
  });
}

/** Records and bytes of each partition across `runs`, for progress and skew reports. */
export function partitionSizes(runs: readonly SpillRun[], numPartitions: number): { records: number[]; bytes: number[] } {
  const records = new Array<number>(numPartitions).fill(0);
  const bytes = new Array<number>(numPartitions).fill(0);
  for (const run of runs) {
    if (run.counts.length !== numPartitions) {
      throw new ZephyrError("INVALID_ARGUMENT", `spill run ${run.path} has ${run.counts.length} partitions, expected ${numPartitions}`);
    }
    for (let p = 0; p < numPartitions; p++) {
      records[p] += run.counts[p];
      bytes[p] += run.offsets[p + 1] - run.offsets[p];
    }
  }
  return { records, bytes };
}
