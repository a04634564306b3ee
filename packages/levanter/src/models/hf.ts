// Hugging Face model layouts: config.json ⇄ levanter's model config, and HF tensor names ⇄
// levanter's parameters, for the two families levanter represents exactly:
//
//   LlamaForCausalLM  ⇄ norm rms, activation swiglu, positions rope (rotate-half), no biases,
//                       grouped-query attention (nKvHeads), headDim, tied or untied head
//   GPT2LMHeadModel   ⇄ norm layer, activation gelu (tanh), positions learned, biases
//
// HF linear weights are [out, in] (Llama's nn.Linear) or [in, out] (GPT-2's Conv1D); levanter's
// kernels are [in, out]; Llama's q, k, v projections are levanter's one qkv kernel side by side.
import { formatZodIssues } from "@marin/iris/toolkit";
import { LevanterError } from "../errors.ts";
import { attentionShape, ModelConfigSchema, resolveModelConfig, type ModelConfigInput, type ResolvedModelConfig } from "./modelConfig.ts";

/** The families levanter imports and exports. */
export type HfFamily = "llama" | "gpt2";

/** A named array (row-major). */
export interface PlainArray {
  shape: number[];
  data: Float32Array;
}

/** What {@link modelConfigFromHf} makes of a config.json. */
export interface HfModelConfig {
  family: HfFamily;
  model: ResolvedModelConfig;
  bosTokenId?: number;
  eosTokenId?: number;
}

function invalid(file: string, what: string): LevanterError {
  return new LevanterError("INVALID_CONFIG", `${file}: ${what}`);
}

/**
 * Reads a Hugging Face config.json (parsed) as a levanter model config. Anything levanter cannot
 * represent exactly fails naming the field: rope_scaling, attention/MLP biases, sliding windows,
 * mixture of experts, another architecture or activation. `seqLen` overrides
 * `max_position_embeddings` (levanter's causal mask is seqLen², so a shorter window may be wanted).
 */
