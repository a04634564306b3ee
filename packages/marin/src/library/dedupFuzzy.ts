// The dedupFuzzy standard step: one document per group of near-duplicates (zephyr `dedupFuzzy`).
import { z } from "@marin/iris/toolkit";
import { defineStep } from "../step/step.ts";
import { checkOptions } from "./options.ts";
import type { OutputRef, Step } from "../step/step.ts";
import { documentsPattern, readDocuments, ZEPHYR_RUN } from "./documents.ts";

const configSchema = z.object({
  input: z.string(),
  threshold: z.number().gt(0).lt(1),
  ngram: z.number().int().positive(),
  permutations: z.number().int().positive(),
  seed: z.number().int(),
  verify: z.boolean(),
});

/** Options of {@link dedupFuzzy}. */
export interface DedupFuzzyStepOptions {
  /** Step name (default `dedupFuzzy`). */
  name?: string;
  /** Documents written by a standard data step: `outputOf(step)`. */
  input: OutputRef;
  /** Jaccard similarity of word n-gram sets from which documents are near-duplicates (default 0.8). */
  threshold?: number;
  /** Words per shingle (default 5). */
  ngram?: number;
  /** MinHash permutations (default 128). */
  permutations?: number;
  /** Seed of the permutations (default 1). */
  seed?: number;
  /** Check candidate pairs' exact Jaccard similarity (default false). */
  verify?: boolean;
}

/** What {@link dedupFuzzy} returns (the step's result, shown by `marin status` and the dashboard). */
export interface DedupFuzzyResult {
  kept: number;
  removed: number;
  /** Components of the near-duplicate graph (one kept document each). */
  components: number;
  /** Components with two or more documents. */
  duplicateGroups: number;
  /** Rounds of label propagation the components took. */
  rounds: number;
}

/**
 * Keeps the first document (in input order) of each group of near-duplicates: MinHash over word
 * n-grams, LSH bands derived from `threshold`, connected components as a zephyr job.
 */
export function dedupFuzzy(opts: DedupFuzzyStepOptions): Step<any> {
  checkOptions("dedupFuzzy", { name: true, input: true, threshold: true, ngram: true, permutations: true, seed: true, verify: true }, opts);
  return defineStep({
    name: opts.name ?? "dedupFuzzy",
    description: "near-duplicate removal (MinHash LSH, connected components)",
    version: "1",
    schema: configSchema,
    config: {
      input: opts.input,
      threshold: opts.threshold ?? 0.8,
      ngram: opts.ngram ?? 5,
      permutations: opts.permutations ?? 128,
      seed: opts.seed ?? 1,
      verify: opts.verify ?? false,
    },
    fn: async (ctx): Promise<DedupFuzzyResult> => {
      const cfg = ctx.config as z.infer<typeof configSchema>;
      const { input, ...params } = cfg;
      const written = await (await readDocuments(input)).dedupFuzzy({ text: (d) => d.text, ...params }).writeJsonl(documentsPattern(ctx.outputPath), ZEPHYR_RUN);
      const c = written.stats.counters;
      const kept = written.counts.reduce((a, b) => a + b, 0);
      const result: DedupFuzzyResult = {
        kept,
        removed: c["dedupFuzzy.removed"] ?? 0,
        components: c["dedupFuzzy.components"] ?? 0,
        duplicateGroups: c["dedupFuzzy.duplicateGroups"] ?? 0,
        rounds: c["dedupFuzzy.cc.rounds"] ?? 0,
      };
      ctx.log(`kept ${kept} of ${kept + result.removed} documents (${result.duplicateGroups} near-duplicate groups, ${result.rounds} component rounds)`);
      return result;
    },
  });
}
