// zephyr's execution contracts, types only: the run options and results the user surface
// (dataset.ts, pipeline.ts) hands over and gets back, and the Backend and task shapes the
// coordinator, the backends and their workers share. No code: importing it loads nothing.
import type { IrisClient } from "@marin/iris";
import type { ZephyrErrorCode } from "../errors.ts";
import type { LogicalPlan } from "../plan/ops.ts";
import type { Stage } from "../plan/planner.ts";
import type { ChunkRange } from "./chunkFile.ts";
import type { ScatterRef } from "./exchange.ts";
import type { OutputResult, ShardOutputSpec } from "./outputs.ts";

// ---- What users pass and get back ----------------------------------------------------------

/** The backends a sink can run on. */
export type ZephyrBackendName = "inline" | "threads" | "iris";

/** Settings of the iris backend. */
export interface IrisBackendOptions {
  /** A connected client (for example `LocalCluster.client`). */
  client?: IrisClient;
  /** Address of the controller (default: the client of the enclosing iris task, via getIrisCtx()). */
  address?: string;
  /** Bearer token for `address`. */
  token?: string;
  /** CPU millicores per shard task (default 1000). */
  cpuMillis?: number;
  /** Memory per shard task in bytes. */
  memoryBytes?: number;
  /** Prefix of the job names (default `zephyr`). */
  jobPrefix?: string;
  /**
   * Ship a code bundle with the stage jobs (iris `submit`'s `bundle`: `true` = the current git
   * work tree, or a directory in one). Default: none, except that inside an iris task run from a
   * bundle the stage jobs run from that same bundle.
   */
  bundle?: boolean | string;
}

/** Options every sink takes (its last argument). */
export interface DatasetRunOptions {
  /** `inline` (this thread), `threads` (a worker pool), or `iris` (one iris task per shard). Default: `threads` for a `definePipeline` Dataset, else `inline`. */
  backend?: ZephyrBackendName;
  /** Worker threads for the `threads` backend (default: one per core). */
  threads?: number;
  /** Times a failed shard is retried before the run fails (default 2). Errors in user code and bad records are not retried. */
  maxShardRetries?: number;
  /** Memory a shuffle may buffer per shard before it spills (default 256 MiB). */
  memoryBudgetBytes?: number;
  /** Where intermediate files go (default: a fresh directory under the OS temp dir, removed after the run). */
  scratchDir?: string;
  /** Show a progress bar per stage (default: when stderr is a TTY). */
  progress?: boolean;
  /** The iris backend's settings. */
  iris?: IrisBackendOptions;
}

/** Options of the file sinks. */
export interface WriteOptions extends DatasetRunOptions {
  /** Keep shards already committed by an earlier run and run only the missing ones. */
  skipExisting?: boolean;
}

/** Options of `writeTokenCache`. */
export interface TokenCacheOptions extends WriteOptions {
  /** Tokenizer name recorded in the cache (default `"unknown"`). */
  tokenizer?: string;
  /** Every id must be below this (default 2^31). */
  vocabSize?: number;
}

/** Per-stage (and per-shard) counters. */
export interface StageCounters {
  /** Records read from the stage's input. */
  recordsIn: number;
  /** Records the stage's operations produced (what its output received). */
  recordsOut: number;
  /** Bytes read (for a file source: the files' sizes on disk, compressed). */
  bytesIn: number;
  /** Bytes written (files, chunks, scatter runs; 0 for in-memory outputs). */
  bytesOut: number;
  /** Time spent running the shard, in milliseconds. */
  timeMs: number;
}

/** Counters of one stage. */
export interface StageStats {
  /** The stage's index in the plan. */
  readonly id: number;
  /** The stage as `explain()` names it (input → operations → output). */
  readonly name: string;
  /** Number of shards the stage ran (and skipped). */
  readonly shards: number;
  /** Summed over shards; `timeMs` is the summed shard time. */
  readonly counters: StageCounters;
  /** Wall-clock time of the stage. */
  readonly wallMs: number;
  /** Shards skipped because their output was already committed. */
  readonly skipped: number;
  /** Failed attempts that were retried. */
  readonly retries: number;
}

/** What a run reports besides its result. */
export interface RunStats {
  /** The backend the run used. */
  readonly backend: ZephyrBackendName;
  /** The run's identity (see `runIdentity`): what its outputs' commit markers carry. */
  readonly fingerprint: string;
  /** Per-stage counters, in stage order. */
  readonly stages: readonly StageStats[];
  /** User counters (`ctx.counter(name)`), plus `badRecords` for skipped malformed lines. */
  readonly counters: Readonly<Record<string, number>>;
  /** Wall-clock time of the whole run, in milliseconds. */
  readonly wallMs: number;
}

/** What a file sink resolves to. */
export interface WriteResult {
  /** One path per shard, in shard order. */
  readonly paths: string[];
  /** Records per shard. */
  readonly counts: number[];
  /** The `_SUCCESS` manifest (for the token cache: its ledger.json). */
  readonly manifest: string;
  /** The run's counters. */
  readonly stats: RunStats;
}