export function modelConfigFromHf(raw: unknown, file: string, opts: { seqLen?: number } = {}): HfModelConfig {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw invalid(file, "expected a JSON object");
  const c = raw as Record<string, unknown>;
  const archs = Array.isArray(c.architectures) ? c.architectures : [];
  const arch =
    archs.length === 1 ? archs[0] : archs.length === 0 ? ({ llama: "LlamaForCausalLM", gpt2: "GPT2LMHeadModel" } as Record<string, string>)[String(c.model_type)] : undefined;
  if (arch !== "LlamaForCausalLM" && arch !== "GPT2LMHeadModel") {
    throw invalid(file, `architectures: ${JSON.stringify(c.architectures ?? c.model_type)} is not supported (LlamaForCausalLM and GPT2LMHeadModel are)`);
  }
  const int = (key: string, dflt?: number): number => {
    const v = c[key] ?? dflt;
    if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) throw invalid(file, `${key}: expected a positive integer, got ${JSON.stringify(c[key])}`);
    return v;
  };
  const num = (key: string, dflt: number): number => {
    const v = c[key] ?? dflt;
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) throw invalid(file, `${key}: expected a positive number, got ${JSON.stringify(c[key])}`);
    return v;
  };
  const refuse = (key: string, ok: (v: unknown) => boolean, why: string) => {
    if (c[key] !== undefined && !ok(c[key])) throw invalid(file, `${key}: ${JSON.stringify(c[key])} is not supported (${why})`);
  };
  const falsy = (v: unknown) => v === null || v === false || v === 0;
  // Mixture of experts and sliding windows have no levanter counterpart in either family.
  for (const key of ["num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size"]) {
    refuse(key, falsy, "levanter has no mixture-of-experts layers");
  }
  refuse("sliding_window", falsy, "levanter attends over the whole window");
  refuse("use_sliding_window", falsy, "levanter attends over the whole window");
  const tokenIds = {
    ...(typeof c.bos_token_id === "number" ? { bosTokenId: c.bos_token_id } : {}),
    ...(typeof c.eos_token_id === "number" ? { eosTokenId: c.eos_token_id } : {}),
  };
  let input: ModelConfigInput;
  if (arch === "LlamaForCausalLM") {
    refuse("rope_scaling", (v) => v === null, "levanter's rotary positions are unscaled");
    refuse("attention_bias", falsy, "levanter's Llama has no attention biases");
    refuse("mlp_bias", falsy, "levanter's Llama has no MLP biases");
    refuse("hidden_act", (v) => v === "silu", "the Llama family's MLP is SwiGLU (silu)");
    refuse("partial_rotary_factor", (v) => v === 1, "rotary positions cover the whole head");
    const dModel = int("hidden_size");
    const nHeads = int("num_attention_heads");
    const nKvHeads = int("num_key_value_heads", nHeads);
    const headDim = c.head_dim === null || c.head_dim === undefined ? dModel / nHeads : int("head_dim");
    if (!Number.isInteger(headDim)) throw invalid(file, `hidden_size: ${dModel} is not divisible by num_attention_heads ${nHeads} (and no head_dim)`);
    if (nHeads % nKvHeads !== 0) throw invalid(file, `num_key_value_heads: ${nKvHeads} does not divide num_attention_heads ${nHeads}`);
    input = {
      vocabSize: int("vocab_size"),
      seqLen: opts.seqLen ?? int("max_position_embeddings", 2048),
      dModel,
      nLayers: int("num_hidden_layers"),
      nHeads,
      ...(nKvHeads !== nHeads ? { nKvHeads } : {}),
      ...(headDim * nHeads !== dModel ? { headDim } : {}),
      dFF: int("intermediate_size"),
      activation: "swiglu",
      norm: "rms",
      positions: "rope",
      tieEmbeddings: c.tie_word_embeddings === true,
      useBias: false,
      normEps: num("rms_norm_eps", 1e-6),
      initStd: num("initializer_range", 0.02),
      ropeTheta: num("rope_theta", 10_000),
    };
  } else {
    refuse("activation_function", (v) => v === "gelu_new" || v === "gelu_pytorch_tanh", "levanter's GELU is the tanh approximation (gelu_new)");
    refuse("scale_attn_weights", (v) => v === true, "levanter scales attention by 1/√headDim");
    refuse("scale_attn_by_inverse_layer_idx", falsy, "levanter scales attention by 1/√headDim only");
    refuse("add_cross_attention", falsy, "levanter is decoder-only");
    const dModel = int("n_embd");
    const nPositions = int("n_positions", 1024);
    if (opts.seqLen !== undefined && opts.seqLen > nPositions) throw invalid(file, `n_positions: ${nPositions} learned positions, fewer than the ${opts.seqLen} asked for`);
    input = {
      vocabSize: int("vocab_size"),
      seqLen: opts.seqLen ?? nPositions,
      dModel,
      nLayers: int("n_layer"),
      nHeads: int("n_head"),
      dFF: c.n_inner === null || c.n_inner === undefined ? 4 * dModel : int("n_inner"),
      activation: "gelu",
      norm: "layer",
      positions: "learned",
      tieEmbeddings: c.tie_word_embeddings !== false,
      useBias: true,
      normEps: num("layer_norm_epsilon", 1e-5),
      initStd: num("initializer_range", 0.02),
    };
  }
  const parsed = ModelConfigSchema.safeParse(input);
  if (!parsed.success) throw invalid(file, `not a model levanter can build: ${formatZodIssues(parsed.error)}`);
  return { family: arch === "LlamaForCausalLM" ? "llama" : "gpt2", model: resolveModelConfig(parsed.data), ...tokenIds };
}

/**
 * The family a levanter model exports as, or an error naming the field that keeps it out of both:
 * rotary positions make a Llama (rms norm, SwiGLU, no biases), learned ones a GPT-2 (layer norm,
 * GELU, plain multi-head attention).
 */
export function hfFamilyOf(cfg: ResolvedModelConfig): HfFamily {
  const bad = (field: string, value: unknown, why: string) =>
    new LevanterError("INVALID_CONFIG", `model.${field}: ${JSON.stringify(value)} cannot be exported to Hugging Face (${why})`);
  if (cfg.positions === "rope") {
    if (cfg.norm !== "rms") throw bad("norm", cfg.norm, "a rotary model exports as LlamaForCausalLM, whose norm is rms");
    if (cfg.activation !== "swiglu") throw bad("activation", cfg.activation, "a rotary model exports as LlamaForCausalLM, whose MLP is swiglu");
    if (cfg.useBias) throw bad("useBias", cfg.useBias, "LlamaForCausalLM's projections have no biases here");
    return "llama";
  }
  if (cfg.norm !== "layer") throw bad("norm", cfg.norm, "a learned-position model exports as GPT2LMHeadModel, whose norm is layer");
  if (cfg.activation !== "gelu") throw bad("activation", cfg.activation, "a learned-position model exports as GPT2LMHeadModel, whose MLP is gelu");
  const a = attentionShape(cfg);
  if (a.nKvHeads !== a.nHeads || a.headDim * a.nHeads !== cfg.dModel) {
    throw bad("nKvHeads", cfg.nKvHeads ?? cfg.headDim, "GPT2LMHeadModel has plain multi-head attention with headDim = dModel / nHeads");
  }
  return "gpt2";
}

