// The coordinator: resolves a plan's shards, runs stage after stage on a backend with per-shard
// retries, commits outputs, and gathers counters.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { ZephyrError } from "../errors.ts";
import { expandGlob } from "../io/files.ts";
import { runIdentity } from "../plan/fingerprint.ts";
import type { DatasetPlan, Stage } from "../plan/planner.ts";
import { planStages } from "../plan/planner.ts";
import { chooseBackend } from "./backends.ts";
import type {
  Backend,
  DatasetRunOptions,
  RunOutcome,
  RunSource,
  RunStats,
  ShardInput,
  SinkOptions,
  SinkSpec,
  StageCounters,
  StageStats,
  TaskResult,
  TaskSpec,
  TokenCacheOptions,
  ZephyrBackendName,
} from "./contracts.ts";
import type { ChunkRange } from "./chunkFile.ts";
import { readChunkRange } from "./chunkFile.ts";
import { clearPreviousOutputs, commonDir, publishShards, readCommitted, removeStaleTemps, shardPath, writeSuccessManifest } from "./commit.ts";
import type { CommittedShard } from "./commit.ts";
import { JOIN_LEFT_TAG, JOIN_RIGHT_TAG, releaseMemoryScatter, releaseMemoryScattersUnder } from "./exchange.ts";
import type { ScatterRef } from "./exchange.ts";
import { jsonPassthrough } from "./outputs.ts";
import type { OutputResult, ShardOutputSpec } from "./outputs.ts";
import { StageProgress } from "./progress.ts";
import { isRetryable } from "./retries.ts";
import { checkSinkOptions } from "./runOptions.ts";
import { loadLevanterSharding } from "./tokenCache.ts";

const DEFAULT_BUDGET = 256 * 1024 * 1024;

function zero(): StageCounters {
  return { recordsIn: 0, recordsOut: 0, bytesIn: 0, bytesOut: 0, timeMs: 0 };
}

/** The stage that consumes `stageId`'s scatter, and how many partitions it wants. */
function consumerOf(stages: readonly Stage[], stageId: number): Stage | undefined {
  return stages.find((s) => (s.input.kind === "shuffle" && s.input.from === stageId) || (s.input.kind === "join" && (s.input.left === stageId || s.input.right === stageId)));
}

async function resolveShardCounts(plan: DatasetPlan): Promise<{ shards: number[]; paths: Map<number, string[]> }> {
  const shards: number[] = [];
  const paths = new Map<number, string[]>();
  for (const s of plan.stages) {
    const input = s.input;
    switch (input.kind) {
      case "source": {
        const src = input.source;
        if (src.kind === "list") shards.push(src.shards);
        else if (src.kind === "iterable") shards.push(1);
        else {
          const found = await expandGlob(src.patterns);
          paths.set(s.id, found);
          shards.push(found.length);
        }
        break;
      }
      case "reshard":
        shards.push(input.shards);
        break;
      case "gather":
        shards.push(1);
        break;
      case "shuffle":
        shards.push(input.shards ?? shards[input.from]);
        break;
      case "join":
        shards.push(input.shards ?? shards[input.left]);
        break;
    }
  }
  return { shards, paths };
}

/** Splits the concatenation of `chunks` into `n` contiguous, near-equal ranges. */
function splitChunks(chunks: readonly { file: string; count: number }[], n: number): ChunkRange[][] {
  const total = chunks.reduce((a, c) => a + c.count, 0);
  const out: ChunkRange[][] = [];
  for (let i = 0; i < n; i++) {
    const from = Math.floor((i * total) / n);
    const to = Math.floor(((i + 1) * total) / n);
    const ranges: ChunkRange[] = [];
    let base = 0;
    for (const c of chunks) {
      const a = Math.max(from, base);
      const b = Math.min(to, base + c.count);
      if (b > a) ranges.push({ file: c.file, skip: a - base, take: b - a });
      base += c.count;
    }
    out.push(ranges);
  }
  return out;
}

let noticeShown = false;

function pickBackend(ds: RunSource, options: DatasetRunOptions): ZephyrBackendName {
  const asked = options.backend;
  if (asked !== undefined && asked !== "inline" && asked !== "threads" && asked !== "iris") {
    throw new ZephyrError("INVALID_ARGUMENT", `backend: expected "inline", "threads" or "iris", got ${JSON.stringify(asked)}`);
  }
  if (ds.origin) return asked ?? "threads";
  if (asked === "threads" || asked === "iris") {
    throw new ZephyrError(
      "INVALID_ARGUMENT",
      `backend "${asked}" runs the pipeline in other threads or processes, which cannot receive closures: define it in a module with definePipeline(import.meta.url, build) and call the returned factory (or run it with backend "inline")`,
    );
  }
  if (!noticeShown && asked === undefined) {
    noticeShown = true;
    process.stderr.write("zephyr: running inline (this thread); parallel backends (threads, iris) need a pipeline defined with definePipeline(import.meta.url, build)\n");
  }
  return "inline";
}

