// The `optimizer` section of a training config (zod schema and its input/output types).
import { z } from "@marin/iris/toolkit";

const fracOrSteps = z
  .number()
  .nonnegative()
  .refine((v) => v < 1 || Number.isInteger(v), { message: "expected a fraction below 1 or a whole number of steps" });
const intOrList = z.union([z.number().int().positive(), z.array(z.number().int().positive()).min(1)]);

/**
 * The `optimizer` section: AdamW and its learning-rate schedule. `warmup`, `decay` and `rewarmup`
 * are a fraction of the cycle when below 1, else whole steps (JSON cannot tell `1.0` from `1`,
 * so unlike upstream a value of 1 means one step). Each cycle is `[(re)warmup] → [stable] → [decay]`; `decay`
 * unset means everything after warmup decays, a smaller `decay` gives WSD (warmup-stable-decay).
 */
export const OptimizerConfigSchema = z
  .object({
    learningRate: z.number().nonnegative().default(6e-4),
    weightDecay: z.number().nonnegative().default(0.1),
    beta1: z.number().min(0).max(1).default(0.9),
    beta2: z.number().min(0).max(1).default(0.95),
    epsilon: z.number().positive().default(1e-8),
    /** Global-norm gradient clipping threshold; 0 disables. */
    maxGradNorm: z.number().nonnegative().default(1.0),
    /** `wsd` = warmup-stable-decay: linear decay over `decay` (default 0.2 of each cycle). */
    lrSchedule: z.enum(["constant", "linear", "cosine", "inv_sqrt", "wsd"]).default("cosine"),
    minLrRatio: z.number().min(0).max(1).default(0.1),
    warmup: fracOrSteps.default(0.01),
    decay: fracOrSteps.optional(),
    rewarmup: fracOrSteps.default(0),
    /** Number of cycles (int), or their end steps (list). */
    cycles: intOrList.optional(),
    /** Length of every cycle (int), or each cycle's length (list). */
    cycleLength: intOrList.optional(),
    /** Parameter-name regexes excluded from weight decay; default: norms, biases, embeddings. */
    noDecay: z.array(z.string()).optional(),
  })
  .strict()
  .refine((o) => o.cycles === undefined || o.cycleLength === undefined, {
    message: "set cycles or cycleLength, not both",
    path: ["cycleLength"],
  });

/** The `optimizer` section as written in a config file. */
export type OptimizerConfigInput = z.input<typeof OptimizerConfigSchema>;

/** The `optimizer` section after validation and defaults. */
export type OptimizerConfig = z.output<typeof OptimizerConfigSchema>;
