// The iris job of a data-parallel training run: `ranks` gang members each running trainLm, which
// joins the gang by itself (see distributed.ts); used by `levanter train --ranks` and by marin.
import type { IrisClient, Job, JobSpecInput } from "@marin/iris";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { LevanterError } from "../errors.ts";
import type { TrainLmConfig, TrainLmConfigInput } from "./trainerConfig.ts";

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