/** config.json for a levanter model (see {@link hfFamilyOf}). */
export function hfConfigOf(cfg: ResolvedModelConfig, opts: { dtype: "float32" | "bfloat16"; bosTokenId?: number; eosTokenId?: number }): Record<string, unknown> {
  const family = hfFamilyOf(cfg);
  const ids = { bos_token_id: opts.bosTokenId ?? null, eos_token_id: opts.eosTokenId ?? null };
  if (family === "llama") {
    const a = attentionShape(cfg);
    return {
      architectures: ["LlamaForCausalLM"],
      model_type: "llama",
      vocab_size: cfg.vocabSize,
      hidden_size: cfg.dModel,
      intermediate_size: cfg.dFF,
      num_hidden_layers: cfg.nLayers,
      num_attention_heads: a.nHeads,
      num_key_value_heads: a.nKvHeads,
      head_dim: a.headDim,
      max_position_embeddings: cfg.seqLen,
      hidden_act: "silu",
      rms_norm_eps: cfg.normEps,
      rope_theta: cfg.ropeTheta,
      rope_scaling: null,
      attention_bias: false,
      attention_dropout: 0,
      mlp_bias: false,
      pretraining_tp: 1,
      tie_word_embeddings: cfg.tieEmbeddings,
      initializer_range: cfg.initStd,
      use_cache: true,
      torch_dtype: opts.dtype,
      ...ids,
    };
  }
  return {
    architectures: ["GPT2LMHeadModel"],
    model_type: "gpt2",
    vocab_size: cfg.vocabSize,
    n_embd: cfg.dModel,
    n_layer: cfg.nLayers,
    n_head: cfg.nHeads,
    n_positions: cfg.seqLen,
    n_ctx: cfg.seqLen,
    n_inner: cfg.dFF,
    activation_function: "gelu_new",
    layer_norm_epsilon: cfg.normEps,
    scale_attn_weights: true,
    resid_pdrop: 0,
    embd_pdrop: 0,
    attn_pdrop: 0,
    tie_word_embeddings: cfg.tieEmbeddings,
    initializer_range: cfg.initStd,
    use_cache: true,
    torch_dtype: opts.dtype,
    ...ids,
  };
}

function transpose(a: PlainArray): PlainArray {
  const [r, c] = a.shape as [number, number];
  const out = new Float32Array(r * c);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = a.data[i * c + j]!;
  return { shape: [c, r], data: out };
}

// Column blocks [r, c_k] side by side → [r, Σ c_k].
function hconcat(blocks: PlainArray[]): PlainArray {
  const r = blocks[0]!.shape[0]!;
  const total = blocks.reduce((s, b) => s + b.shape[1]!, 0);
  const out = new Float32Array(r * total);
  let col = 0;
  for (const b of blocks) {
    const c = b.shape[1]!;
    for (let i = 0; i < r; i++) out.set(b.data.subarray(i * c, (i + 1) * c), i * total + col);
    col += c;
  }
  return { shape: [r, total], data: out };
}

// [r, Σ c_k] → column blocks of widths `widths`.
function hsplit(a: PlainArray, widths: number[]): PlainArray[] {
  const [r, total] = a.shape as [number, number];
  let col = 0;
  return widths.map((c) => {
    const out = new Float32Array(r * c);
    for (let i = 0; i < r; i++) out.set(a.data.subarray(i * total + col, i * total + col + c), i * c);
    col += c;
    return { shape: [r, c], data: out };
  });
}

/**
 * One HF tensor per entry: its name, the shape the file must hold, and how it maps to levanter
 * parameters. `toLev` turns the file's tensors (by name) into parameters; `fromLev` the reverse.
 */
interface Mapping {
  hf: { name: string; shape: number[] }[];
  lev: string[];
  toLev(t: PlainArray[]): PlainArray[];
  fromLev(p: PlainArray[]): PlainArray[];
}

const same = (hf: string, shape: number[], lev: string): Mapping => ({ hf: [{ name: hf, shape }], lev: [lev], toLev: (t) => t, fromLev: (p) => p });
const transposed = (hf: string, shape: number[], lev: string): Mapping => ({
  hf: [{ name: hf, shape }],
  lev: [lev],
  toLev: (t) => [transpose(t[0]!)],
  fromLev: (p) => [transpose(p[0]!)],
});

