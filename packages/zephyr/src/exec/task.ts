// One shard of one stage: the unit every backend runs (inline in this thread, on a worker thread,
// or in an iris task). Descriptors are plain data; the stage's functions come from the plan,
// which the worker rebuilt itself.
import { stat } from "node:fs/promises";
import { ZephyrError } from "../errors.ts";
import { readJsonlBatches } from "../io/jsonl.ts";
import type { ReadStats } from "../io/jsonl.ts";
import { readTextBatches } from "../io/text.ts";
import type { SourceSpec, TaskContext } from "../plan/ops.ts";
import type { DatasetPlan, Stage } from "../plan/planner.ts";
import { readChunkRange } from "./chunkFile.ts";
import { BATCH, batchesOf } from "./batches.ts";
import type { StageCounters, TaskResult, TaskSpec } from "./contracts.ts";
import { applyOps } from "./fused.ts";
import type { StageWhere } from "./fused.ts";
import { openShardOutput } from "./outputs.ts";
import type { OutputResult } from "./outputs.ts";
import { dedupBatches, groupBatches, joinBatches } from "./exchange.ts";
import { readParquetBatches } from "./parquetSeam.ts";

async function* listBatches(items: readonly unknown[], from: number, to: number): AsyncGenerator<unknown[], void, undefined> {
  for (let i = from; i < to; i += BATCH) yield items.slice(i, Math.min(to, i + BATCH));
}

/** The contiguous range of `n` items that shard `i` of `k` owns. */
export function listRange(n: number, i: number, k: number): [number, number] {
  return [Math.floor((i * n) / k), Math.floor(((i + 1) * n) / k)];
}

function sourceBatches(source: SourceSpec, spec: TaskSpec, ctx: TaskContext, counters: StageCounters, stats: ReadStats): AsyncIterable<unknown[]> {
  const input = spec.input;
  switch (source.kind) {
    case "list": {
      const [from, to] = listRange(source.items.length, spec.shard, spec.numShards);
      return listBatches(source.items, from, to);
    }
    case "iterable":
      return batchesOf(source.iterable);
    default:
      break;
  }
  if (input.kind !== "path") throw new ZephyrError("INTERNAL", `source ${source.kind} needs a file path input, got ${input.kind}`);
  const file = input.path;
  switch (source.kind) {
    case "files":
      return listBatches([file], 0, 1);
    case "jsonl":
      return sized(file, counters, readJsonlBatches(file, { onBadRecord: source.onBadRecord, invalidUtf8: source.invalidUtf8, stats, onSkip: () => ctx.counter("badRecords") }));
    case "text":
      return sized(file, counters, readTextBatches(file, { onBadRecord: source.onBadRecord, invalidUtf8: source.invalidUtf8, stats, onSkip: () => ctx.counter("badRecords") }));
    case "parquet":
      return sized(file, counters, readParquetBatches(file, { columns: source.columns, filter: source.filter }));
  }
}

/** Counts the file's size (on disk, compressed) as the stage's input bytes, then streams it. */
async function* sized(file: string, counters: StageCounters, batches: AsyncIterable<unknown[]>): AsyncGenerator<unknown[], void, undefined> {
  counters.bytesIn += await stat(file).then(
    (s) => s.size,
    () => 0,
  );
  yield* batches;
}

async function* counted(input: AsyncIterable<unknown[]>, counters: StageCounters): AsyncGenerator<unknown[], void, undefined> {
  for await (const b of input) {
    counters.recordsIn += b.length;
    yield b;
  }
}

function inputBatches(stage: Stage, spec: TaskSpec, ctx: TaskContext, where: StageWhere, counters: StageCounters): AsyncIterable<unknown[]> {
  const input = stage.input;
  switch (input.kind) {
    case "source":
      return counted(sourceBatches(input.source, spec, ctx, counters, { skipped: 0 }), counters);
    case "reshard":
    case "gather": {
      if (spec.input.kind !== "chunks") throw new ZephyrError("INTERNAL", `stage ${stage.id} expects chunk ranges`);
      const ranges = spec.input.ranges;
      return counted(
        (async function* () {
          for (const r of ranges) yield* readChunkRange(r);
        })(),
        counters,
      );
    }
    case "shuffle": {
      const si = spec.input;
      if (si.kind !== "shuffle") throw new ZephyrError("INTERNAL", `stage ${stage.id} expects a shuffle partition`);
      if (input.mode === "dedup") return dedupBatches(si.refs, si.partition, si.tmpDir, spec.memoryBudgetBytes, counters);
      const reducer = input.reducer as (k: unknown, rs: unknown[], c: TaskContext) => unknown;
      return groupBatches(si.refs, si.partition, si.tmpDir, spec.memoryBudgetBytes, reducer, ctx, where, counters);
    }
    case "join": {
      const si = spec.input;
      if (si.kind !== "join") throw new ZephyrError("INTERNAL", `stage ${stage.id} expects join partitions`);
      return joinBatches(si.left, si.right, si.partition, input.joinKind, si.tmpDir, spec.memoryBudgetBytes, counters);
    }
  }
}

/** Runs one shard of one stage of `plan` and reports its output and counters. */
export async function runTask(plan: DatasetPlan, spec: TaskSpec): Promise<TaskResult> {
  const started = performance.now();
  const stage = plan.stages[spec.stageId];
  if (!stage) throw new ZephyrError("INTERNAL", `plan has no stage ${spec.stageId}`);
  const counters: StageCounters = { recordsIn: 0, recordsOut: 0, bytesIn: 0, bytesOut: 0, timeMs: 0 };
  const user: Record<string, number> = {};
  const ctx: TaskContext = {
    shard: spec.shard,
    numShards: spec.numShards,
    stage: stage.id,
    counter(name: string, n = 1) {
      user[name] = (user[name] ?? 0) + n;
    },
  };
  const where: StageWhere = { stageId: stage.id, stageName: stage.name, shard: spec.shard, numShards: spec.numShards };
  let ops = stage.ops;
  if (stage.input.kind === "gather" && stage.input.combine) ops = [{ kind: "fold", step: stage.input.combine.fn, init: undefined }, ...ops];
  const stream = applyOps(inputBatches(stage, spec, ctx, where, counters), ops, ctx, where);
  const out = await openShardOutput(spec.output, stage, spec, where);
  let result: OutputResult;
  try {
    for await (const batch of stream) {
      counters.recordsOut += batch.length;
      const p = out.write(batch);
      if (p !== undefined) await p;
    }
    result = await out.close();
  } catch (e) {
    await out.abort();
    throw e;
  }
  counters.bytesOut = result.kind === "file" || result.kind === "chunks" || result.kind === "scatter" ? result.bytes : 0;
  counters.timeMs = performance.now() - started;
  return { counters, user, output: result };
}
