// The iris job of a data-parallel training run: `ranks` gang members each running trainLm, which
// joins the gang by itself (see parallel/distributed.ts); used by `levanter train --ranks` and by marin.
import { getIrisCtx, IrisClient, IrisError, LocalCluster, localWorkerCapacity, type Job, type JobSpecInput, type JobStatus, type WorkerSummary } from "@marin/iris";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { formatZodIssues } from "@marin/iris/toolkit";
import { z } from "@marin/iris/toolkit";
import { LevanterError } from "../errors.ts";
import { log } from "../internal/log.ts";
import type { StatusSink } from "./status.ts";
import type { TrainLmResult } from "./trainLm.ts";
import { parseTrainLmConfig, type TrainLmConfig, type TrainLmConfigInput } from "./trainerConfig.ts";

// trainLm.ts next to this file (trainLm.js once built).
const here = fileURLToPath(import.meta.url);
const trainLmModule = path.join(path.dirname(here), `trainLm${path.extname(here)}`);

/** Options of {@link trainGangSpec}. */
export interface TrainGangOptions {
  /** Job name (default `levanter-train`). */
  name?: string;
  /** Gang retries after a failure (each resumes from the last checkpoint). Default 3. */
  maxRetries?: number;
  /** Extra env for every rank (e.g. `LEVANTER_LOG`). */
  env?: Record<string, string>;
  /** CPU of each rank in millicores (default: none requested). */
  cpuMillis?: number;
}

/**
 * The job spec of a `ranks`-way data-parallel run of `config`: a gang (all ranks start and retry
 * together), a `dp` port per rank for the rank-to-rank links, and trainLm as the entrypoint.
 */
export function trainGangSpec(config: TrainLmConfig | TrainLmConfigInput, ranks: number, opts: TrainGangOptions = {}): JobSpecInput {
  if (!Number.isInteger(ranks) || ranks < 1) throw new LevanterError("INVALID_CONFIG", `ranks: expected a positive integer, got ${ranks}`);
  return {
    name: opts.name ?? "levanter-train",
    entrypoint: { module: trainLmModule, export: "trainLm", args: config },
    replicas: ranks,
    gang: ranks > 1,
    ports: ["dp"],
    maxRetriesFailure: opts.maxRetries ?? 3,
    ...(opts.cpuMillis !== undefined ? { resources: { cpuMillis: opts.cpuMillis } } : {}),
    ...(opts.env ? { env: opts.env } : {}),
  };
}

/** Submits {@link trainGangSpec} to `client`. */
export function submitTrainGang(client: IrisClient, config: TrainLmConfig | TrainLmConfigInput, ranks: number, opts: TrainGangOptions = {}): Promise<Job> {
  return client.submit(trainGangSpec(config, ranks, opts));
}

/** What {@link runTrainGang} reports when the gang ends. */
export interface GangTrainResult {
  state: string;
  ranks: number;
  job: string;
  /** Where rank 0 wrote the run (metrics, checkpoints). */
  runDir: string;
  /** Gang attempts the run took: 1 when nothing was rerun (the most attempts of any rank). */
  attempts: number;
  error?: string;
  /** Rank 0's trainLm result (when it succeeded). */
  result?: Pick<TrainLmResult, "step" | "resumedFrom" | "finalLoss" | "parameterCount" | "stoppedEarly" | "evalBySource">;
}

/** Options of {@link runTrainGang}. */
export interface RunTrainGangOptions {
  /** An iris controller to submit to (token from `token`). */
  cluster?: string;
  token?: string;
  /** Receives every rank's log lines, prefixed `[rank i] ` (default: dropped). */
  logOut?: NodeJS.WritableStream;
  /** Terminates the gang when it fires. */
  signal?: AbortSignal;
  /**
   * Receives rank 0's status reports as they reach iris (the progress line — step, loss, tok/s,
   * MFU, ETA — and the metrics point reported with it), so a caller inside an iris task can show
   * the gang's progress as its own (marin's `trainLmStep` does). A failing sink is logged, never
   * raised.
   */
  statusSink?: StatusSink;
}

/**
 * Follows rank 0's status on `client` and hands each new one to `sink` in order: called with
 * every job status the wait sees; a new status text fetches the newest metrics point with it.
 */