function mappings(family: HfFamily, cfg: ResolvedModelConfig, prefix = family === "gpt2" ? "transformer." : ""): Mapping[] {
  const { vocabSize: v, dModel: d, dFF: f, seqLen: t } = cfg;
  const m: Mapping[] = [];
  if (family === "llama") {
    const { nHeads: nh, nKvHeads: nkv, headDim: dh } = attentionShape(cfg);
    m.push(same("model.embed_tokens.weight", [v, d], "embed/tokens"));
    for (let i = 0; i < cfg.nLayers; i++) {
      const hp = `model.layers.${i}`;
      const lp = `layers/${i}`;
      m.push(same(`${hp}.input_layernorm.weight`, [d], `${lp}/attn_norm/scale`));
      m.push({
        hf: [
          { name: `${hp}.self_attn.q_proj.weight`, shape: [nh * dh, d] },
          { name: `${hp}.self_attn.k_proj.weight`, shape: [nkv * dh, d] },
          { name: `${hp}.self_attn.v_proj.weight`, shape: [nkv * dh, d] },
        ],
        lev: [`${lp}/attn/qkv/kernel`],
        toLev: (ts) => [hconcat(ts.map(transpose))],
        fromLev: (p) => hsplit(p[0]!, [nh * dh, nkv * dh, nkv * dh]).map(transpose),
      });
      m.push(transposed(`${hp}.self_attn.o_proj.weight`, [d, nh * dh], `${lp}/attn/out/kernel`));
      m.push(same(`${hp}.post_attention_layernorm.weight`, [d], `${lp}/mlp_norm/scale`));
      m.push(transposed(`${hp}.mlp.gate_proj.weight`, [f, d], `${lp}/mlp/gate/kernel`));
      m.push(transposed(`${hp}.mlp.up_proj.weight`, [f, d], `${lp}/mlp/up/kernel`));
      m.push(transposed(`${hp}.mlp.down_proj.weight`, [d, f], `${lp}/mlp/down/kernel`));
    }
    m.push(same("model.norm.weight", [d], "final_norm/scale"));
    if (!cfg.tieEmbeddings) m.push(transposed("lm_head.weight", [v, d], "head/kernel"));
    return m;
  }
  // GPT-2's Conv1D weights are [in, out], like levanter's kernels. A model without biases exports
  // zeros for them (GPT-2 always has biases).
  const zeroBias = (hf: string, n: number, lev: string): Mapping =>
    cfg.useBias ? same(hf, [n], lev) : { hf: [{ name: hf, shape: [n] }], lev: [], toLev: () => [], fromLev: () => [{ shape: [n], data: new Float32Array(n) }] };
  const linear = (hf: string, din: number, dout: number, lev: string) => [same(`${hf}.weight`, [din, dout], `${lev}/kernel`), zeroBias(`${hf}.bias`, dout, `${lev}/bias`)];
  const norm = (hf: string, lev: string) => [same(`${hf}.weight`, [d], `${lev}/scale`), same(`${hf}.bias`, [d], `${lev}/bias`)];
  m.push(same(`${prefix}wte.weight`, [v, d], "embed/tokens"));
  m.push(same(`${prefix}wpe.weight`, [t, d], "embed/positions"));
  for (let i = 0; i < cfg.nLayers; i++) {
    const hp = `${prefix}h.${i}`;
    const lp = `layers/${i}`;
    m.push(...norm(`${hp}.ln_1`, `${lp}/attn_norm`));
    m.push(...linear(`${hp}.attn.c_attn`, d, 3 * d, `${lp}/attn/qkv`));
    m.push(...linear(`${hp}.attn.c_proj`, d, d, `${lp}/attn/out`));
    m.push(...norm(`${hp}.ln_2`, `${lp}/mlp_norm`));
    m.push(...linear(`${hp}.mlp.c_fc`, d, f, `${lp}/mlp/up`));
    m.push(...linear(`${hp}.mlp.c_proj`, f, d, `${lp}/mlp/down`));
  }
  m.push(...norm(`${prefix}ln_f`, "final_norm"));
  if (!cfg.tieEmbeddings) {
    m.push(transposed("lm_head.weight", [v, d], "head/kernel"));
    // GPT-2's head has no bias: levanter's (with biases on) comes in as zeros and must leave as zeros.
    if (cfg.useBias) {
      m.push({
        hf: [],
        lev: ["head/bias"],
        toLev: () => [{ shape: [v], data: new Float32Array(v) }],
        fromLev: (p) => {
          if (p[0]!.data.some((x) => x !== 0)) throw new LevanterError("INVALID_CONFIG", "model.useBias: the untied head's bias is not zero, and GPT2LMHeadModel's head has none");
          return [];
        },
      });
    }
  }
  return m;
}