/** Plans `ds`, runs it on the chosen backend, and produces the sink's value. */
export async function runPlan(ds: RunSource, sink: SinkSpec, options: SinkOptions): Promise<RunOutcome> {
  const started = performance.now();
  checkSinkOptions(options);
  const backendName = pickBackend(ds, options);
  const maxRetries = options.maxShardRetries ?? 2;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new ZephyrError("INVALID_ARGUMENT", `maxShardRetries: expected a non-negative integer, got ${maxRetries}`);
  const budget = options.memoryBudgetBytes ?? DEFAULT_BUDGET;
  if (!(budget > 0)) throw new ZephyrError("INVALID_ARGUMENT", `memoryBudgetBytes: expected a positive number, got ${budget}`);
  if (sink.kind === "tokenCache") await loadLevanterSharding();

  const plan = planStages(ds.logical);
  // The run's identity, computed here once: outputs are tied to it, and the threads and iris
  // backends hand it to every task, which checks the plan it rebuilds against it.
  const fingerprint = runIdentity(plan, ds.origin);
  const { shards, paths } = await resolveShardCounts(plan);
  const last = plan.stages[plan.stages.length - 1];
  const sinkShards = shards[last.id];

  // Final output paths, and what an earlier run already committed.
  let finalPaths: string[] = [];
  const committed = new Map<number, CommittedShard>();
  if (sink.kind === "jsonl" || sink.kind === "parquet") {
    finalPaths = Array.from({ length: sinkShards }, (_, i) => shardPath(sink.pattern, i, sinkShards));
  } else if (sink.kind === "tokenCache") {
    const lev = await loadLevanterSharding();
    finalPaths = Array.from({ length: sinkShards }, (_, i) => path.resolve(sink.dir, lev.shardFileName(i)));
  }
  if (options.skipExisting) {
    for (let i = 0; i < finalPaths.length; i++) {
      const c = await readCommitted(finalPaths[i], fingerprint);
      if (c) committed.set(i, c);
    }
  }
  // Whatever is not kept goes first: a shard commits with a link that never replaces a file, so
  // a stale file left in place would be adopted as this run's output.
  if ((sink.kind === "jsonl" || sink.kind === "parquet") && committed.size < finalPaths.length) {
    await clearPreviousOutputs(
      finalPaths.filter((_, i) => !committed.has(i)),
      commonDir(finalPaths),
    );
  }

  const ownScratch = options.scratchDir === undefined;
  const scratch = options.scratchDir ?? (await mkdtemp(path.join(os.tmpdir(), "zephyr-")));
  let backend: Backend;
  try {
    const remote = ds.origin ? { origin: ds.origin, identity: fingerprint } : undefined;
    backend = await chooseBackend(backendName, plan, remote, { threads: options.threads, iris: options.iris, scratch });
  } catch (e) {
    if (ownScratch) await rm(scratch, { recursive: true, force: true });
    throw e;
  }
  const progress = new StageProgress(options.progress ?? Boolean(process.stderr.isTTY));
  const stageStats: StageStats[] = [];
  const userCounters: Record<string, number> = {};
  const outputs: OutputResult[][] = [];
  try {
    const allCommitted = finalPaths.length > 0 && committed.size === finalPaths.length;
    // One round of a stage: a loop stage (see StageLoop) runs again on its own output.
    const runRound = async (stage: Stage, round: number): Promise<Record<string, number>> => {
      const stageStart = performance.now();
      const n = shards[stage.id];
      const specs: TaskSpec[] = [];
      const skipped: number[] = [];
      for (let i = 0; i < n; i++) {
        if (stage === last && committed.has(i)) {
          skipped.push(i);
          continue;
        }
        specs.push({
          stageId: stage.id,
          shard: i,
          numShards: n,
          attempt: 0,
          input: shardInput(stage, i, n, paths, outputs, scratch, round),
          output: shardOutput(stage, i, n, scratch, sink, finalPaths, plan, shards, backendName, options, fingerprint, round),
          memoryBudgetBytes: budget,
        });
      }
      const bar = progress.stage(stage, n);
      bar.advance(skipped.length);
      let retries = 0;
      const results = await backend.runStage(stage, specs, {
        maxRetries,
        isRetryable,
        onRetry: () => retries++,
        onShardDone: () => bar.advance(1),
      });
      bar.done();
      const counters = zero();
      const roundCounters: Record<string, number> = {};
      const stageOut: OutputResult[] = new Array<OutputResult>(n);
      results.forEach((r: TaskResult, k) => {
        const c = r.counters;
        counters.recordsIn += c.recordsIn;
        counters.recordsOut += c.recordsOut;
        counters.bytesIn += c.bytesIn;
        counters.bytesOut += c.bytesOut;
        counters.timeMs += c.timeMs;
        for (const [name, v] of Object.entries(r.user)) {
          userCounters[name] = (userCounters[name] ?? 0) + v;
          roundCounters[name] = (roundCounters[name] ?? 0) + v;
        }
        stageOut[specs[k].shard] = r.output;
      });
      for (const i of skipped) {
        const c = committed.get(i)!;
        stageOut[i] = { kind: "file", path: c.path, count: c.count, bytes: c.bytes, outcome: "already" };
      }
      // A held (in-memory) exchange is read only by the stage that consumes it.
      if (stage.input.kind === "shuffle") releaseHeld(round > 0 ? outputs[stage.id] : outputs[stage.input.from]);
      outputs[stage.id] = stageOut;
      const name = round > 0 ? `${stage.name} (round ${round + 1})` : stage.name;
      stageStats.push({ id: stage.id, name, shards: n, counters, wallMs: performance.now() - stageStart, skipped: skipped.length, retries });
      return roundCounters;
    };
    for (const stage of allCommitted ? [] : plan.stages) {
      const loop = stage.input.kind === "shuffle" ? stage.input.loop : undefined;
      let round = 0;
      for (;;) {
        const c = await runRound(stage, round);
        round++;
        if (!loop || (c[loop.counter] ?? 0) === 0) break;
        if (round >= loop.maxRounds) throw new ZephyrError("INTERNAL", `stage ${stage.id} [${stage.name}]: no fixed point after ${round} rounds`);
      }
      if (loop) userCounters[loop.roundsCounter] = (userCounters[loop.roundsCounter] ?? 0) + round;
    }
    const stats: RunStats = { backend: backendName, fingerprint, stages: stageStats, counters: userCounters, wallMs: 0 };
    const value = await sinkValue(sink, outputs[last.id], finalPaths, committed, fingerprint, allCommitted);
    (stats as { wallMs: number }).wallMs = performance.now() - started;
    return { value: sink.kind === "collect" || sink.kind === "count" ? value : { ...(value as object), stats }, stats };
  } catch (e) {
    // A failed run publishes nothing: its shards stayed under hidden temp names (the backends
    // return only once the shards in flight have ended); remove them, and what dead attempts left.
    if (sink.kind === "jsonl" || sink.kind === "parquet") await removeStaleTemps(finalPaths);
    throw e;
  } finally {
    releaseMemoryScattersUnder(scratch);
    progress.stop();
    await backend.close();
    if (ownScratch) await rm(scratch, { recursive: true, force: true });
  }
}