function rankZeroStatus(client: IrisClient, sink: StatusSink): { onStatus: (st: JobStatus) => void; flush: () => Promise<void> } {
  let lastText = "";
  // When the last forwarded point was recorded: a retried attempt's points (resumed at an
  // earlier step) are new too.
  let lastTimeMs = -Infinity;
  let chain = Promise.resolve();
  return {
    onStatus: (st) => {
      const t0 = st.tasks.find((t) => t.index === 0);
      const text = t0?.statusText;
      if (!t0 || text === undefined || text === "" || text === lastText) return;
      lastText = text;
      chain = chain
        .then(async () => {
          const { points } = await client.getTaskMetrics(t0.taskId);
          const newest = points.at(-1);
          const fresh = newest !== undefined && newest.timeMs > lastTimeMs;
          if (fresh) lastTimeMs = newest.timeMs;
          await sink(text, fresh ? newest.metrics : {});
        })
        .catch((e: unknown) => log("warn", "forwarding rank 0's status failed", { error: String(e) }));
    },
    flush: () => chain,
  };
}

// Tasks may run in another directory (or on another machine sharing the filesystem): every
// path of the config becomes absolute.
function absolutePaths(config: TrainLmConfig): TrainLmConfig {
  const abs = (p: string) => path.resolve(p);
  const data = { ...config.data };
  if (config.data.trainCache !== undefined) data.trainCache = abs(config.data.trainCache);
  if (config.data.mixture !== undefined) {
    data.mixture = {
      ...config.data.mixture,
      sources: config.data.mixture.sources.map((s) => ({
        ...s,
        trainCache: abs(s.trainCache),
        ...(s.validationCache !== undefined ? { validationCache: abs(s.validationCache) } : {}),
      })),
    };
  }
  if (config.data.validationCache !== undefined) data.validationCache = abs(config.data.validationCache);
  if (config.data.tokenizerJson !== undefined) data.tokenizerJson = abs(config.data.tokenizerJson);
  return { ...config, data, trainer: { ...config.trainer, runDir: abs(config.trainer.runDir) } };
}

// What a gang needs of `GetClusterStatus` (the controller's JSON, checked: it comes over the wire).
const clusterStatusSchema = z.object({
  groups: z.array(
    z.object({
      name: z.string(),
      maxWorkers: z.number(),
      worker: z.object({ cpuMillis: z.number(), memoryBytes: z.number() }).optional(),
      workers: z.array(z.object({ workerId: z.string() })),
    }),
  ),
});

/** Where a gang of `ranks` runs, inside an iris task, and why (logged by {@link runTrainGang}). */
export interface GangPlacement {
  onCluster: boolean;
  reason: string;
}

/**
 * Whether the cluster could ever hold a gang of `ranks` (one rank per worker, each asking
 * `request`): it has `ranks` workers now, or one of its autoscaler's groups whose worker shape holds
 * a rank could start them. The autoscaler provisions a gang whole, within one group, on workers
 * holding no attempt; the worker running this task (`ownWorker`) stays busy while it waits for the
 * gang, so it is not counted in its group's max. `status` is GetClusterStatus' JSON, or undefined
 * when the controller has no autoscaler.
 */
export function gangPlacement(
  ranks: number,
  workers: readonly WorkerSummary[],
  status: unknown,
  opts: { ownWorker?: string | undefined; request?: { cpuMillis?: number; memoryBytes?: number } } = {},
): GangPlacement {
  const alive = workers.filter((w) => w.state === "ALIVE").length;
  if (alive >= ranks) return { onCluster: true, reason: `the iris cluster has ${alive} worker(s) for ${ranks} ranks: running the gang as a child job` };
  const fallback = "running the gang on an embedded local cluster on this machine";
  if (status === undefined) return { onCluster: false, reason: `the iris cluster has ${alive} worker(s), fewer than ${ranks} ranks, and no autoscaler: ${fallback}` };
  const parsed = clusterStatusSchema.safeParse(status);
  if (!parsed.success) throw new LevanterError("INVALID_CONFIG", `the controller's cluster status is not understood: ${formatZodIssues(parsed.error)}`);
  const req = opts.request ?? {};
  const holding = parsed.data.groups
    .filter((g) => g.worker === undefined || (g.worker.cpuMillis >= (req.cpuMillis ?? 0) && g.worker.memoryBytes >= (req.memoryBytes ?? 0)))
    .map((g) => ({ name: g.name, max: g.maxWorkers, room: g.maxWorkers - (g.workers.some((w) => w.workerId === opts.ownWorker) ? 1 : 0) }));
  const described = holding.map((g) => `${g.name} (max ${g.max}${g.room < g.max ? ", this task's worker among them" : ""})`).join(", ") || "none";
  const best = holding.reduce<(typeof holding)[number] | undefined>((b, g) => (b === undefined || g.room > b.room ? g : b), undefined);
  if (best !== undefined && best.room >= ranks) {
    return {
      onCluster: true,
      reason: `the iris cluster has ${alive} worker(s) now and its autoscaler could start ${ranks} in group ${best.name} (groups holding a rank: ${described}): running the gang as a child job`,
    };
  }
  return {
    onCluster: false,
    reason: `the iris cluster has ${alive} worker(s) and no scale group could start ${ranks} for the gang (groups holding a rank: ${described}): ${fallback}`,
  };
}

