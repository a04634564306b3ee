// The evaluateLmStep standard step: loss and bits per byte of a final checkpoint (levanter).
import { promises as fs } from "node:fs";
import path from "node:path";
import { z } from "@marin/iris/toolkit";
import { defineStep } from "../step/step.ts";
import { checkOptions, RESOURCE_KEYS } from "./options.ts";
import type { OutputRef, Step, StepResources } from "../step/step.ts";

const configSchema = z.object({
  checkpoints: z.string(),
  data: z.string(),
  batchSize: z.number().int().positive(),
  maxBatches: z.number().int().positive().nullable(),
});

/** Options of {@link evaluateLmStep}. */
export interface EvaluateLmStepOptions {
  /** Step name (default `evaluate`). */
  name?: string;
  /** `outputOf(trainStep, "checkpoints")`: the newest checkpoint there is evaluated (training always ends with one). */
  checkpoints: OutputRef;
  /** `outputOf(tokenizeStep, "validation")`: a token cache. */
  data: OutputRef;
  batchSize?: number;
  maxBatches?: number | null;
  /** Resources of the iris job (default one core). */
  resources?: StepResources;
}

/** Loss (nats/token) and bits per byte of the final checkpoint on a validation token cache; writes `eval.json`. */
export function evaluateLmStep(opts: EvaluateLmStepOptions): Step<any> {
  checkOptions("evaluateLmStep", { name: true, checkpoints: true, data: true, batchSize: true, maxBatches: true, resources: RESOURCE_KEYS }, opts);
  return defineStep({
    name: opts.name ?? "evaluate",
    description: "loss and bits per byte on the validation cache",
    version: "1",
    schema: configSchema,
    // Its own process: tfjs keeps global engine state that concurrent in-process steps would share.
    resources: opts.resources ?? { cpuMillis: 1000 },
    config: { checkpoints: opts.checkpoints, data: opts.data, batchSize: opts.batchSize ?? 16, maxBatches: opts.maxBatches ?? null },
    fn: async (ctx) => {
      const cfg = ctx.config as z.infer<typeof configSchema>;
      const { evaluateCheckpoint } = await import("@marin/levanter");
      const r = await evaluateCheckpoint({
        checkpoint: cfg.checkpoints,
        data: cfg.data,
        batchSize: cfg.batchSize,
        ...(cfg.maxBatches !== null ? { maxBatches: cfg.maxBatches } : {}),
      });
      const result = { loss: r.loss, bpb: r.bpb, tokens: r.tokens, step: r.step };
      await fs.writeFile(path.join(ctx.outputPath, "eval.json"), JSON.stringify({ ...result, checkpoint: path.basename(r.checkpoint) }, null, 2) + "\n");
      return result;
    },
  });
}
