// The qualityFilter standard step: Gopher/C4-style rules (zephyr `qualityFilter`).
import { z } from "@marin/iris/toolkit";
import { QUALITY_RULE_NAMES, type QualityRules } from "@marin/zephyr";
import { defineStep } from "../step/step.ts";
import { checkOptions } from "./options.ts";
import type { OutputRef, Step } from "../step/step.ts";
import { documentsPattern, readDocuments, ZEPHYR_RUN } from "./documents.ts";

const bounds = z.strictObject({ min: z.number().optional(), max: z.number().optional() });
// The bounded rules (every rule zephyr knows but the n-gram table, which has its own shape).
const RULES = QUALITY_RULE_NAMES.filter((r) => r !== "topNgramCharFraction");
const rulesSchema = z.strictObject({
  ...Object.fromEntries(RULES.map((r) => [r, z.union([z.literal(false), bounds]).optional()])),
  topNgramCharFraction: z.union([z.literal(false), z.record(z.string().regex(/^[1-9][0-9]*$/), z.number())]).optional(),
});
const configSchema = z.object({ input: z.string(), rules: rulesSchema });

/** Options of {@link qualityFilter}. */
export interface QualityFilterStepOptions {
  /** Step name (default `qualityFilter`). */
  name?: string;
  /** Documents written by a standard data step: `outputOf(step)`. */
  input: OutputRef;
  /** Rule thresholds over zephyr's defaults (`DEFAULT_QUALITY_RULES`); `false` turns a rule off. */
  rules?: QualityRules;
}

/** What {@link qualityFilter} returns. */
export interface QualityFilterResult {
  kept: number;
  dropped: number;
  /** Documents failing each rule (a dropped document may fail several). */
  perRule: Record<string, number>;
}

/** Keeps documents that pass the quality rules. */
export function qualityFilter(opts: QualityFilterStepOptions): Step<any> {
  checkOptions("qualityFilter", { name: true, input: true, rules: true }, opts);
  return defineStep({
    name: opts.name ?? "qualityFilter",
    description: "Gopher/C4 quality rules",
    version: "1",
    schema: configSchema,
    config: { input: opts.input, rules: opts.rules ?? {} },
    fn: async (ctx): Promise<QualityFilterResult> => {
      const cfg = ctx.config as z.infer<typeof configSchema>;
      const written = await (
        await readDocuments(cfg.input)
      )
        .qualityFilter({ text: (d) => d.text, rules: cfg.rules as QualityRules })
        .writeJsonl(documentsPattern(ctx.outputPath), ZEPHYR_RUN);
      const c = written.stats.counters;
      const perRule: Record<string, number> = {};
      for (const [k, v] of Object.entries(c))
        if (k.startsWith("qualityFilter.") && k !== "qualityFilter.kept" && k !== "qualityFilter.dropped") perRule[k.slice("qualityFilter.".length)] = v;
      const kept = written.counts.reduce((a, b) => a + b, 0);
      const dropped = c["qualityFilter.dropped"] ?? 0;
      ctx.log(
        `kept ${kept} of ${kept + dropped} documents; failed: ${
          Object.entries(perRule)
            .map(([k, v]) => `${k} ${v}`)
            .join(", ") || "none"
        }`,
      );
      return { kept, dropped, perRule };
    },
  });
}