/** GetClusterStatus' JSON, or undefined when the controller has no autoscaler. */
async function clusterStatusOf(client: IrisClient): Promise<unknown> {
  try {
    return await client.clusterStatus();
  } catch (e) {
    if (e instanceof IrisError && e.code === "FAILED_PRECONDITION") return undefined;
    throw e;
  }
}

/**
 * Runs `config` on `ranks` data-parallel ranks and waits for the end: on the controller at
 * `cluster`; else, inside an iris task, as a child job of it (when its cluster has a worker per
 * rank or its autoscaler could start them, see {@link gangPlacement}); else on an embedded
 * LocalCluster with one worker per rank, each offering its share of this machine's cores, running
 * the ranks from this process's own code (inside a task run from a bundle: the unpacked bundle).
 */
export async function runTrainGang(input: TrainLmConfig | TrainLmConfigInput, ranks: number, opts: RunTrainGangOptions = {}): Promise<GangTrainResult> {
  const config = absolutePaths(parseTrainLmConfig(input));
  let ctx = opts.cluster === undefined ? getIrisCtx() : undefined;
  if (ctx) {
    // A gang places one rank per worker: on a cluster that could never hold that many (marin's
    // embedded one has one), the ranks run on this task's machine, on an embedded cluster of their own.
    const workers = await ctx.client.listWorkers();
    const status = workers.filter((w) => w.state === "ALIVE").length >= ranks ? undefined : await clusterStatusOf(ctx.client);
    const placement = gangPlacement(ranks, workers, status, { ownWorker: ctx.workerId });
    log(placement.onCluster ? "info" : "warn", placement.reason);
    if (!placement.onCluster) ctx = undefined;
  }
  const local = opts.cluster === undefined && !ctx ? await LocalCluster.start({ workers: ranks }) : undefined;
  const client = opts.cluster !== undefined ? IrisClient.connect(opts.cluster, opts.token !== undefined ? { token: opts.token } : {}) : undefined;
  try {
    const spec = trainGangSpec(config, ranks, {
      ...(local ? { cpuMillis: localWorkerCapacity(ranks).cpuMillis } : {}),
      env: { LEVANTER_LOG: process.env.LEVANTER_LOG ?? "info" },
    });
    const jobClient = ctx ? ctx.client : (local?.client ?? client!);
    // The embedded cluster has none of this task's bundle: its ranks run the code where it lies
    // (the bundle unpacked for this task), not from a bundle it would refuse.
    const job = ctx ? await ctx.submitChild(spec) : await jobClient.submit(spec, local ? { bundle: false } : {});
    const progress = opts.statusSink ? rankZeroStatus(jobClient, opts.statusSink) : undefined;
    const onAbort = () => void job.terminate().catch(() => {});
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const out = opts.logOut;
    const logs = out
      ? (async () => {
          for await (const e of job.logs({ follow: true })) out.write(`[rank ${e.taskIndex}] ${e.line}\n`);
        })().catch(() => {})
      : Promise.resolve();
    const status = await job.wait(progress ? { onStatus: progress.onStatus } : {}).finally(() => opts.signal?.removeEventListener("abort", onAbort));
    await Promise.all([logs, progress?.flush()]);
    const results = status.state === "SUCCEEDED" ? await job.results() : [];
    const r0 = results[0] as TrainLmResult | undefined;
    return {
      state: status.state,
      ranks,
      job: status.name,
      runDir: config.trainer.runDir,
      attempts: Math.max(1, ...status.tasks.map((t) => Math.max(t.attempts.length, t.attempt))),
      ...(status.error ? { error: status.error } : {}),
      ...(r0
        ? {
            result: {
              step: r0.step,
              stoppedEarly: r0.stoppedEarly,
              parameterCount: r0.parameterCount,
              ...(r0.resumedFrom !== undefined ? { resumedFrom: r0.resumedFrom } : {}),
              ...(r0.finalLoss !== undefined ? { finalLoss: r0.finalLoss } : {}),
              ...(r0.evalBySource ? { evalBySource: r0.evalBySource } : {}),
            },
          }
        : {}),
    };
  } finally {
    await local?.stop();
    client?.close();
  }
}
