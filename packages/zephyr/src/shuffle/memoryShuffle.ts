// The in-memory side of a hybrid shuffle: when the map and reduce sides run in the same thread
// (the inline backend), deduplicate and groupBy keep each mapper's output as a hash table per
// partition instead of serialising, sorting, writing and merging it. While the estimated size of
// everything held stays under the budget nothing touches the disk; a mapper that would exceed it
// hands what it holds to a ShuffleWriter and spills from then on (today's external path), and a
// reducer that meets spilled runs writes the held partitions as runs too and merges them all.
import { randomUUID } from "node:crypto";
import path from "node:path";
import { pack, unpack } from "msgpackr";
import { ZephyrError } from "../errors.ts";
import { encodeKey } from "./keyCodec.ts";
import type { KeyHasher } from "./keyCodec.ts";
import { ShuffleWriter } from "./shuffleWriter.ts";
import type { SpillRun } from "./spillRun.ts";

/** What the reduce side does with a key's records: keep the first, or hand them all to a reducer. */
export type MemoryShuffleMode = "dedup" | "group";

/** One mapper's held output, partition by partition, in first-seen key order. */
interface Held {
  readonly mode: MemoryShuffleMode;
  readonly numPartitions: number;
  /** The writer's directory, so a failed run can drop every output it left (see {@link releaseMemoryScattersUnder}). */
  readonly dir: string;
  /** The writer's tag: runs written from held records must merge exactly as the mapper's own runs. */
  readonly tag: number;
  /** Per partition: the cheap key of each entry (see {@link cheapKey}). */
  readonly cheap: unknown[][];
  /** Per partition: each entry's key as the spill path would hand it to a reducer (decoded canonical form). */
  readonly keys: unknown[][];
  /** Per partition: dedup → the first record of each key; group → the key's records in arrival order. */
  readonly values: unknown[][];
  bytes: number;
}

const registry = new Map<string, Held>();
/** Estimated bytes of every held output of this thread, against which each mapper checks its budget. */
let liveBytes = 0;

/** Per-entry overhead beyond the serialised size: the object, its hidden class, table slots. */
const ENTRY_OVERHEAD_BYTES = 96;
/** Values are measured (serialised) one in this many; the running mean stands in for the rest. */
const SAMPLE_EVERY = 16;

/**
 * A key as a Map key with value semantics: strings and numbers as they are (Map compares them by
 * value, and -0 as 0, like the canonical encoding), anything else as "\0" + its canonical
 * msgpack bytes. Strings starting with "\0" also take the encoded form, so the two never collide.
 */
function cheapKey(key: unknown): { cheap: unknown; encoded: Uint8Array | undefined } {
  if (typeof key === "number") return { cheap: key === 0 ? 0 : key, encoded: undefined };
  if (typeof key === "string" && (key.length === 0 || key.charCodeAt(0) !== 0)) return { cheap: key, encoded: undefined };
  const encoded = encodeKey(key);
  return { cheap: "\0" + Buffer.from(encoded.buffer, encoded.byteOffset, encoded.byteLength).toString("latin1"), encoded };
}

/**
 * The map side of an in-memory shuffle for one shard. `add` returns false once the thread's held
 * outputs exceed the budget: the caller then {@link drainInto}s a ShuffleWriter and continues there.
 */
export class MemoryScatter {
  readonly id = randomUUID();
  private readonly held: Held;
  private readonly index = new Map<unknown, number>();
  private readonly hasher: KeyHasher;
  private readonly budget: number;
  private sampled = 0;
  private sampledBytes = 0;
  private seen = 0;
  private drained = false;

  constructor(mode: MemoryShuffleMode, numPartitions: number, budget: number, hasher: KeyHasher, dir: string, tag: number) {
    this.hasher = hasher;
    this.budget = budget;
    const lists = (): unknown[][] => Array.from({ length: numPartitions }, () => []);
    this.held = { mode, numPartitions, dir: path.resolve(dir), tag, cheap: lists(), keys: lists(), values: lists(), bytes: 0 };
    registry.set(this.id, this.held);
  }

  /** Holds one record; false when the held outputs now exceed the budget (drain this scatter). */
  add(key: unknown, value: unknown): boolean {
    const h = this.held;
    const { cheap, encoded } = cheapKey(key);
    const at = this.index.get(cheap);
    let bytes = this.estimate(value);
    if (at !== undefined) {
      if (h.mode === "dedup") return true;
      const p = at % h.numPartitions;
      (h.values[p][Math.floor(at / h.numPartitions)] as unknown[]).push(value);
    } else {
      const enc = encoded ?? encodeKey(key);
      const p = this.hasher.partitionOf(enc, h.numPartitions);
      const list = h.values[p];
      this.index.set(cheap, list.length * h.numPartitions + p);
      h.cheap[p].push(cheap);
      // The key a reducer gets: as the spill path decodes it (strings and numbers come back as they are).
      h.keys[p].push(encoded === undefined ? cheap : unpack(enc));
      list.push(h.mode === "dedup" ? value : [value]);
      bytes += typeof key === "string" ? key.length + 32 : enc.length + 32;
    }
    h.bytes += bytes;
    liveBytes += bytes;
    return liveBytes <= this.budget;
  }

