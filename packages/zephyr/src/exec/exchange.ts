// The seam between stages and the shuffle/format internals (src/shuffle, src/io): scatter writers
// for the map side, partition readers for the reduce side, and the Parquet reader/writer.
import { mkdirSync } from "node:fs";
import { JOIN_LEFT_TAG, JOIN_RIGHT_TAG, dedupPartition, groupPartition, joinPartition } from "../shuffle/shuffleReader.ts";
import { ShuffleWriter } from "../shuffle/shuffleWriter.ts";
import type { SpillRun } from "../shuffle/spillRun.ts";
import type { MergeOptions } from "../shuffle/mergeRuns.ts";
import type { TaskContext } from "../plan/ops.ts";
import { userFunctionError } from "./fused.ts";
import type { StageWhere } from "./fused.ts";

export { JOIN_LEFT_TAG, JOIN_RIGHT_TAG };

/** What one mapper's scatter produced (plain JSON, handed to every reducer). */
export interface ScatterRef {
  readonly runs: readonly SpillRun[];
}

/** The map side of a shuffle for one shard. */
export interface ScatterOutput {
  write(batch: unknown[]): undefined;
  close(): Promise<{ ref: ScatterRef; bytes: number }>;
  abort(): Promise<void>;
}

const BATCH = 1024;

/**
 * Keys the map-side pre-deduplication remembers before it starts over: about a quarter of the
 * budget at ~100 bytes a key, at most 2^18 (it only saves shuffle volume; correctness never
 * depends on it).
 */
function localDedupKeys(budget: number): number {
  return Math.max(1024, Math.min(1 << 18, Math.floor(budget / 400)));
}

/**
 * Opens a scatter writer that routes each record by `key(record)` into `partitions` partitions.
 * With `localDedup`, a record whose (string or number) key this shard already sent is dropped
 * before it is serialised: the reducer keeps the first of each key anyway, so this only saves
 * shuffle volume.
 */
export async function openScatter(dir: string, partitions: number, key: (r: unknown) => unknown, budget: number, tag: number, where: StageWhere, localDedup = false): Promise<ScatterOutput> {
  const w = await ShuffleWriter.create({ dir, numPartitions: partitions, memoryBudgetBytes: Math.max(4096, budget), tag, name: `m${String(where.shard).padStart(5, "0")}` });
  let seen = 0;
  let sent = new Set<unknown>();
  const maxKeys = localDedupKeys(budget);
  return {
    write(batch) {
      let i = 0;
      let k: unknown;
      for (; i < batch.length; i++) {
        try {
          k = key(batch[i]);
        } catch (e) {
          throw userFunctionError(where, "key function", seen + i, batch[i], e);
        }
        if (localDedup && (typeof k === "string" || typeof k === "number")) {
          if (sent.has(k)) continue;
          if (sent.size >= maxKeys) sent = new Set();
          sent.add(k);
        }
        w.add(k, batch[i]);
      }
      seen += batch.length;
      return undefined;
    },
    close: async () => {
      const out = w.close();
      return { ref: { runs: out.runs }, bytes: out.bytes };
    },
    abort: async () => w.abort(),
  };
}

async function* batched(gen: Iterable<unknown>): AsyncGenerator<unknown[], void, undefined> {
  let buf: unknown[] = [];
  for (const x of gen) {
    buf.push(x);
    if (buf.length >= BATCH) {
      yield buf;
      buf = [];
    }
  }
  if (buf.length > 0) yield buf;
}

function allRuns(refs: readonly ScatterRef[]): SpillRun[] {
  return refs.flatMap((r) => r.runs);
}

function mergeOptions(tmpDir: string, budget: number): MergeOptions {
  mkdirSync(tmpDir, { recursive: true });
  return { tmpDir, memoryBudgetBytes: Math.max(256 * 1024, budget) };
}

/** The first record of every key of one partition (exact deduplication), in batches. */
export function dedupBatches(refs: readonly ScatterRef[], partition: number, tmpDir: string, budget: number, counters: { recordsIn: number }): AsyncIterable<unknown[]> {
  counters.recordsIn += allRuns(refs).reduce((a, r) => a + (r.counts[partition] ?? 0), 0);
  return batched(dedupPartition(allRuns(refs), partition, mergeOptions(tmpDir, budget)));
}

/** `reducer(key, records)` for every key of one partition, in batches. */
export function groupBatches(
  refs: readonly ScatterRef[],
  partition: number,
  tmpDir: string,
  budget: number,
  reducer: (key: unknown, records: unknown[], ctx: TaskContext) => unknown,
  ctx: TaskContext,
  where: StageWhere,
  counters: { recordsIn: number },
): AsyncIterable<unknown[]> {
  function* reduced(): Generator<unknown, void, undefined> {
    let g = 0;
    for (const group of groupPartition<unknown>(allRuns(refs), partition, mergeOptions(tmpDir, budget))) {
      const records = [...group.values];
      counters.recordsIn += records.length;
      try {
        yield reducer(group.key, records, ctx);
      } catch (e) {
        throw userFunctionError(where, "groupBy reducer", g, group.key, e);
      }
      g++;
    }
  }
  return batched(reduced());
}

/** The joined pairs of one partition, in batches. */
export function joinBatches(left: readonly ScatterRef[], right: readonly ScatterRef[], partition: number, kind: "inner" | "left", tmpDir: string, budget: number, counters: { recordsIn: number }): AsyncIterable<unknown[]> {
  counters.recordsIn += [...allRuns(left), ...allRuns(right)].reduce((a, r) => a + (r.counts[partition] ?? 0), 0);
  return batched(joinPartition(allRuns(left), allRuns(right), partition, kind, mergeOptions(tmpDir, budget)));
}
