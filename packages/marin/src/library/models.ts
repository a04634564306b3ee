// Models in and out of a pipeline (levanter): importHfModel brings a Hugging Face folder in as a
// checkpoint that trainLmStep's `initializeFrom` starts from; exportModel writes a step's newest
// checkpoint as a Hugging Face folder or a GGUF file.
import { promises as fs } from "node:fs";
import path from "node:path";
import { z } from "@marin/iris/toolkit";
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

/** GGUF tensor types {@link exportModel} writes (`type`). */
export type ExportGgufType = "f32" | "f16" | "q8_0";

/** Options of {@link exportModel}. */
export interface ExportModelOptions {
  /** Step name (default `export-<format>`). */
  name?: string;
  /** `outputOf(trainStep, "checkpoints")` (or an import's): the newest checkpoint there is exported. */
  checkpoints: OutputRef;
  format: ExportFormat;
  /** format "hf": weights' dtype (default float32). */
  dtype?: "float32" | "bfloat16";
  /** format "hf": largest safetensors file before sharding (default `2GB`). */
  maxShardSize?: string;
  /** format "gguf": the tensors' type (default f32; norms and biases stay f32 whatever it is). */
  type?: ExportGgufType;
  resources?: StepResources;
}

const hfSchema = z
  .object({
    checkpoints: z.string(),
    format: z.literal("hf"),
    dtype: z.enum(["float32", "bfloat16"]),
    maxShardSize: z.string().regex(/^\s*\d+(\.\d+)?\s*([KMGT]i?B?|B)?\s*$/i, "expected a size like 2GB or 500MB"),
  })
  .strict();
const ggufSchema = z.object({ checkpoints: z.string(), format: z.literal("gguf"), type: z.enum(["f32", "f16", "q8_0"]) }).strict();
const exportSchema = z.discriminatedUnion("format", [hfSchema, ggufSchema]);

/** The folder inside an {@link exportModel} step's output that holds the exported model (format "hf"). */
export const EXPORTED_MODEL = "model";
/** The file inside an {@link exportModel} step's output that holds the exported model (format "gguf"). */
export const EXPORTED_GGUF = "model.gguf";

const FORMAT_KEYS = { hf: ["dtype", "maxShardSize"], gguf: ["type"] } as const;

/**
 * Writes the newest checkpoint under `checkpoints` in `format`, with `export.json` beside it:
 * - `"hf"`: a Hugging Face folder, `model/` in the step's output (config.json, safetensors,
 *   tokenizer files, generation_config.json);
 * - `"gguf"`: one GGUF v3 file, `model.gguf` (architecture llama, the tokenizer in its metadata).
 *   Only a Llama-shaped model exports (rope positions, rms norm, swiglu, no biases); another
 *   shape fails the step with the model field that is wrong.
 * The step's result says where the model is (`path`), which `marin run`'s summary prints.
 */
export function exportModel(opts: ExportModelOptions): Step<any> {
  checkOptions("exportModel", { name: true, checkpoints: true, format: true, dtype: true, maxShardSize: true, type: true, resources: RESOURCE_KEYS }, opts);
  const format = opts.format;
  if (format !== "hf" && format !== "gguf") throw new MarinError("INVALID_CONFIG", `exportModel: format ${JSON.stringify(format)} is not one of "hf", "gguf"`);
  const other = format === "hf" ? "gguf" : "hf";
  for (const k of FORMAT_KEYS[other]) {
    if ((opts as unknown as Record<string, unknown>)[k] !== undefined)
      throw new MarinError("INVALID_CONFIG", `exportModel: ${k} is an option of format "${other}", not of "${format}"`);
  }
  if (format === "gguf" && opts.type !== undefined && !["f32", "f16", "q8_0"].includes(opts.type)) {
    throw new MarinError("INVALID_CONFIG", `exportModel: type ${JSON.stringify(opts.type)} is not one of f32, f16, q8_0`);
  }
  const config =
    format === "hf"
      ? { checkpoints: opts.checkpoints, format, dtype: opts.dtype ?? "float32", maxShardSize: opts.maxShardSize ?? "2GB" }
      : { checkpoints: opts.checkpoints, format, type: opts.type ?? "f32" };
  return defineStep({
    name: opts.name ?? `export-${format}`,
    description: format === "hf" ? "a checkpoint as a Hugging Face folder" : "a checkpoint as a GGUF file",
    version: "1",
    schema: exportSchema,
    resources: opts.resources ?? { cpuMillis: 1000 },
    config,
    fn: async (ctx) => {
      const cfg = ctx.config as z.infer<typeof exportSchema>;
      const writeJson = (v: unknown) => fs.writeFile(path.join(ctx.outputPath, "export.json"), `${JSON.stringify(v, null, 2)}\n`);
      if (cfg.format === "gguf") {
        const { exportGguf } = await import("@marin/levanter");
        await fs.mkdir(ctx.outputPath, { recursive: true });
        const r = await exportGguf(cfg.checkpoints, path.join(ctx.outputPath, EXPORTED_GGUF), { type: cfg.type });
        await writeJson({ format: cfg.format, type: r.type, checkpoint: path.basename(r.checkpoint), file: EXPORTED_GGUF, tensors: r.tensors, bytes: r.bytes });
        return { format: cfg.format, type: r.type, bytes: r.bytes, path: path.join(ctx.finalPath, EXPORTED_GGUF) };
      }
      const { exportHf, parseByteSize } = await import("@marin/levanter");
      const out = path.join(ctx.outputPath, EXPORTED_MODEL);
      const r = await exportHf(cfg.checkpoints, out, { dtype: cfg.dtype, maxShardBytes: parseByteSize(cfg.maxShardSize) });
      await writeJson({ format: cfg.format, family: r.family, checkpoint: path.basename(r.checkpoint), files: r.files });
      return { format: cfg.format, family: r.family, path: path.join(ctx.finalPath, EXPORTED_MODEL) };
    },
  });
}
