// The dedupExact standard step: one document per distinct text.
import { createHash } from "node:crypto";
import { z } from "@marin/iris/toolkit";
import { defineStep } from "../step/step.ts";
import { checkOptions } from "./options.ts";
import type { OutputRef, Step } from "../step/step.ts";
import { documentsPattern, readDocuments, ZEPHYR_RUN } from "./documents.ts";

const configSchema = z.object({ input: z.string(), caseSensitive: z.boolean() });

/** Options of {@link dedupExact}. */
export interface DedupExactOptions {
  /** Step name (default `dedup`). */
  name?: string;
  input: OutputRef;
  /** Compare texts case-sensitively (default true); whitespace runs always count as one space. */
  caseSensitive?: boolean;
}

/** The key two documents share when they are exact duplicates. */
export function exactKey(text: string, caseSensitive: boolean): string {
  const t = text.replace(/\s+/g, " ").trim();
  return createHash("sha256")
    .update(caseSensitive ? t : t.toLowerCase())
    .digest("hex");
}

/** Keeps one document per distinct text (zephyr `deduplicate`, a shuffle by text hash). */
export function dedupExact(opts: DedupExactOptions): Step<any> {
  checkOptions("dedupExact", { name: true, input: true, caseSensitive: true }, opts);
  return defineStep({
    name: opts.name ?? "dedup",
    description: "exact document deduplication",
    version: "1",
    schema: configSchema,
    config: { input: opts.input, caseSensitive: opts.caseSensitive ?? true },
    fn: async (ctx) => {
      const cfg = ctx.config as z.infer<typeof configSchema>;
      const before = await (await readDocuments(cfg.input)).count(ZEPHYR_RUN);
      const written = await (await readDocuments(cfg.input)).deduplicate((d) => exactKey(d.text, cfg.caseSensitive)).writeJsonl(documentsPattern(ctx.outputPath), ZEPHYR_RUN);
      const kept = written.counts.reduce((a, b) => a + b, 0);
      ctx.log(`kept ${kept} of ${before} documents`);
      return { kept, removed: before - kept };
    },
  });
}
