// The cleanText standard step: normalization, word/TAG stripping, paragraph splits and filters.
import { stripWordTags } from "@marin/iris/toolkit";
import { z } from "@marin/iris/toolkit";
import { defineStep } from "../step/step.ts";
import { checkOptions } from "./options.ts";
import type { OutputRef, Step } from "../step/step.ts";
import { documentsPattern, readDocuments, ZEPHYR_RUN } from "./documents.ts";
import type { Document } from "./documents.ts";

const configSchema = z.object({
  input: z.string(),
  stripWordTags: z.boolean(),
  splitParagraphs: z.boolean(),
  normalize: z.enum(["NFC", "NFKC", "none"]),
  minChars: z.number().int().nonnegative(),
  maxChars: z.number().int().positive().nullable(),
  maxNonLetterFraction: z.number().min(0).max(1),
});

/** The resolved config of {@link cleanText}. */
export type CleanTextConfig = z.infer<typeof configSchema>;

/** Options of {@link cleanText}. */
export interface CleanTextOptions {
  /** Step name (default `clean`). */
  name?: string;
  /** Documents written by a standard data step: `outputOf(step)`. */
  input: OutputRef;
  /** Text is `word/TAG` tokens (the Brown Corpus): keep the words, drop the tags. */
  stripWordTags?: boolean;
  /** Make each paragraph (blank-line separated) its own document. */
  splitParagraphs?: boolean;
  /** Unicode normalization (default NFC). */
  normalize?: "NFC" | "NFKC" | "none";
  /** Drop documents shorter than this (default 1). */
  minChars?: number;
  /** Drop documents longer than this (default none). */
  maxChars?: number | null;
  /** Drop documents where more than this fraction of non-space characters are not letters (default 0.5). */
  maxNonLetterFraction?: number;
}

/** Cleans one document's text per `cfg` (without the filters). */
export function cleanDocumentText(text: string, cfg: Pick<CleanTextConfig, "stripWordTags" | "normalize">): string {
  let t = cfg.normalize === "none" ? text : text.normalize(cfg.normalize);
  if (cfg.stripWordTags) {
    t = t
      .split(/\n/)
      .map((l) => (l.trim() ? stripWordTags(l) : ""))
      .join("\n");
  }
  return t
    .replace(/[ \t]+/g, " ")
    .replace(/ *\n */g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/** Whether a cleaned text passes the length and character filters. */
export function keepText(text: string, cfg: Pick<CleanTextConfig, "minChars" | "maxChars" | "maxNonLetterFraction">): boolean {
  if (text.length < cfg.minChars) return false;
  if (cfg.maxChars !== null && text.length > cfg.maxChars) return false;
  const visible = text.replace(/\s/g, "");
  if (visible.length === 0) return false;
  const letters = visible.match(/\p{L}/gu)?.length ?? 0;
  return 1 - letters / visible.length <= cfg.maxNonLetterFraction;
}

/** Normalizes documents (optionally strips `word/TAG` tags, splits paragraphs) and drops those failing length/character filters. */
export function cleanText(opts: CleanTextOptions): Step<any> {
  checkOptions(
    "cleanText",
    { name: true, input: true, stripWordTags: true, splitParagraphs: true, normalize: true, minChars: true, maxChars: true, maxNonLetterFraction: true },
    opts,
  );
  return defineStep({
    name: opts.name ?? "clean",
    description: "normalize text; length and character filters",
    version: "1",
    schema: configSchema,
    config: {
      input: opts.input,
      stripWordTags: opts.stripWordTags ?? false,
      splitParagraphs: opts.splitParagraphs ?? false,
      normalize: opts.normalize ?? "NFC",
      minChars: opts.minChars ?? 1,
      maxChars: opts.maxChars ?? null,
      maxNonLetterFraction: opts.maxNonLetterFraction ?? 0.5,
    },
    fn: async (ctx) => {
      const cfg = ctx.config as CleanTextConfig;
      const written = await (
        await readDocuments(cfg.input)
      )
        .flatMap((doc): Document[] => {
          const text = cleanDocumentText(doc.text, cfg);
          if (!cfg.splitParagraphs) return [{ id: doc.id, text }];
          return text.split(/\n\s*\n/).map((p, i) => ({ id: `${doc.id}#${i}`, text: p.trim() }));
        })
        .filter((doc) => keepText(doc.text, cfg))
        .writeJsonl(documentsPattern(ctx.outputPath), ZEPHYR_RUN);
      const documents = written.counts.reduce((a, b) => a + b, 0);
      ctx.log(`kept ${documents} documents`);
      return { documents };
    },
  });
}
