// The reduce side of a shuffle: for one partition, merge every mapper's runs and walk the groups of
// equal keys. Group order is deterministic (key hash, then key bytes), values inside a group keep
// input order (runs in the order given, records in the order added).
import { randomUUID } from "node:crypto";
import { closeSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { Unpackr } from "msgpackr";
import { ZephyrError } from "../errors.ts";
import { decodeKey } from "./keyCodec.ts";
import { HashIndex } from "./hashIndex.ts";
import { DEFAULT_MERGE_MEMORY_BYTES, ExternalMerge } from "./mergeRuns.ts";
import type { MergeOptions } from "./mergeRuns.ts";
import { FRAME_HEADER_BYTES, segmentsOf } from "./spillRun.ts";
import type { FrameCursor, SpillRun, SpillSegment } from "./spillRun.ts";

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

/** Decodes the value bytes `buf[start, end)` of a frame. */
type ValueDecoder = (buf: Buffer, start: number, end: number) => unknown;

const unpackValue: ValueDecoder = (buf, start, end) => {
  // A range of the block, not a subarray: msgpackr caches its DataView on the block buffer.
  range.start = start;
  range.end = end;
  return values.unpack(buf, range);
};
/**
 * JSON runs hand their UTF-8 text through (to a JSONL sink) undecoded, as a view of the block it
 * was read into (each view keeps its block alive; dedup's blocks are whole segments, read once).
 */
const jsonText: ValueDecoder = (buf, start, end) => buf.subarray(start, end);

/** The decoder for `runs`: they must agree on their value encoding. */
function decoderOf(runs: readonly SpillRun[]): ValueDecoder {
  const json = runs.filter((r) => r.values === "json").length;
  if (json !== 0 && json !== runs.length) throw new ZephyrError("INTERNAL", "shuffle: runs of one partition mix msgpack and JSON values");
  return json > 0 ? jsonText : unpackValue;
}

/** Walks a merge group by group; `values` of the current group pull from the merge lazily. */
class GroupWalker {
  private readonly merge: ExternalMerge;
  private readonly decode: ValueDecoder;
  private cur: FrameCursor | undefined;
  private groupKey: Buffer = Buffer.alloc(0);
  private groupHash = 0;
  private generation = 0;

  constructor(merge: ExternalMerge, decode: ValueDecoder) {
    this.merge = merge;
    this.decode = decode;
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
    return c !== undefined && c.hash === this.groupHash && c.keyEnd - c.keyStart === this.groupKey.length && this.groupKey.compare(c.buf, c.keyStart, c.keyEnd) === 0;
  }

  /** The current record's tag. Only valid while {@link inGroup}. */
  get tag(): number {
    return (this.cur as FrameCursor).tag;
  }

  /** Decodes the current record and moves on. Only valid while {@link inGroup}. */
  take<V>(): V {
    const c = this.cur as FrameCursor;
    const v = this.decode(c.buf, c.keyEnd, c.frameEnd) as V;
    this.cur = this.merge.next();
    return v;
  }

  /** The current group's values; an iterator kept past its group yields nothing more. */
  values<V>(): Iterable<V> {
    const generation = this.generation;
    return {
      [Symbol.iterator]: () => ({
        next: (): IteratorResult<V, undefined> => (generation === this.generation && this.inGroup() ? { done: false, value: this.take<V>() } : { done: true, value: undefined }),
      }),
    };
  }
}

/** Reads a whole segment into memory. */
function readSegment(seg: SpillSegment): Buffer {
  const buf = Buffer.allocUnsafe(seg.end - seg.start);
  let fd: number;
  try {
    fd = openSync(seg.path, "r");
  } catch (cause) {
    throw new ZephyrError("IO", `opening spill run ${seg.path} failed`, { cause });
  }
  try {
    let at = 0;
    while (at < buf.length) {
      const n = readSync(fd, buf, at, buf.length - at, seg.start + at);
      if (n === 0) throw new ZephyrError("IO", `spill run ${seg.path} is corrupt (truncated) near byte ${seg.start + at}`);
      at += n;
    }
  } catch (cause) {
    throw cause instanceof ZephyrError ? cause : new ZephyrError("IO", `reading spill run ${seg.path} failed`, { cause });
  } finally {
    closeSync(fd);
  }
  return buf;
}

/** Frame start offsets of a segment held in memory (checked against its length). */
function frameStarts(buf: Buffer, where: string): number[] {
  const starts: number[] = [];
  for (let at = 0; at < buf.length;) {
    if (buf.length - at < FRAME_HEADER_BYTES) throw new ZephyrError("IO", `spill run ${where} is corrupt (truncated frame)`);
    const end = at + 4 + buf.readUInt32LE(at);
    if (end > buf.length || at + FRAME_HEADER_BYTES + buf.readUInt32LE(at + 13) > end) throw new ZephyrError("IO", `spill run ${where} is corrupt (bad frame header)`);
    starts.push(at);
    at = end;
  }
  return starts;
}

/** Sorts an arrival-order segment by (hash, key bytes, arrival) into a new run file under `tmpDir`. */
function sortSegment(seg: SpillSegment, tmpDir: string): SpillSegment {
  const buf = readSegment(seg);
  const starts = frameStarts(buf, seg.path);
  const order = starts.map((_, i) => i);
  order.sort((a, b) => {
    const oa = starts[a];
    const ob = starts[b];
    const ha = buf.readDoubleLE(oa + 4);
    const hb = buf.readDoubleLE(ob + 4);
    if (ha !== hb) return ha < hb ? -1 : 1;
    const ka = oa + FRAME_HEADER_BYTES;
    const kb = ob + FRAME_HEADER_BYTES;
    const c = buf.compare(buf, kb, kb + buf.readUInt32LE(ob + 13), ka, ka + buf.readUInt32LE(oa + 13));
    return c !== 0 ? c : a - b;
  });
  const out = Buffer.allocUnsafe(buf.length);
  let pos = 0;
  for (const i of order) {
    const at = starts[i];
    pos += buf.copy(out, pos, at, at + 4 + buf.readUInt32LE(at));
  }
  const target = path.join(tmpDir, `sorted-${randomUUID()}.spill`);
  let fd: number;
  try {
    fd = openSync(target, "w");
  } catch (cause) {
    throw new ZephyrError("IO", `creating sorted run ${target} failed`, { cause });
  }
  try {
    for (let at = 0; at < pos;) at += writeSync(fd, out, at, pos - at);
  } catch (cause) {
    rmSync(target, { force: true });
    throw new ZephyrError("IO", `writing sorted run ${target} failed`, { cause });
  } finally {
    closeSync(fd);
  }
  return { path: target, start: 0, end: pos };
}

function* walk<T>(runs: readonly SpillRun[], partition: number, options: MergeOptions, body: (w: GroupWalker) => Iterable<T>): Generator<T, void, undefined> {
  // Arrival-order runs are sorted first (each segment is one writer flush: it fits in memory).
  const temps: string[] = [];
  try {
    const segments: SpillSegment[] = [];
    for (const run of runs) {
      for (const seg of segmentsOf([run], partition)) {
        if (run.sorted === false) {
          const sorted = sortSegment(seg, options.tmpDir);
          temps.push(sorted.path);
          segments.push(sorted);
        } else segments.push(seg);
      }
    }
    const merge = new ExternalMerge(segments, options);
    try {
      const walker = new GroupWalker(merge, decoderOf(runs));
      while (walker.nextGroup()) yield* body(walker);
    } finally {
      merge.close();
    }
  } finally {
    for (const t of temps) rmSync(t, { force: true });
  }
}

/**
 * Exact deduplication of a partition that fits the budget: every segment read whole, in run order,
 * the first frame of each key bytes kept. Yields in first-seen order.
 */
function* dedupInMemory<V>(segments: readonly SpillSegment[], decode: ValueDecoder): Generator<V, void, undefined> {
  // Keys are looked up by their 53-bit sort hash in a typed table (no string or Map entry per
  // record) that remembers where each kept key's bytes are (segment · 2^32 + offset); keys whose
  // hashes are equal are compared byte by byte, so a collision never drops a distinct key.
  const seen = HashIndex.acquire();
  const bufs: Buffer[] = [];
  let cur: Buffer = Buffer.alloc(0);
  let curAt = 0;
  const sameKey = (where: number): boolean => {
    const b = bufs[Math.floor(where / 2 ** 32)];
    const start = where % 2 ** 32;
    const len = b.readUInt32LE(start + 13);
    if (len !== cur.readUInt32LE(curAt + 13)) return false;
    const x = start + FRAME_HEADER_BYTES;
    const y = curAt + FRAME_HEADER_BYTES;
    for (let i = 0; i < len; i++) if (b[x + i] !== cur[y + i]) return false;
    return true;
  };
  try {
    for (const seg of segments) {
      const buf = readSegment(seg);
      const base = bufs.length * 2 ** 32;
      bufs.push(buf);
      cur = buf;
      for (const at of frameStarts(buf, seg.path)) {
        curAt = at;
        if (seen.insertUnlessFound(buf.readDoubleLE(at + 4), base + at, sameKey) >= 0) continue;
        yield decode(buf, at + FRAME_HEADER_BYTES + buf.readUInt32LE(at + 13), at + 4 + buf.readUInt32LE(at)) as V;
      }
    }
  } finally {
    HashIndex.release(seen);
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

/**
 * The first record (in input order) of every key of one partition: exact deduplication. When some
 * runs are in arrival order (`sorted: false`) and the partition fits `memoryBudgetBytes`, it is
 * hashed in memory (first-seen order); otherwise merged (key-hash order).
 */
export function* dedupPartition<V>(runs: readonly SpillRun[], partition: number, options: MergeOptions): Generator<V, void, undefined> {
  if (runs.some((r) => r.sorted === false)) {
    const segments = segmentsOf(runs, partition);
    const bytes = segments.reduce((a, s) => a + s.end - s.start, 0);
    if (bytes <= (options.memoryBudgetBytes ?? DEFAULT_MERGE_MEMORY_BYTES)) {
      yield* dedupInMemory<V>(segments, decoderOf(runs));
      return;
    }
  }
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