/** A stage's scratch folder name (a loop stage's later rounds get their own). */
function stageDir(stage: Stage, round: number): string {
  return round > 0 ? `stage-${stage.id}-round-${round}` : `stage-${stage.id}`;
}

function shardInput(stage: Stage, i: number, n: number, paths: Map<number, string[]>, outputs: OutputResult[][], scratch: string, round: number): ShardInput {
  const input = stage.input;
  const tmpDir = path.join(scratch, stageDir(stage, round), `merge-${String(i).padStart(5, "0")}`);
  switch (input.kind) {
    case "source": {
      const p = paths.get(stage.id);
      return p ? { kind: "path", path: p[i] } : { kind: "source" };
    }
    case "reshard":
    case "gather": {
      const chunks = outputs[input.from].map((o) => {
        if (o.kind !== "chunks") throw new ZephyrError("INTERNAL", `stage ${input.from} should have written chunks`);
        return { file: o.file, count: o.count };
      });
      return { kind: "chunks", ranges: input.kind === "gather" ? splitChunks(chunks, 1)[0] : splitChunks(chunks, n)[i] };
    }
    case "shuffle":
      return { kind: "shuffle", refs: scatterRefs(outputs[round > 0 ? stage.id : input.from]), partition: i, tmpDir };
    case "join":
      return { kind: "join", left: scatterRefs(outputs[input.left]), right: scatterRefs(outputs[input.right]), partition: i, tmpDir };
  }
}

function releaseHeld(outs: readonly OutputResult[] | undefined): void {
  for (const o of outs ?? []) if (o?.kind === "scatter" && o.ref.memory !== undefined) releaseMemoryScatter(o.ref.memory);
}