/** Where a Dataset built by a `definePipeline` module came from, so workers can rebuild it. */
export interface PipelineOrigin {
  /** The module's `import.meta.url`. */
  readonly url: string;
  /** The pipeline's name within its module. */
  readonly name: string;
  /** The JSON arguments the build function was called with. */
  readonly args: unknown;
}

// ---- What the user surface hands the coordinator -------------------------------------------

/** What a sink runs: a Dataset's logical plan and, for a `definePipeline` Dataset, its origin. */
export interface RunSource {
  /** The recorded source and operations. */
  readonly logical: LogicalPlan;
  /** Set for a Dataset a `definePipeline` factory returned (workers rebuild it from there). */
  readonly origin: PipelineOrigin | undefined;
}

/** What a plan ends in. */
export type SinkSpec =
  | { readonly kind: "collect" }
  | { readonly kind: "count" }
  | { readonly kind: "jsonl"; readonly pattern: string }
  | { readonly kind: "parquet"; readonly pattern: string }
  | { readonly kind: "tokenCache"; readonly dir: string };

/** Every option any sink accepts (what the coordinator receives). */
export type SinkOptions = TokenCacheOptions & { withStats?: boolean };

/** What a sink's run resolves to: the sink's value and the run's counters. */
export interface RunOutcome {
  /** The sink's value: records, a count, or (file sinks) a WriteResult. */
  readonly value: unknown;
  /** The run's counters. */
  readonly stats: RunStats;
}

// ---- What the coordinator hands its backends and they hand their workers -------------------

/** How one shard gets its records (resolved by the coordinator). */
export type ShardInput =
  | { readonly kind: "source" }
  | { readonly kind: "path"; readonly path: string }
  | { readonly kind: "chunks"; readonly ranges: readonly ChunkRange[] }
  | { readonly kind: "shuffle"; readonly refs: readonly ScatterRef[]; readonly partition: number; readonly tmpDir: string }
  | { readonly kind: "join"; readonly left: readonly ScatterRef[]; readonly right: readonly ScatterRef[]; readonly partition: number; readonly tmpDir: string };

/** Everything a backend sends to run one shard. */
export interface TaskSpec {
  /** The stage (its index in the plan). */
  readonly stageId: number;
  /** The shard of the stage (0-based). */
  readonly shard: number;
  /** Number of shards of the stage. */
  readonly numShards: number;
  /** Which attempt this is (0 for the first). */
  readonly attempt: number;
  /** Where the shard's records come from. */
  readonly input: ShardInput;
  /** Where the shard's records go. */
  readonly output: ShardOutputSpec;
  /** Memory a shuffle may buffer before it spills, in bytes. */
  readonly memoryBudgetBytes: number;
}

/** What one shard reports back. */
export interface TaskResult {
  /** The shard's counters. */
  readonly counters: StageCounters;
  /** The shard's user counters (`ctx.counter`). */
  readonly user: Record<string, number>;
  /** What the shard's output produced (records, a count, a file, chunks, a scatter). */
  readonly output: OutputResult;
}

/** How the coordinator wants failures handled. */
export interface StageHooks {
  /** Times a failed shard may be retried. */
  readonly maxRetries: number;
  /** Whether failure `e` may be retried at all. */
  isRetryable(e: unknown): boolean;
  /** Called for each failed attempt that is retried. */
  onRetry(e: unknown): void;
  /** Called as each shard succeeds (progress). */
  onShardDone(): void;
}

/** Runs the shards of a stage. */
export interface Backend {
  /** Runs `specs` (shards of `stage`) and resolves to their results in the same order. */
  runStage(stage: Stage, specs: readonly TaskSpec[], hooks: StageHooks): Promise<TaskResult[]>;
  /** Releases what the backend holds (a pool lease, a client). */
  close(): Promise<void>;
}

/**
 * A `definePipeline` run as an out-of-process backend sees it: where to rebuild the plan, and the
 * identity the coordinator computed for it (once per run; every worker checks its rebuilt plan
 * against it and never computes one of its own to hand on).
 */
export interface RemoteRun {
  /** Where workers rebuild the plan from. */
  readonly origin: PipelineOrigin;
  /** The run's identity (see `runIdentity`). */
  readonly identity: string;
}

/** One shard to run away from the coordinator. */
export interface RemoteTask {
  /** Where the worker rebuilds the plan from. */
  readonly origin: PipelineOrigin;
  /** The run's identity, as the coordinator computed it. */
  readonly identity: string;
  /** The shard to run. */
  readonly spec: TaskSpec;
}

/** An error as plain data. */
export interface RemoteError {
  /** The zephyr code, when the error was a ZephyrError. */
  readonly code?: ZephyrErrorCode;
  /** The error's `name`. */
  readonly name: string;
  /** The error's message. */
  readonly message: string;
  /** The error's stack, as the worker printed it. */
  readonly stack?: string;
}

/** A shard's outcome as plain data. */
export type RemoteReply = { readonly ok: true; readonly result: TaskResult } | { readonly ok: false; readonly error: RemoteError };
