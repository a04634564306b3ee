// Models in and out of a pipeline (levanter): importHfModel brings a Hugging Face folder in as a
// checkpoint that trainLmStep's `initializeFrom` starts from; exportModel writes a step's newest
// checkpoint as a Hugging Face folder.
import { promises as fs } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { MarinError } from "../errors.ts";
import { defineStep } from "../step/step.ts";
import type { OutputRef, Step, StepResources } from "../step/step.ts";
import { checkOptions, RESOURCE_KEYS } from "./options.ts";
import { CHECKPOINTS } from "./trainLmStep.ts";

/** Options of {@link importHfModel}. */
export interface ImportHfModelOptions {
  /** Step name (default `import-model`). */
  name?: string;
  /** A local Hugging Face folder (config.json, safetensors, tokenizer.json); its path is the step's identity. */
  source: string;
  /** Shorter training window than the config's max_position_embeddings / n_positions. */
  seqLen?: number;
  resources?: StepResources;
}

const importSchema = z.object({ source: z.string().min(1), seqLen: z.number().int().positive().nullable() }).strict();

/**
 * `levanter import hf` as a step: `checkpoints/step-0` in its output, a checkpoint carrying its
 * tokenizer (use `outputOf(step, "checkpoints")` as trainLmStep's `initializeFrom`).
 */
export function importHfModel(opts: ImportHfModelOptions): Step<any> {
  checkOptions("importHfModel", { name: true, source: true, seqLen: true, resources: RESOURCE_KEYS }, opts);
  return defineStep({
    name: opts.name ?? "import-model",
    description: "a Hugging Face folder as a levanter checkpoint",
    version: "1",
    schema: importSchema,
    resources: opts.resources ?? { cpuMillis: 1000 },
    config: { source: path.resolve(opts.source), seqLen: opts.seqLen ?? null },
    fn: async (ctx) => {
      const cfg = ctx.config as z.infer<typeof importSchema>;
      const { importHf } = await import("@marin/levanter");
      const r = await importHf(cfg.source, path.join(ctx.outputPath, CHECKPOINTS), cfg.seqLen !== null ? { seqLen: cfg.seqLen } : {});
      return { family: r.family, parameters: r.parameters, tokenizer: r.tokenizer };
    },
  });
}

/** Formats {@link exportModel} writes. */
export type ExportFormat = "hf" | "gguf";

/** Options of {@link exportModel}. */
export interface ExportModelOptions {
  /** Step name (default `export-<format>`). */
  name?: string;
  /** `outputOf(trainStep, "checkpoints")` (or an import's): the newest checkpoint there is exported. */
  checkpoints: OutputRef;
  format: ExportFormat;
  /** Weights' dtype (default float32). */
  dtype?: "float32" | "bfloat16";
  /** Largest safetensors file before sharding (default `2GB`). */
  maxShardSize?: string;
  resources?: StepResources;
}

const exportSchema = z
  .object({
    checkpoints: z.string(),
    format: z.literal("hf"),
    dtype: z.enum(["float32", "bfloat16"]),
    maxShardSize: z.string().regex(/^\s*\d+(\.\d+)?\s*([KMGT]i?B?|B)?\s*$/i, "expected a size like 2GB or 500MB"),
  })
  .strict();

/** The folder inside an {@link exportModel} step's output that holds the exported model. */
export const EXPORTED_MODEL = "model";

/**
 * Writes the newest checkpoint under `checkpoints` as a Hugging Face folder (`model/` in the
 * step's output: config.json, safetensors, tokenizer files, generation_config.json). GGUF is not
 * available yet and is refused when the graph is defined.
 */
export function exportModel(opts: ExportModelOptions): Step<any> {
  checkOptions("exportModel", { name: true, checkpoints: true, format: true, dtype: true, maxShardSize: true, resources: RESOURCE_KEYS }, opts);
  if (opts.format !== "hf") throw new MarinError("INVALID_CONFIG", `exportModel: format ${JSON.stringify(opts.format)} is not available (only "hf" is, so far)`);
  return defineStep({
    name: opts.name ?? `export-${opts.format}`,
    description: "a checkpoint as a Hugging Face folder",
    version: "1",
    schema: exportSchema,
    resources: opts.resources ?? { cpuMillis: 1000 },
    config: { checkpoints: opts.checkpoints, format: opts.format, dtype: opts.dtype ?? "float32", maxShardSize: opts.maxShardSize ?? "2GB" },
    fn: async (ctx) => {
      const cfg = ctx.config as z.infer<typeof exportSchema>;
      const { exportHf, parseByteSize } = await import("@marin/levanter");
      const out = path.join(ctx.outputPath, EXPORTED_MODEL);
      const r = await exportHf(cfg.checkpoints, out, { dtype: cfg.dtype, maxShardBytes: parseByteSize(cfg.maxShardSize) });
      await fs.writeFile(path.join(ctx.outputPath, "export.json"), `${JSON.stringify({ format: cfg.format, family: r.family, checkpoint: path.basename(r.checkpoint), files: r.files }, null, 2)}\n`);
      return { format: cfg.format, family: r.family, path: path.join(ctx.finalPath, EXPORTED_MODEL) };
    },
  });
}