function scatterRefs(outs: readonly OutputResult[]): ScatterRef[] {
  return outs.map((o) => {
    if (o.kind !== "scatter") throw new ZephyrError("INTERNAL", "expected scatter outputs");
    return o.ref;
  });
}

function shardOutput(
  stage: Stage,
  i: number,
  n: number,
  scratch: string,
  sink: SinkSpec,
  finalPaths: string[],
  plan: DatasetPlan,
  shards: number[],
  backend: ZephyrBackendName,
  options: TokenCacheOptions,
  fingerprint: string,
  round: number,
): ShardOutputSpec {
  const tag = `${stageDir(stage, round)}/shard-${String(i).padStart(5, "0")}`;
  switch (stage.output.kind) {
    case "chunks":
      return { kind: "chunks", file: path.join(scratch, `${tag}.chunk`) };
    case "scatter": {
      const consumer = consumerOf(plan.stages, stage.id);
      if (!consumer) throw new ZephyrError("INTERNAL", `stage ${stage.id} scatters to no stage`);
      const tagByte = consumer.input.kind === "join" && consumer.input.right === stage.id ? JOIN_RIGHT_TAG : JOIN_LEFT_TAG;
      const shuffle = consumer.input.kind === "shuffle" ? consumer.input : undefined;
      // Inline, the reducer runs in this thread: deduplicate and groupBy hold their exchange in memory while it fits the budget.
      const memory = backend === "inline" && shuffle ? (shuffle.mode === "dedup" ? "dedup" : "group") : undefined;
      const values = jsonPassthrough(consumer, sink.kind, backend) ? "json" : undefined;
      return {
        kind: "scatter",
        dir: path.join(scratch, tag),
        partitions: shards[consumer.id],
        tag: tagByte,
        localDedup: shuffle?.mode === "dedup",
        memory,
        ...(values ? { values } : {}),
      };
    }
    case "sink":
      switch (sink.kind) {
        case "collect":
          // Out-of-process backends hand records back through a file.
          return backend === "iris" ? { kind: "chunks", file: path.join(scratch, `${tag}.collect`) } : { kind: "collect" };
        case "count":
          return { kind: "count" };
        case "jsonl":
          return { kind: "jsonl", path: finalPaths[i], fingerprint, ...(jsonPassthrough(stage, sink.kind, backend) ? { encoded: true } : {}) };
        case "parquet":
          return { kind: sink.kind, path: finalPaths[i], fingerprint };
        case "tokenCache":
          void n;
          return { kind: "tokenCache", dir: path.resolve(sink.dir), tokenizer: options.tokenizer ?? "unknown", vocabSize: options.vocabSize ?? 2 ** 31, fingerprint };
      }
  }
}

async function sinkValue(
  sink: SinkSpec,
  outs: OutputResult[] | undefined,
  finalPaths: string[],
  committed: Map<number, CommittedShard>,
  fingerprint: string,
  allCommitted: boolean,
): Promise<unknown> {
  if (sink.kind === "collect") {
    const records: unknown[] = [];
    for (const o of outs ?? []) {
      if (o.kind === "collect") for (const r of o.records) records.push(r);
      else if (o.kind === "chunks") for await (const b of readChunkRange({ file: o.file, skip: 0, take: o.count })) for (const r of b) records.push(r);
    }
    return records;
  }
  if (sink.kind === "count") return (outs ?? []).reduce((a, o) => a + (o.kind === "count" ? o.count : 0), 0);
  const shardFiles = allCommitted
    ? []
    : (outs ?? []).map((o) => {
        if (o.kind !== "file") throw new ZephyrError("INTERNAL", "expected file outputs");
        return o;
      });
  // Every shard of the stage has succeeded: publish the staged ones under their final names.
  const staged = shardFiles.flatMap((o) => (o.outcome === "staged" && o.staged !== undefined ? [{ staged: o.staged, path: o.path, count: o.count }] : []));
  const published = new Map((await publishShards(staged, fingerprint)).map((c) => [c.path, c]));
  const files: CommittedShard[] = allCommitted
    ? finalPaths.map((_, i) => committed.get(i)!)
    : shardFiles.map((o) => published.get(o.path) ?? { path: o.path, count: o.count, bytes: o.bytes });
  let manifest: string;
  if (sink.kind === "tokenCache") {
    const lev = await loadLevanterSharding();
    await lev.finalizeTokenCache(path.resolve(sink.dir), { numShards: files.length });
    manifest = path.join(path.resolve(sink.dir), "ledger.json");
  } else {
    await removeStaleTemps(finalPaths);
    manifest = await writeSuccessManifest(files, fingerprint);
  }
  return { paths: files.map((f) => f.path), counts: files.map((f) => f.count), manifest };
}
