// `levanter train --ranks N [--cluster ADDR]`: a data-parallel run as an iris gang, on an embedded
// LocalCluster (one worker per rank) or on a running controller.
import { IrisClient, LocalCluster, localWorkerCapacity } from "@marin/iris";
import path from "node:path";
import { submitTrainGang } from "../trainer/gangJob.ts";
import type { TrainLmConfig } from "../trainer/trainerConfig.ts";

/** What `levanter train --ranks` reports when the gang ends. */
export interface GangTrainResult {
  state: string;
  ranks: number;
  job: string;
  /** Where rank 0 wrote the run (metrics, checkpoints). */
  runDir: string;
  error?: string;
}

// Tasks may run in another directory (and, with --cluster, on another machine that shares the
// filesystem): every path in the config becomes absolute.
function absolutePaths(config: TrainLmConfig): TrainLmConfig {
  const abs = (p: string | undefined) => (p === undefined ? undefined : path.resolve(p));
  const data = { ...config.data, trainCache: abs(config.data.trainCache)! };
  if (config.data.validationCache !== undefined) data.validationCache = abs(config.data.validationCache)!;
  if (config.data.tokenizerJson !== undefined) data.tokenizerJson = abs(config.data.tokenizerJson)!;
  return { ...config, data, trainer: { ...config.trainer, runDir: abs(config.trainer.runDir)! } };
}

/**
 * Runs `config` on `ranks` data-parallel ranks and waits for the end, printing every rank's log
 * lines to `logOut` prefixed with the rank. Without `cluster`, starts (and stops) a LocalCluster
 * with one worker per rank, each offering its share of this machine's cores.
 */
export async function trainGang(config: TrainLmConfig, ranks: number, opts: { cluster?: string; token?: string; logOut?: NodeJS.WritableStream } = {}): Promise<GangTrainResult> {
  const local = opts.cluster === undefined ? await LocalCluster.start({ workers: ranks }) : undefined;
  const client = local?.client ?? IrisClient.connect(opts.cluster!, opts.token !== undefined ? { token: opts.token } : {});
  try {
    const cfg = absolutePaths(config);
    const job = await submitTrainGang(client, cfg, ranks, {
      ...(local ? { cpuMillis: localWorkerCapacity(ranks).cpuMillis } : {}),
      env: { LEVANTER_LOG: process.env.LEVANTER_LOG ?? "info" },
    });
    const out = opts.logOut ?? process.stderr;
    const logs = (async () => {
      for await (const e of job.logs({ follow: true })) out.write(`[rank ${e.taskIndex}] ${e.line}\n`);
    })().catch(() => {});
    const status = await job.wait();
    await logs;
    return { state: status.state, ranks, job: status.name, runDir: cfg.trainer.runDir, ...(status.error ? { error: status.error } : {}) };
  } finally {
    await local?.stop();
  }
}
