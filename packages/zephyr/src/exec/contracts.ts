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
  recordsIn: number;
  recordsOut: number;
  bytesIn: number;
  bytesOut: number;
  timeMs: number;
}

/** Counters of one stage. */
export interface StageStats {
  readonly id: number;
  readonly name: string;
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
  readonly backend: ZephyrBackendName;
  /** The run's identity (see `runIdentity`): what its outputs' commit markers carry. */
  readonly fingerprint: string;
  readonly stages: readonly StageStats[];
  /** User counters (`ctx.counter(name)`), plus `badRecords` for skipped malformed lines. */
  readonly counters: Readonly<Record<string, number>>;
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
  readonly logical: LogicalPlan;
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
  readonly value: unknown;
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
  readonly stageId: number;
  readonly shard: number;
  readonly numShards: number;
  readonly attempt: number;
  readonly input: ShardInput;
  readonly output: ShardOutputSpec;
  readonly memoryBudgetBytes: number;
}

/** What one shard reports back. */
export interface TaskResult {
  readonly counters: StageCounters;
  readonly user: Record<string, number>;
  readonly output: OutputResult;
}

/** How the coordinator wants failures handled. */
export interface StageHooks {
  readonly maxRetries: number;
  isRetryable(e: unknown): boolean;
  onRetry(e: unknown): void;
  onShardDone(): void;
}

/** Runs the shards of a stage. */
export interface Backend {
  runStage(stage: Stage, specs: readonly TaskSpec[], hooks: StageHooks): Promise<TaskResult[]>;
  close(): Promise<void>;
}

/**
 * A `definePipeline` run as an out-of-process backend sees it: where to rebuild the plan, and the
 * identity the coordinator computed for it (once per run; every worker checks its rebuilt plan
 * against it and never computes one of its own to hand on).
 */
export interface RemoteRun {
  readonly origin: PipelineOrigin;
  readonly identity: string;
}

/** One shard to run away from the coordinator. */
export interface RemoteTask {
  readonly origin: PipelineOrigin;
  /** The run's identity, as the coordinator computed it. */
  readonly identity: string;
  readonly spec: TaskSpec;
}

/** An error as plain data. */
export interface RemoteError {
  readonly code?: ZephyrErrorCode;
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
}

/** A shard's outcome as plain data. */
export type RemoteReply = { readonly ok: true; readonly result: TaskResult } | { readonly ok: false; readonly error: RemoteError };
