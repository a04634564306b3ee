// The holdOut standard step: the documents a tokenize step would hold out for validation, on their own.
import { z } from "@marin/iris/toolkit";
import { defineStep } from "../step/step.ts";
import { checkOptions } from "./options.ts";
import type { OutputRef, Step } from "../step/step.ts";
import { documentsPattern, readDocuments, ZEPHYR_RUN } from "./documents.ts";
import { isValidationDoc } from "./tokenize.ts";

const configSchema = z.object({ input: z.string(), fraction: z.number().gt(0).max(0.5), seed: z.number().int() });

/** Options of {@link holdOut}. */
export interface HoldOutOptions {
  /** Step name (default `holdOut`). */
  name?: string;
  /** Documents written by a standard data step. */
  input: OutputRef;
  /** Share of documents held out, chosen by a hash of the document id as {@link tokenize} does (default 0.05). */
  fraction?: number;
  /** Changes which documents are held out (default 0). */
  seed?: number;
}

/**
 * Writes the held-out share of `input`'s documents (the ones {@link tokenize} with the same
 * fraction and seed would put in `validation/`). Use it as an evaluation set: decontaminate the
 * training documents against it (which also drops the held-out documents themselves), then give it
 * to {@link tokenize} as `validationInput`.
 */
export function holdOut(opts: HoldOutOptions): Step<any> {
  checkOptions("holdOut", { name: true, input: true, fraction: true, seed: true }, opts);
  return defineStep({
    name: opts.name ?? "holdOut",
    description: "held-out evaluation documents",
    version: "1",
    schema: configSchema,
    config: { input: opts.input, fraction: opts.fraction ?? 0.05, seed: opts.seed ?? 0 },
    fn: async (ctx) => {
      const cfg = ctx.config as z.infer<typeof configSchema>;
      const written = await (await readDocuments(cfg.input)).filter((d) => isValidationDoc(d.id, cfg.fraction, cfg.seed)).writeJsonl(documentsPattern(ctx.outputPath), ZEPHYR_RUN);
      const heldOut = written.counts.reduce((a, b) => a + b, 0);
      ctx.log(`held out ${heldOut} documents`);
      return { heldOut };
    },
  });
}
