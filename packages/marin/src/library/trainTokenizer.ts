// The trainTokenizer standard step: documents → a byte-level BPE tokenizer.json (levanter's trainBpeTokenizer).
import path from "node:path";
import { z } from "@marin/iris/toolkit";
import { defineStep } from "../step/step.ts";
import { checkOptions } from "./options.ts";
import type { OutputRef, Step } from "../step/step.ts";
import { readDocuments, ZEPHYR_RUN } from "./documents.ts";
import { isValidationDoc } from "./tokenize.ts";

const configSchema = z.object({
  input: z.string(),
  vocabSize: z.number().int().min(258).max(16_384),
  eosToken: z.string().min(1),
  validationFraction: z.number().min(0).max(0.5),
  seed: z.number().int(),
  maxDocuments: z.number().int().positive().nullable(),
});

/** The resolved config of {@link trainTokenizer}. */
export type TrainTokenizerConfig = z.infer<typeof configSchema>;

/** Options of {@link trainTokenizer}. */
export interface TrainTokenizerOptions {
  /** Step name (default `tokenizer`). */
  name?: string;
  /** Documents (an import/clean/dedup step's output). */
  input: OutputRef;
  /** Ids in the vocabulary: 256 bytes + merges + the end-of-document token (258–16,384; default 2,048). */
  vocabSize?: number;
  /** End-of-document token (default `<|endoftext|>`). */
  eosToken?: string;
  /**
   * Documents a {@link tokenize} step with these settings holds out for validation are left out
   * of training, so that bits per byte is measured on text the tokenizer has not seen (defaults
   * 0.05 and 0, tokenize's; 0 trains on everything).
   */
  validationFraction?: number;
  seed?: number;
  /** Train on the first this many documents only (default all). */
  maxDocuments?: number | null;
}

/** The file a {@link trainTokenizer} step writes inside its output (with `tokenizer_config.json` beside it). */
export const TOKENIZER_JSON = "tokenizer.json";

/**
 * Trains a byte-level BPE tokenizer on documents with Hugging Face's Rust trainer, through
 * levanter: `tokenizer.json` + `tokenizer_config.json` in the output (the same files from the
 * same documents). Give `outputOf(step, "tokenizer.json")` to {@link tokenize}'s `tokenizer`.
 */
export function trainTokenizer(opts: TrainTokenizerOptions): Step<any> {
  checkOptions("trainTokenizer", { name: true, input: true, vocabSize: true, eosToken: true, validationFraction: true, seed: true, maxDocuments: true }, opts);
  return defineStep({
    name: opts.name ?? "tokenizer",
    description: "train a byte-level BPE tokenizer",
    version: "1",
    schema: configSchema,
    config: {
      input: opts.input,
      vocabSize: opts.vocabSize ?? 2048,
      eosToken: opts.eosToken ?? "<|endoftext|>",
      validationFraction: opts.validationFraction ?? 0.05,
      seed: opts.seed ?? 0,
      maxDocuments: opts.maxDocuments ?? null,
    },
    fn: async (ctx) => {
      const cfg = ctx.config as TrainTokenizerConfig;
      // Loaded on use: @marin/levanter pulls in TensorFlow.js, which a cached run should not pay for.
      const { trainBpeTokenizer, writeTrainedTokenizer } = await import("@marin/levanter");
      let docs = (await readDocuments(cfg.input)).filter((d) => !isValidationDoc(d.id, cfg.validationFraction, cfg.seed)).map((d) => d.text);
      if (cfg.maxDocuments !== null) docs = docs.take(cfg.maxDocuments);
      ctx.reportStatus("reading documents");
      const texts = await docs.collect(ZEPHYR_RUN);
      ctx.reportStatus(`training a ${cfg.vocabSize}-id BPE vocabulary on ${texts.length} documents`, { documents: texts.length });
      const trained = await trainBpeTokenizer(texts, { vocabSize: cfg.vocabSize, eosToken: cfg.eosToken });
      const file = await writeTrainedTokenizer(ctx.outputPath, trained);
      // Where the file lives once the step's output is published.
      const result = {
        tokenizer: path.join(ctx.finalPath, TOKENIZER_JSON),
        vocabSize: trained.vocabSize,
        merges: trained.merges,
        documents: trained.documents,
        bytes: trained.bytes,
      };
      ctx.reportStatus(`vocabulary ${trained.vocabSize} (${trained.merges} merges) from ${trained.documents} documents`, {
        vocabSize: trained.vocabSize,
        merges: trained.merges,
        documents: trained.documents,
        bytes: trained.bytes,
      });
      ctx.log(`trained ${file}: ${trained.vocabSize} ids, ${trained.merges} merges, ${trained.documents} documents, ${trained.bytes} bytes`);
      return result;
    },
  });
}
