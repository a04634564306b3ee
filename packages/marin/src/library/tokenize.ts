// The tokenize standard step: documents → levanter token caches (train and validation).
import { createHash } from "node:crypto";
import path from "node:path";
import { z } from "@marin/iris/toolkit";
import { defineStep } from "../step/step.ts";
import { checkOptions } from "./options.ts";
import type { OutputRef, Step } from "../step/step.ts";
import { readDocuments, ZEPHYR_RUN } from "./documents.ts";

const configSchema = z.object({
  input: z.string(),
  tokenizer: z.string().min(1),
  validationFraction: z.number().min(0).max(0.5),
  seed: z.number().int(),
  validationInput: z.string().optional(),
});

/** The resolved config of {@link tokenize}. */
export type TokenizeConfig = z.infer<typeof configSchema>;

/** Options of {@link tokenize}. */
export interface TokenizeOptions {
  /** Step name (default `tokenize`). */
  name?: string;
  input: OutputRef;
  /**
   * `"byte"` (built in), the path of a Hugging Face tokenizer.json, or a {@link trainTokenizer}
   * step's file (`outputOf(step, "tokenizer.json")`) (default `"byte"`). A tokenizer.json is
   * copied into both caches: training, evaluation, generation and serving read it from there.
   */
  tokenizer?: string | OutputRef;
  /** Share of documents held out for validation, chosen by a hash of the document id (default 0.05). */
  validationFraction?: number;
  /** Changes which documents are held out (default 0). */
  seed?: number;
  /**
   * Documents for `validation/` (e.g. a {@link holdOut} step's output): then every document of
   * `input` goes to `train/` and `validationFraction` is not used.
   */
  validationInput?: OutputRef;
}

/** Sub-folders of a tokenize step's output holding the two levanter token caches. */
export const TRAIN_CACHE = "train";
/** See {@link TRAIN_CACHE}. */
export const VALIDATION_CACHE = "validation";

/** Whether document `id` is held out for validation (stable across runs and machines). */
export function isValidationDoc(id: string, fraction: number, seed: number): boolean {
  const h = createHash("sha256").update(`${seed}:${id}`).digest();
  return h.readUInt32BE(0) / 2 ** 32 < fraction;
}

/** Documents → levanter token caches `train/` and `validation/` (zephyr `writeTokenCache`), split by document. */
export function tokenize(opts: TokenizeOptions): Step<any> {
  checkOptions("tokenize", { name: true, input: true, tokenizer: true, validationFraction: true, seed: true, validationInput: true }, opts);
  return defineStep({
    name: opts.name ?? "tokenize",
    description: "documents → levanter token caches (train/validation)",
    version: "1",
    schema: configSchema,
    config: {
      input: opts.input,
      tokenizer: opts.tokenizer ?? "byte",
      validationFraction: opts.validationFraction ?? 0.05,
      seed: opts.seed ?? 0,
      // Only when given, so that the identity of existing tokenize steps is unchanged.
      ...(opts.validationInput !== undefined ? { validationInput: opts.validationInput } : {}),
    },
    fn: async (ctx) => {
      const cfg = ctx.config as TokenizeConfig;
      // Loaded on use: @marin/levanter pulls in TensorFlow.js, which a run that tokenizes nothing should not pay for.
      const { encodeDocument, HfTokenizer, loadTokenizer, writeTrainedTokenizer } = await import("@marin/levanter");
      const tokenizer = await loadTokenizer(cfg.tokenizer);
      const write = async (validation: boolean) => {
        const cacheDir = path.join(ctx.outputPath, validation ? VALIDATION_CACHE : TRAIN_CACHE);
        const docs =
          cfg.validationInput !== undefined
            ? await readDocuments(validation ? cfg.validationInput : cfg.input)
            : (await readDocuments(cfg.input)).filter((d) => isValidationDoc(d.id, cfg.validationFraction, cfg.seed) === validation);
        const res = await docs
          .map((d) => encodeDocument(tokenizer, d.text))
          .writeTokenCache(cacheDir, {
            ...ZEPHYR_RUN,
            tokenizer: tokenizer.name,
            vocabSize: tokenizer.vocabSize,
          });
        // The cache records its tokenizer: training, evaluation and scoring read it from there.
        if (tokenizer instanceof HfTokenizer) await writeTrainedTokenizer(cacheDir, tokenizer.files);
        return res.counts.reduce((a, b) => a + b, 0);
      };
      const trainDocs = await write(false);
      const validationDocs = await write(true);
      ctx.log(`train: ${trainDocs} documents, validation: ${validationDocs} documents`);
      return { tokenizer: tokenizer.name, trainDocs, validationDocs };
    },
  });
}
