// The decontaminate standard step: drop (or mark) documents that overlap evaluation sets.
import { z } from "@marin/iris/toolkit";
import { MarinError } from "../errors.ts";
import { defineStep } from "../step/step.ts";
import { checkOptions } from "./options.ts";
import type { OutputRef, Step } from "../step/step.ts";
import { documentsPattern, readDocuments, ZEPHYR_RUN } from "./documents.ts";

const evalSetSchema = z.strictObject({ name: z.string().min(1), input: z.string().optional(), path: z.string().optional(), texts: z.array(z.string()).optional() });

const configSchema = z.object({
  input: z.string(),
  evalSets: z.array(evalSetSchema).min(1),
  ngram: z.number().int().positive(),
  falsePositiveRate: z.number().gt(0).lt(1),
  threshold: z.number().min(0).max(1),
  mode: z.enum(["drop", "mark"]),
});

/** One evaluation set of {@link decontaminate}: documents of a step, a file, or texts (exactly one). */
export interface DecontaminateEvalSet {
  /** Names the set in the result's counts. */
  name: string;
  /** Documents written by a standard data step: `outputOf(step)` (their `text`). */
  input?: OutputRef;
  /** A JSON Lines file with a `text` field per line (`.jsonl`, `.jsonl.gz`) or a text file (one text per line). */
  path?: string;
  /** The texts themselves. */
  texts?: string[];
}

/** Options of {@link decontaminate}. */
export interface DecontaminateStepOptions {
  /** Step name (default `decontaminate`). */
  name?: string;
  /** Documents written by a standard data step: `outputOf(step)`. */
  input: OutputRef;
  evalSets: DecontaminateEvalSet[];
  /** Words per n-gram (default 13). */
  ngram?: number;
  /** Bloom filter false-positive rate per n-gram (default 1e-4). */
  falsePositiveRate?: number;
  /** Fraction of a document's n-grams found in a set from which it is contaminated (default 0.05). */
  threshold?: number;
  /** `drop` (default) or `mark` (adds `contamination: { overlap, sets }`). */
  mode?: "drop" | "mark";
}

/** What {@link decontaminate} returns. */
export interface DecontaminateResult {
  kept: number;
  /** Documents dropped (mode `drop`) or marked (mode `mark`). */
  contaminated: number;
  /** Contaminated documents per evaluation set (a document may count under several). */
  perSet: Record<string, number>;
}

/** Drops or marks documents whose word n-grams overlap evaluation sets (zephyr `decontaminate`). */
export function decontaminate(opts: DecontaminateStepOptions): Step<any> {
  checkOptions("decontaminate", { name: true, input: true, evalSets: true, ngram: true, falsePositiveRate: true, threshold: true, mode: true }, opts);
  return defineStep({
    name: opts.name ?? "decontaminate",
    description: "evaluation-set decontamination (n-gram Bloom filter)",
    version: "1",
    schema: configSchema,
    config: {
      input: opts.input,
      evalSets: opts.evalSets,
      ngram: opts.ngram ?? 13,
      falsePositiveRate: opts.falsePositiveRate ?? 1e-4,
      threshold: opts.threshold ?? 0.05,
      mode: opts.mode ?? "drop",
    },
    fn: async (ctx): Promise<DecontaminateResult> => {
      const cfg = ctx.config as z.infer<typeof configSchema>;
      const sets = [];
      for (const s of cfg.evalSets) {
        const given = [s.input, s.path, s.texts].filter((v) => v !== undefined).length;
        if (given !== 1) throw new MarinError("INVALID_CONFIG", `decontaminate: eval set "${s.name}": give exactly one of input, path, texts`);
        if (s.input !== undefined) sets.push({ name: s.name, texts: (await (await readDocuments(s.input)).collect(ZEPHYR_RUN)).map((d) => d.text) });
        else if (s.path !== undefined) sets.push({ name: s.name, path: s.path });
        else sets.push({ name: s.name, texts: s.texts! });
      }
      const docs = (await readDocuments(cfg.input)).decontaminate({
        text: (d) => d.text,
        evalSets: sets,
        ngram: cfg.ngram,
        falsePositiveRate: cfg.falsePositiveRate,
        threshold: cfg.threshold,
        mode: cfg.mode,
      });
      const written = await docs.writeJsonl(documentsPattern(ctx.outputPath), ZEPHYR_RUN);
      const c = written.stats.counters;
      const perSet = Object.fromEntries(cfg.evalSets.map((s) => [s.name, c[`decontaminate.${s.name}`] ?? 0]));
      const kept = written.counts.reduce((a, b) => a + b, 0);
      const contaminated = c[cfg.mode === "drop" ? "decontaminate.dropped" : "decontaminate.marked"] ?? 0;
      ctx.log(
        `${cfg.mode === "drop" ? "dropped" : "marked"} ${contaminated} documents; per set: ${Object.entries(perSet)
          .map(([k, v]) => `${k} ${v}`)
          .join(", ")}`,
      );
      return { kept, contaminated, perSet };
    },
  });
}