/** HF tensors a reader may meet and drop: buffers some checkpoints carry (rotary frequencies, GPT-2's causal masks). */
function ignorable(family: HfFamily, name: string, cfg: ResolvedModelConfig): boolean {
  if (family === "llama") return /\.rotary_emb\.inv_freq$/.test(name) || (cfg.tieEmbeddings && name === "lm_head.weight");
  return /\.attn\.(bias|masked_bias)$/.test(name) || (cfg.tieEmbeddings && name === "lm_head.weight");
}

/** The HF tensor names (and shapes) a model of `cfg` is stored as. */
export function hfTensorShapes(family: HfFamily, cfg: ResolvedModelConfig): Map<string, number[]> {
  return new Map(mappings(family, cfg).flatMap((m) => m.hf.map((h) => [h.name, h.shape] as const)));
}

/**
 * levanter parameters from HF tensors (`shapes`: every tensor the files hold; `read` fetches some).
 * Missing, extra and misshapen tensors are named (CHECKPOINT_CORRUPT, `where` first).
 */
export async function paramsFromHf(
  family: HfFamily,
  cfg: ResolvedModelConfig,
  shapes: ReadonlyMap<string, number[]>,
  read: (names: string[]) => Promise<Map<string, PlainArray>>,
  where: string,
): Promise<Map<string, PlainArray>> {
  // Some GPT-2 checkpoints (the original `gpt2`) store names without the `transformer.` prefix.
  const prefix = family === "gpt2" && ![...shapes.keys()].some((n) => n.startsWith("transformer.")) ? "" : undefined;
  const maps = mappings(family, cfg, prefix);
  const wanted = new Set(maps.flatMap((m) => m.hf.map((h) => h.name)));
  const missing = [...wanted].filter((n) => !shapes.has(n));
  const extra = [...shapes.keys()].filter((n) => !wanted.has(n) && !ignorable(family, n, cfg));
  const misshapen = maps.flatMap((m) => m.hf).filter((h) => shapes.has(h.name) && shapes.get(h.name)!.join(",") !== h.shape.join(","));
  const problems = [
    ...(missing.length ? [`missing tensors: ${list(missing)}`] : []),
    ...(extra.length ? [`unexpected tensors: ${list(extra)}`] : []),
    ...(misshapen.length ? [`misshapen tensors: ${misshapen.map((h) => `${h.name} is [${shapes.get(h.name)!.join(", ")}], expected [${h.shape.join(", ")}]`).join("; ")}`] : []),
  ];
  if (problems.length) throw new LevanterError("CHECKPOINT_CORRUPT", `${where}: ${problems.join("; ")}`);
  const params = new Map<string, PlainArray>();
  for (const m of maps) {
    if (m.lev.length === 0) continue;
    const got = await read(m.hf.map((h) => h.name));
    const out = m.toLev(m.hf.map((h) => got.get(h.name)!));
    m.lev.forEach((name, i) => params.set(name, out[i]!));
  }
  return params;
}

function list(names: string[]): string {
  return names.length > 8 ? `${names.slice(0, 8).join(", ")} and ${names.length - 8} more` : names.join(", ");
}

/** HF tensors (in a stable order: embeddings, layers, final norm, head) for levanter parameters. */
export function hfTensorsFromParams(family: HfFamily, cfg: ResolvedModelConfig, params: ReadonlyMap<string, PlainArray>): { name: string; shape: number[]; data: Float32Array }[] {
  const out: { name: string; shape: number[]; data: Float32Array }[] = [];
  for (const m of mappings(family, cfg)) {
    const ps = m.lev.map((n) => {
      const p = params.get(n);
      if (!p) throw new LevanterError("CHECKPOINT_CORRUPT", `no parameter ${n} in the checkpoint`);
      return p;
    });
    const ts = m.fromLev(ps);
    m.hf.forEach((h, i) => {
      const t = ts[i]!;
      if (t.shape.join(",") !== h.shape.join(","))
        throw new LevanterError("CHECKPOINT_CORRUPT", `parameter for ${h.name}: shape [${t.shape.join(", ")}], expected [${h.shape.join(", ")}]`);
      out.push({ name: h.name, shape: h.shape, data: t.data });
    });
  }
  return out;
}
