// The `model` section of a training config and the FLOP counts derived from it.
import { z } from "@marin/iris/toolkit";
import { LevanterError } from "../errors.ts";

/**
 * The `model` section of a training config: a decoder-only transformer LM. `vocabSize` may be left
 * out; the trainer fills it in from the tokenizer.
 */
export const ModelConfigSchema = z
  .object({
    type: z.literal("transformer").default("transformer"),
    vocabSize: z.number().int().positive().optional(),
    /** Longest sequence the model accepts (= the training window). */
    seqLen: z.number().int().positive().default(64),
    dModel: z.number().int().positive().default(128),
    nLayers: z.number().int().positive().default(2),
    nHeads: z.number().int().positive().default(4),
    /**
     * Key/value heads (grouped-query attention: each serves `nHeads / nKvHeads` query heads);
     * must divide `nHeads`. Unset: `nHeads` (multi-head attention).
     */
    nKvHeads: z.number().int().positive().optional(),
    /** Width of one attention head; unset: `dModel / nHeads`. */
    headDim: z.number().int().positive().optional(),
    /** Hidden width of the MLP; defaults to `4 · dModel` (GELU) or `8/3 · dModel` rounded to 8 (SwiGLU). */
    dFF: z.number().int().positive().optional(),
    activation: z.enum(["gelu", "swiglu"]).default("gelu"),
    norm: z.enum(["layer", "rms"]).default("layer"),
    positions: z.enum(["learned", "rope"]).default("learned"),
    tieEmbeddings: z.boolean().default(false),
    /** Biases on the linear layers (norms of type `layer` always have one). */
    useBias: z.boolean().default(false),
    normEps: z.number().positive().default(1e-5),
    initStd: z.number().positive().default(0.02),
    ropeTheta: z.number().positive().default(10_000),
  })
  .strict()
  .refine((m) => m.headDim !== undefined || m.dModel % m.nHeads === 0, { message: "dModel must be divisible by nHeads (or set headDim)", path: ["dModel"] })
  .refine((m) => m.nKvHeads === undefined || m.nHeads % m.nKvHeads === 0, { message: "nKvHeads must divide nHeads", path: ["nKvHeads"] })
  .refine((m) => m.positions !== "rope" || headDimOf(m) % 2 === 0, {
    message: "rotary positions need an even head dimension (headDim, default dModel / nHeads)",
    path: ["positions"],
  });

/** The attention geometry of a model config: query heads, key/value heads and the head width. */
export interface AttentionShape {
  nHeads: number;
  nKvHeads: number;
  headDim: number;
}

/** Width of one attention head: `headDim`, else `dModel / nHeads`. */
export function headDimOf(m: { dModel: number; nHeads: number; headDim?: number | undefined }): number {
  return m.headDim ?? m.dModel / m.nHeads;
}

/** Query heads, key/value heads (`nKvHeads`, else `nHeads`) and head width of a model config. */
export function attentionShape(m: { dModel: number; nHeads: number; nKvHeads?: number | undefined; headDim?: number | undefined }): AttentionShape {
  return { nHeads: m.nHeads, nKvHeads: m.nKvHeads ?? m.nHeads, headDim: headDimOf(m) };
}

/**
 * Whether the attention is today's plain multi-head shape (`nKvHeads = nHeads`, `headDim · nHeads
 * = dModel`): the shape the fused native kernels and the native decode step take.
 */
export function isPlainAttention(m: { dModel: number; nHeads: number; nKvHeads?: number | undefined; headDim?: number | undefined }): boolean {
  const a = attentionShape(m);
  return a.nKvHeads === a.nHeads && a.headDim * a.nHeads === m.dModel;
}

/** The `model` section as written in a config file (defaults optional). */
export type ModelConfigInput = z.input<typeof ModelConfigSchema>;

/** The `model` section after validation and defaults. */
export type ModelConfig = z.output<typeof ModelConfigSchema>;

/** A model config with every derived field resolved: what the model is built from. */
export type ResolvedModelConfig = Omit<ModelConfig, "vocabSize" | "dFF"> & { vocabSize: number; dFF: number };

/** Fills in `vocabSize` (when the config left it out) and the default MLP width. */
export function resolveModelConfig(cfg: ModelConfig, vocabSize?: number): ResolvedModelConfig {
  const v = cfg.vocabSize ?? vocabSize;
  if (v === undefined) throw new LevanterError("INVALID_CONFIG", "model.vocabSize: required (no tokenizer to take it from)");
  if (vocabSize !== undefined && v < vocabSize) {
    throw new LevanterError("INVALID_CONFIG", `model.vocabSize: ${v} is smaller than the tokenizer's vocabulary (${vocabSize})`);
  }
  const dFF = cfg.dFF ?? (cfg.activation === "swiglu" ? Math.ceil((8 * cfg.dModel) / 3 / 8) * 8 : 4 * cfg.dModel);
  return { ...cfg, vocabSize: v, dFF };
}

/**
 * Forward-pass FLOPs per token: exactly the multiply-adds (×2) of every matMul the model runs,
 * which dominate its cost; element-wise work (norms, softmax, activations) is left out, as in
 * upstream Levanter and the PaLM MFU convention. Per layer: QKV `6·D²`, output `2·D²`, attention
 * scores and weighted sum `4·T·D` (the full T×T square is computed, masking happens afterwards;
 * with grouped-query attention or an explicit head width: QKV `2·D·(H + 2·Hkv)·dh`, output
 * `2·H·dh·D`, attention `4·T·H·dh`),
 * MLP `4·D·F` (GELU) or `6·D·F` (SwiGLU); plus the LM head `2·D·V`. Embedding lookups are gathers
 * (0 FLOPs). A training step costs 3× this per token (forward + backward for activations and
 * weights).
 */
export function flopsPerToken(cfg: ResolvedModelConfig): number {
  const { dModel: d, seqLen: t, dFF: f, nLayers: l, vocabSize: v } = cfg;
  const mlp = cfg.activation === "swiglu" ? 6 * d * f : 4 * d * f;
  if (isPlainAttention(cfg)) return l * (6 * d * d + 2 * d * d + 4 * t * d + mlp) + 2 * d * v;
  const { nHeads: h, nKvHeads: hkv, headDim: dh } = attentionShape(cfg);
  return l * (2 * d * (h + 2 * hkv) * dh + 2 * h * dh * d + 4 * t * h * dh + mlp) + 2 * d * v;
}

/** Training FLOPs per token (forward + backward): `3 · flopsPerToken`. */
export function trainingFlopsPerToken(cfg: ResolvedModelConfig): number {
  return 3 * flopsPerToken(cfg);
}