  /** Estimated bytes this scatter holds. */
  get bytes(): number {
    return this.held.bytes;
  }

  /** Writes everything held into `w` (keeping each key's records in arrival order) and lets it go. */
  drainInto(w: ShuffleWriter): void {
    const h = this.held;
    for (let p = 0; p < h.numPartitions; p++) {
      const keys = h.keys[p];
      const values = h.values[p];
      for (let i = 0; i < values.length; i++) {
        if (h.mode === "dedup") w.add(keys[i], values[i]);
        else for (const v of values[i] as unknown[]) w.add(keys[i], v);
      }
    }
    this.drained = true;
    this.index.clear();
    releaseMemoryScatter(this.id);
  }

  /** Forgets what is held (a failed attempt). */
  abort(): void {
    this.index.clear();
    releaseMemoryScatter(this.id);
  }

  /** True once {@link drainInto} ran: the output is the writer's runs only. */
  get wasDrained(): boolean {
    return this.drained;
  }

  private estimate(value: unknown): number {
    if (this.seen++ % SAMPLE_EVERY === 0) {
      let n: number;
      try {
        n = pack(value).length;
      } catch (cause) {
        throw new ZephyrError("BAD_RECORD", `shuffle: record cannot be serialised: ${(cause as Error).message}`, { cause });
      }
      this.sampled++;
      this.sampledBytes += n;
    }
    return Math.ceil(this.sampledBytes / this.sampled) + ENTRY_OVERHEAD_BYTES;
  }
}

/** Drops a held output (after its consumer stage finished, or the run failed). Idempotent. */
export function releaseMemoryScatter(id: string): void {
  const h = registry.get(id);
  if (h === undefined) return;
  registry.delete(id);
  liveBytes -= h.bytes;
}

/** Drops every held output written under `dir` (a run's scratch directory, when the run ends). */
export function releaseMemoryScattersUnder(dir: string): void {
  const root = path.resolve(dir) + path.sep;
  for (const [id, h] of registry) if (h.dir.startsWith(root)) releaseMemoryScatter(id);
}

/** Estimated bytes of all held outputs of this thread (for tests and stats). */
export function heldMemoryBytes(): number {
  return liveBytes;
}

function heldOf(id: string): Held {
  const h = registry.get(id);
  if (h === undefined) {
    throw new ZephyrError("INTERNAL", `in-memory shuffle output ${id} is gone (it lives only in the thread that wrote it, until its consumer stage ends)`);
  }
  return h;
}

/** Records of `partition` across held outputs (for the reduce stage's input counter). */
export function memoryPartitionSize(ids: readonly string[], partition: number): number {
  let n = 0;
  for (const id of ids) {
    const h = heldOf(id);
    if (h.mode === "dedup") n += h.values[partition].length;
    else for (const vs of h.values[partition]) n += (vs as unknown[]).length;
  }
  return n;
}

/** The first record of every key of `partition` across held outputs (in mapper order), in first-seen order. */
export function* memoryDedupPartition<V>(ids: readonly string[], partition: number): Generator<V, void, undefined> {
  const helds = ids.map(heldOf);
  if (helds.length === 1) {
    yield* helds[0].values[partition] as V[];
    return;
  }
  const seen = new Set<unknown>();
  for (const h of helds) {
    const cheap = h.cheap[partition];
    const values = h.values[partition];
    for (let i = 0; i < values.length; i++) {
      if (seen.has(cheap[i])) continue;
      seen.add(cheap[i]);
      yield values[i] as V;
    }
  }
}

/** Every key of `partition` with its records (mapper order, then arrival order), in first-seen key order. */
export function* memoryGroupPartition<V>(ids: readonly string[], partition: number): Generator<{ key: unknown; values: V[] }, void, undefined> {
  const groups = new Map<unknown, { key: unknown; values: V[] }>();
  for (const id of ids) {
    const h = heldOf(id);
    const cheap = h.cheap[partition];
    const keys = h.keys[partition];
    const values = h.values[partition] as V[][];
    for (let i = 0; i < values.length; i++) {
      const g = groups.get(cheap[i]);
      // Copied, so a reducer that changes its array cannot change a retry's input.
      if (g === undefined) groups.set(cheap[i], { key: keys[i], values: values[i].slice() });
      else for (const v of values[i]) g.values.push(v);
    }
  }
  yield* groups.values();
}

/**
 * Writes `partition` of a held output as spill runs under `dir` (for a reducer that also has
 * spilled runs to merge): the runs have the output's partition count, with only `partition` filled.
 */
export async function spillHeldPartition(id: string, partition: number, dir: string, budget: number): Promise<SpillRun[]> {
  const h = heldOf(id);
  const w = await ShuffleWriter.create({
    dir,
    numPartitions: h.numPartitions,
    memoryBudgetBytes: Math.max(4096, budget),
    tag: h.tag,
    name: `held${String(partition).padStart(5, "0")}`,
  });
  try {
    const keys = h.keys[partition];
    const values = h.values[partition];
    for (let i = 0; i < values.length; i++) {
      if (h.mode === "dedup") w.add(keys[i], values[i]);
      else for (const v of values[i] as unknown[]) w.add(keys[i], v);
    }
    return w.close().runs;
  } catch (e) {
    w.abort();
    throw e;
  }
}
