// The evaluateViaService standard step: loss and bits per byte of the final checkpoint, scored
// through an inference service (remoteInference + /v1/completions prompt logprobs).
import { promises as fs } from "node:fs";
import path from "node:path";
import { z } from "@marin/iris/toolkit";
import { remoteInference } from "../service/remoteInference.ts";
import { scoreViaService } from "../service/scoreViaService.ts";
import { defineStep } from "../step/step.ts";
import { checkOptions, RESOURCE_KEYS } from "./options.ts";
import type { OutputRef, Step, StepResources } from "../step/step.ts";

const configSchema = z.object({
  checkpoints: z.string(),
  data: z.string(),
  batchSize: z.number().int().positive(),
  maxBatches: z.number().int().positive().nullable(),
  replicas: z.number().int().positive(),
});

/** Options of {@link evaluateViaService}. */
export interface EvaluateViaServiceOptions {
  /** Step name (default `evaluate-service`). */
  name?: string;
  /** `outputOf(trainStep, "checkpoints")`: the newest checkpoint there is served. */
  checkpoints: OutputRef;
  /** `outputOf(tokenizeStep, "validation")`: a token cache. */
  data: OutputRef;
  batchSize?: number;
  maxBatches?: number | null;
  /** Server replicas (default 1). */
  replicas?: number;
  /** Resources of the step's own iris job, which only sends requests (default a quarter core). */
  resources?: StepResources;
  /** Resources of each server replica (default one core). */
  serverResources?: StepResources;
}

/**
 * Loss (nats/token) and bits per byte of the final checkpoint on a validation cache, scored by
 * the inference service (`echo` + `logprobs`, `max_tokens: 0`) in windows of the model's context;
 * writes `eval.json`. The loss equals levanter's `evaluateLm` on the same checkpoint and data
 * (see `scoreViaService`).
 */
export function evaluateViaService(opts: EvaluateViaServiceOptions): Step<any> {
  checkOptions(
    "evaluateViaService",
    { name: true, checkpoints: true, data: true, batchSize: true, maxBatches: true, replicas: true, resources: RESOURCE_KEYS, serverResources: RESOURCE_KEYS },
    opts,
  );
  return defineStep({
    name: opts.name ?? "evaluate-service",
    description: "loss and bits per byte on the validation cache, through the inference service",
    version: "1",
    schema: configSchema,
    // An iris job, so that the server is its child job (and dies with it).
    resources: opts.resources ?? { cpuMillis: 250 },
    config: { checkpoints: opts.checkpoints, data: opts.data, batchSize: opts.batchSize ?? 16, maxBatches: opts.maxBatches ?? null, replicas: opts.replicas ?? 1 },
    fn: async (ctx) => {
      const cfg = ctx.config as z.infer<typeof configSchema>;
      const r = await remoteInference(
        { checkpoint: cfg.checkpoints, replicas: cfg.replicas, ...(opts.serverResources ? { resources: opts.serverResources } : {}), name: "evaluate", log: (l) => ctx.log(l) },
        (s) =>
          scoreViaService({ baseUrl: s.baseUrl, model: s.model, data: cfg.data, batchSize: cfg.batchSize, ...(cfg.maxBatches !== null ? { maxBatches: cfg.maxBatches } : {}) }),
      );
      const result = { loss: r.loss, bpb: r.bpb, tokens: r.tokens, window: r.window };
      await fs.writeFile(path.join(ctx.outputPath, "eval.json"), JSON.stringify(result, null, 2) + "\n");
      return result;
    },
  });
}
