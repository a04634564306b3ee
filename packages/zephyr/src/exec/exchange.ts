// The seam between stages and the shuffle/format internals (src/shuffle, src/io): scatter writers
// for the map side, partition readers for the reduce side, and the Parquet reader/writer.
import { mkdirSync } from "node:fs";
import { JOIN_LEFT_TAG, JOIN_RIGHT_TAG, dedupPartition, groupPartition, joinPartition } from "../shuffle/shuffleReader.ts";
import { ShuffleWriter } from "../shuffle/shuffleWriter.ts";
import { loadKeyHasher } from "../shuffle/keyCodec.ts";
import {
  MemoryScatter,
  memoryDedupPartition,
  releaseMemoryScatter,
  releaseMemoryScattersUnder,
  memoryGroupPartition,
  memoryPartitionSize,
  spillHeldPartition,
} from "../shuffle/memoryShuffle.ts";
import type { MemoryShuffleMode } from "../shuffle/memoryShuffle.ts";
import type { SpillRun } from "../shuffle/spillRun.ts";
import type { MergeOptions } from "../shuffle/mergeRuns.ts";
import type { TaskContext } from "../plan/ops.ts";
import { batchesOf } from "./batches.ts";
import { userFunctionError } from "./fused.ts";
import type { StageWhere } from "./fused.ts";

export { JOIN_LEFT_TAG, JOIN_RIGHT_TAG, releaseMemoryScatter, releaseMemoryScattersUnder };

/** What one mapper's scatter produced (plain JSON, handed to every reducer). */
export interface ScatterRef {
  readonly runs: readonly SpillRun[];
  /** Set when the output is held in memory by this thread (inline backend); `runs` is then empty. */
  readonly memory?: string;
}

/** The map side of a shuffle for one shard. */
export interface ScatterOutput {
  write(batch: unknown[]): undefined;
  close(): Promise<{ ref: ScatterRef; bytes: number }>;
  abort(): Promise<void>;
}

/**
 * Opens a scatter writer that routes each record by `key(record)` into `partitions` partitions.
 * With `localDedup`, a record whose key the writer still buffers (since its last spill) is
 * dropped before it is serialised: the reducer keeps the first of each key anyway, so this only
 * saves shuffle volume. With `memory` (the reducer runs in this thread), records are held in a hash
 * table per partition while the thread's held outputs stay under `budget`; past it, this shard
 * spills what it holds and continues on the spill path. With `values: "json"` records are spilled
 * as JSON text (a deduplicate feeding a JSONL sink: the reducer passes the text through).
 */
export async function openScatter(
  dir: string,
  partitions: number,
  key: (r: unknown) => unknown,
  budget: number,
  tag: number,
  where: StageWhere,
  localDedup = false,
  memory?: MemoryShuffleMode,
  values?: "json",
): Promise<ScatterOutput> {
  // Deduplicate's reducer hashes (or sorts) its partition itself: its runs stay in arrival order.
  const w = await ShuffleWriter.create({
    dir,
    numPartitions: partitions,
    memoryBudgetBytes: Math.max(4096, budget),
    tag,
    sort: !localDedup,
    name: `m${String(where.shard).padStart(5, "0")}`,
    values: values ?? "msgpack",
    dedup: localDedup,
  });
  let mem = memory === undefined ? undefined : new MemoryScatter(memory, partitions, budget, await loadKeyHasher(), dir, tag);
  let seen = 0;
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
        if (mem !== undefined) {
          if (!mem.add(k, batch[i])) {
            mem.drainInto(w);
            mem = undefined;
          }
          continue;
        }
        w.add(k, batch[i]);
      }
      seen += batch.length;
      return undefined;
    },
    close: async () => {
      if (mem !== undefined) return { ref: { runs: [], memory: mem.id }, bytes: mem.bytes };
      const out = w.close();
      return { ref: { runs: out.runs }, bytes: out.bytes };
    },
    abort: async () => {
      mem?.abort();
      w.abort();
    },
  };
}

function allRuns(refs: readonly ScatterRef[]): SpillRun[] {
  return refs.flatMap((r) => r.runs);
}

function mergeOptions(tmpDir: string, budget: number): MergeOptions {
  mkdirSync(tmpDir, { recursive: true });
  return { tmpDir, memoryBudgetBytes: Math.max(256 * 1024, budget) };
}

function heldIds(refs: readonly ScatterRef[]): string[] | undefined {
  const ids: string[] = [];
  for (const r of refs) if (r.memory !== undefined) ids.push(r.memory);
  return ids.length === refs.length ? ids : undefined;
}

/** The runs of every ref, with held outputs written out as runs first (a reducer with spilled inputs). */
async function spilledRuns(refs: readonly ScatterRef[], partition: number, tmpDir: string, budget: number): Promise<SpillRun[]> {
  const runs: SpillRun[] = [];
  for (const r of refs) {
    if (r.memory === undefined) runs.push(...r.runs);
    else {
      mkdirSync(tmpDir, { recursive: true });
      runs.push(...(await spillHeldPartition(r.memory, partition, tmpDir, budget)));
    }
  }
  return runs;
}

async function* afterSpill(
  refs: readonly ScatterRef[],
  partition: number,
  tmpDir: string,
  budget: number,
  body: (runs: SpillRun[]) => AsyncIterable<unknown[]>,
): AsyncGenerator<unknown[], void, undefined> {
  yield* body(await spilledRuns(refs, partition, tmpDir, budget));
}

/** The first record of every key of one partition (exact deduplication), in batches. */
export function dedupBatches(refs: readonly ScatterRef[], partition: number, tmpDir: string, budget: number, counters: { recordsIn: number }): AsyncIterable<unknown[]> {
  const held = heldIds(refs);
  if (held !== undefined) {
    counters.recordsIn += memoryPartitionSize(held, partition);
    return batchesOf(memoryDedupPartition(held, partition));
  }
  return afterSpill(refs, partition, tmpDir, budget, (runs) => {
    counters.recordsIn += runs.reduce((a, r) => a + (r.counts[partition] ?? 0), 0);
    return batchesOf(dedupPartition(runs, partition, mergeOptions(tmpDir, budget)));
  });
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
  const held = heldIds(refs);
  function* reduced(runs: SpillRun[]): Generator<unknown, void, undefined> {
    let g = 0;
    const groups = held !== undefined ? memoryGroupPartition<unknown>(held, partition) : groupPartition<unknown>(runs, partition, mergeOptions(tmpDir, budget));
    for (const group of groups) {
      const records = Array.isArray(group.values) ? (group.values as unknown[]) : [...group.values];
      counters.recordsIn += records.length;
      try {
        yield reducer(group.key, records, ctx);
      } catch (e) {
        throw userFunctionError(where, "groupBy reducer", g, group.key, e);
      }
      g++;
    }
  }
  if (held !== undefined) return batchesOf(reduced([]));
  return afterSpill(refs, partition, tmpDir, budget, (runs) => batchesOf(reduced(runs)));
}

/** The joined pairs of one partition, in batches. */
export function joinBatches(
  left: readonly ScatterRef[],
  right: readonly ScatterRef[],
  partition: number,
  kind: "inner" | "left",
  tmpDir: string,
  budget: number,
  counters: { recordsIn: number },
): AsyncIterable<unknown[]> {
  counters.recordsIn += [...allRuns(left), ...allRuns(right)].reduce((a, r) => a + (r.counts[partition] ?? 0), 0);
  return batchesOf(joinPartition(allRuns(left), allRuns(right), partition, kind, mergeOptions(tmpDir, budget)));
}
