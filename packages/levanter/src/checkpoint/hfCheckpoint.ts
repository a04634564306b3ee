// `levanter import hf` and `levanter export hf`: Hugging Face folders ⇄ levanter checkpoints.
import { copyFile, mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { byteLevelBpeJson } from "../data/byteLevelBpe.ts";
import { BYTE_EOS_TOKEN, byteLevelAlphabet, byteTokenizer } from "../data/byteTokenizer.ts";
import { HfTokenizer } from "../data/hfTokenizer.ts";
import { LevanterError } from "../errors.ts";
import { checkpointDirName } from "./checkpointStore.ts";
import { checkpointTokenizerFile, readTrainCheckpoint, resolveCheckpointDir, saveModelCheckpoint } from "./trainState.ts";
import { hfConfigOf, hfFamilyOf, hfTensorsFromParams, modelConfigFromHf, paramsFromHf, type HfFamily, type PlainArray } from "../models/hf.ts";
import type { ResolvedModelConfig } from "../models/modelConfig.ts";
import { readSafetensorsHeader, readTensors, writeSafetensors, type SafetensorsHeader } from "../models/safetensors.ts";

const SINGLE_FILE = "model.safetensors";
const INDEX_FILE = "model.safetensors.index.json";

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
}

async function readJson(file: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (cause) {
    throw new LevanterError("INVALID_CONFIG", `${file}: cannot read ${what}`, { cause });
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new LevanterError("INVALID_CONFIG", `${file}: not valid JSON`, { cause });
  }
}

/** A Hugging Face folder read into memory: the model config, its parameters and its tokenizer's folder. */
export interface HfFolder {
  family: HfFamily;
  config: ResolvedModelConfig;
  params: Map<string, PlainArray>;
  /** Tokenizer name recorded in the checkpoint (the folder's name, as `loadHfTokenizer` names it). */
  tokenizerName: string;
  /** Dtypes the weights were stored in. */
  dtypes: string[];
}

/**
 * Reads a Hugging Face folder: config.json, `model.safetensors` or the shards of
 * `model.safetensors.index.json` (F32, F16, BF16 → float32), and checks tokenizer.json with
 * tokenizer_config.json. Every file's header is checked before any tensor is read.
 */
export async function readHfFolder(dir: string, opts: { seqLen?: number } = {}): Promise<HfFolder> {
  const configFile = path.join(dir, "config.json");
  const hf = modelConfigFromHf(await readJson(configFile, "the model's config.json"), configFile, opts);
  const headers: SafetensorsHeader[] = [];
  const indexFile = path.join(dir, INDEX_FILE);
  if (await exists(indexFile)) {
    const index = (await readJson(indexFile, "the shard index")) as { weight_map?: unknown };
    const map = index?.weight_map;
    if (typeof map !== "object" || map === null || Array.isArray(map) || !Object.values(map).every((v) => typeof v === "string")) {
      throw new LevanterError("CHECKPOINT_CORRUPT", `${indexFile}: weight_map: expected an object of tensor name → shard file`);
    }
    const files = [...new Set(Object.values(map as Record<string, string>))];
    for (const f of files) {
      // Shards sit beside the index: a name that leaves the folder is refused.
      if (f !== path.basename(f) || f === "." || f === "..")
        throw new LevanterError("CHECKPOINT_CORRUPT", `${indexFile}: weight_map names ${JSON.stringify(f)}, not a file beside the index`);
      headers.push(await readSafetensorsHeader(path.join(dir, f)));
    }
    for (const [name, f] of Object.entries(map as Record<string, string>)) {
      if (!headers.find((h) => path.basename(h.file) === f)!.tensors.has(name)) {
        throw new LevanterError("CHECKPOINT_CORRUPT", `${indexFile}: tensor ${name} is mapped to ${f}, which does not hold it`);
      }
    }
  } else if (await exists(path.join(dir, SINGLE_FILE))) {
    headers.push(await readSafetensorsHeader(path.join(dir, SINGLE_FILE)));
  } else {
    throw new LevanterError("CHECKPOINT_NOT_FOUND", `${dir}: no ${SINGLE_FILE} or ${INDEX_FILE} (only safetensors weights are read)`);
  }
  const where = new Map<string, SafetensorsHeader>();
  const shapes = new Map<string, number[]>();
  const dtypes = new Set<string>();
  for (const h of headers) {
    for (const [name, e] of h.tensors) {
      if (where.has(name)) throw new LevanterError("CHECKPOINT_CORRUPT", `${h.file}: tensor ${name} is also in ${where.get(name)!.file}`);
      where.set(name, h);
      shapes.set(name, e.shape);
      dtypes.add(e.dtype);
    }
  }
  const params = await paramsFromHf(
    hf.family,
    hf.model,
    shapes,
    async (names) => {
      const out = new Map<string, PlainArray>();
      for (const n of names) for (const [k, t] of await readTensors(where.get(n)!, [n])) out.set(k, { shape: t.shape, data: t.data });
      return out;
    },
    headers.length === 1 ? headers[0]!.file : dir,
  );
  // The learned position table is cut to a shorter window when one was asked for.
  const pos = params.get("embed/positions");
  if (pos && pos.shape[0]! > hf.model.seqLen) params.set("embed/positions", { shape: [hf.model.seqLen, pos.shape[1]!], data: pos.data.slice(0, hf.model.seqLen * pos.shape[1]!) });
  await checkHfTokenizer(dir, hf.model.vocabSize);
  return { family: hf.family, config: hf.model, params, tokenizerName: path.basename(path.resolve(dir)), dtypes: [...dtypes] };
}

// The folder's tokenizer must build and fit the model's vocabulary.
async function checkHfTokenizer(dir: string, vocabSize: number): Promise<void> {
  const file = path.join(dir, "tokenizer.json");
  if (!(await exists(file))) throw new LevanterError("INVALID_CONFIG", `${dir}: no tokenizer.json (a checkpoint carries its tokenizer)`);
  const configFile = path.join(dir, "tokenizer_config.json");
  const tok = new HfTokenizer(path.basename(dir), {
    tokenizerJson: await readJson(file, "the tokenizer"),
    ...((await exists(configFile)) ? { tokenizerConfig: await readJson(configFile, "the tokenizer config") } : {}),
  });
  if (tok.vocabSize > vocabSize) throw new LevanterError("INVALID_CONFIG", `${file}: ${tok.vocabSize} tokens, more than the model's vocab_size ${vocabSize}`);
}

/** What {@link importHf} wrote. */
export interface ImportResult {
  checkpoint: string;
  family: HfFamily;
  parameters: number;
  tokenizer: string;
  dtypes: string[];
}

/**
 * `levanter import hf DIR --out OUT`: writes the folder's model as `OUT/step-0`, a checkpoint
 * carrying its tokenizer.json and tokenizer_config.json.
 */
export async function importHf(dir: string, out: string, opts: { seqLen?: number } = {}): Promise<ImportResult> {
  const folder = await readHfFolder(dir, opts);
  const checkpoint = path.join(out, checkpointDirName(0));
  await saveModelCheckpoint(checkpoint, { config: folder.config, params: folder.params, tokenizer: folder.tokenizerName, tokenizerDir: dir });
  let parameters = 0;
  for (const p of folder.params.values()) parameters += p.data.length;
  return { checkpoint, family: folder.family, parameters, tokenizer: folder.tokenizerName, dtypes: folder.dtypes };
}

/** Options of {@link exportHf}. */
export interface ExportHfOptions {
  dtype?: "float32" | "bfloat16";
  /** Bytes per safetensors file before the weights are sharded with an index (default 2 GB). */
  maxShardBytes?: number;
  /** A tokenizer.json for a checkpoint that names an HF tokenizer it does not carry. */
  tokenizerJson?: string;
}

/** Parses a size such as `2GB`, `500MB`, `10KiB` or a byte count. */
export function parseByteSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B?)?\s*$/i.exec(text);
  if (!m) throw new LevanterError("INVALID_CONFIG", `--max-shard-size: expected a size like 2GB or 500MB, got ${JSON.stringify(text)}`);
  const unit = (m[2] ?? "").toUpperCase();
  const power = " KMGT".indexOf(unit[0] ?? " ");
  const base = unit.includes("I") ? 1024 : 1000;
  const n = Math.floor(Number(m[1]) * base ** Math.max(0, power));
  if (!(n > 0)) throw new LevanterError("INVALID_CONFIG", `--max-shard-size: expected a positive size, got ${JSON.stringify(text)}`);
  return n;
}

/** What {@link exportHf} wrote. */
export interface ExportResult {
  out: string;
  checkpoint: string;
  family: HfFamily;
  files: string[];
}

/**
 * `levanter export hf --checkpoint CKPT --out DIR`: config.json, model.safetensors (or shards with
 * model.safetensors.index.json past `maxShardBytes`), tokenizer.json, tokenizer_config.json and
 * generation_config.json, loadable by transformers' AutoModelForCausalLM and AutoTokenizer.
 */
export async function exportHf(checkpoint: string, out: string, opts: ExportHfOptions = {}): Promise<ExportResult> {
  const dtype = opts.dtype ?? "float32";
  const ckptDir = await resolveCheckpointDir(checkpoint);
  const ckpt = await readTrainCheckpoint(ckptDir);
  const cfg = ckpt.modelConfig;
  const family = hfFamilyOf(cfg);
  const tensors = hfTensorsFromParams(family, cfg, ckpt.params);
  await mkdir(out, { recursive: true });
  const files: string[] = [];

  // Tokenizer first: its EOS (and BOS) ids go into config.json.
  const tok = await exportTokenizer(ckpt.state.tokenizer, ckptDir, out, cfg.seqLen, opts.tokenizerJson);
  files.push("tokenizer.json", "tokenizer_config.json");
  const ids = { ...(tok.bosId !== undefined ? { bosTokenId: tok.bosId } : {}), eosTokenId: tok.eosId };
  await writeFile(path.join(out, "config.json"), `${JSON.stringify(hfConfigOf(cfg, { dtype, ...ids }), null, 2)}\n`);
  await writeFile(
    path.join(out, "generation_config.json"),
    `${JSON.stringify({ _from_model_config: true, ...(tok.bosId !== undefined ? { bos_token_id: tok.bosId } : {}), eos_token_id: tok.eosId }, null, 2)}\n`,
  );
  files.push("config.json", "generation_config.json");

  // Weights: one file, or shards of at most maxShardBytes (a tensor larger than that alone).
  const st = dtype === "float32" ? "F32" : "BF16";
  const width = st === "F32" ? 4 : 2;
  const limit = opts.maxShardBytes ?? 2e9;
  const shards: (typeof tensors)[] = [[]];
  let used = 0;
  for (const t of tensors) {
    const n = t.data.length * width;
    if (used > 0 && used + n > limit) {
      shards.push([]);
      used = 0;
    }
    shards.at(-1)!.push(t);
    used += n;
  }
  await rm(path.join(out, SINGLE_FILE), { force: true });
  await rm(path.join(out, INDEX_FILE), { force: true });
  const metadata = { format: "pt" };
  if (shards.length === 1) {
    await writeSafetensors(path.join(out, SINGLE_FILE), tensors, st, metadata);
    files.push(SINGLE_FILE);
  } else {
    const weightMap: Record<string, string> = {};
    const pad = (i: number) => String(i).padStart(5, "0");
    for (const [i, shard] of shards.entries()) {
      const name = `model-${pad(i + 1)}-of-${pad(shards.length)}.safetensors`;
      await writeSafetensors(path.join(out, name), shard, st, metadata);
      for (const t of shard) weightMap[t.name] = name;
      files.push(name);
    }
    const total = tensors.reduce((s, t) => s + t.data.length * width, 0);
    await writeFile(path.join(out, INDEX_FILE), `${JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2)}\n`);
    files.push(INDEX_FILE);
  }
  return { out, checkpoint: ckptDir, family, files };
}

// tokenizer.json and tokenizer_config.json into `out`: the checkpoint's own files, or the byte
// tokenizer as a byte-level BPE. Returns the EOS (and BOS) ids.
async function exportTokenizer(name: string, ckptDir: string, out: string, seqLen: number, override?: string): Promise<{ eosId: number; bosId?: number }> {
  if (name === "byte" && !override) {
    const { tokenizerJson, tokenizerConfig } = byteLevelTokenizerFiles(seqLen);
    await writeFile(path.join(out, "tokenizer.json"), `${JSON.stringify(tokenizerJson, null, 2)}\n`);
    await writeFile(path.join(out, "tokenizer_config.json"), `${JSON.stringify(tokenizerConfig, null, 2)}\n`);
    return { eosId: byteTokenizer.eosId };
  }
  const file = override ?? (await checkpointTokenizerFile(ckptDir));
  if (!file) throw new LevanterError("INVALID_CONFIG", `--tokenizer: required, ${ckptDir} names tokenizer "${name}" but carries no tokenizer.json`);
  const configFile = path.join(path.dirname(file), "tokenizer_config.json");
  const hasConfig = await exists(configFile);
  const tokenizerJson = await readJson(file, "the tokenizer");
  const tokenizerConfig = hasConfig ? ((await readJson(configFile, "the tokenizer config")) as Record<string, unknown>) : {};
  const tok = new HfTokenizer(name, { tokenizerJson, tokenizerConfig });
  await copyFile(file, path.join(out, "tokenizer.json"));
  if (hasConfig) await copyFile(configFile, path.join(out, "tokenizer_config.json"));
  else await writeFile(path.join(out, "tokenizer_config.json"), "{}\n");
  const bos = tokenizerConfig.bos_token;
  const bosText = typeof bos === "string" ? bos : typeof bos === "object" && bos !== null ? (bos as { content?: unknown }).content : undefined;
  const bosId = typeof bosText === "string" ? tok.tokenToId(bosText) : undefined;
  return { eosId: tok.eosId, ...(bosId !== undefined ? { bosId } : {}) };
}

// The byte-level alphabet and the exported EOS live beside the byte tokenizer (GGUF export uses them too).
export { BYTE_EOS_TOKEN, byteLevelAlphabet };

/**
 * The byte tokenizer as Hugging Face files: a byte-level BPE with no merges whose ids are the
 * bytes (0–255), plus `<|endoftext|>` (256) as EOS.
 */
export function byteLevelTokenizerFiles(seqLen: number): { tokenizerJson: unknown; tokenizerConfig: Record<string, unknown> } {
  const vocab: Record<string, number> = {};
  byteLevelAlphabet().forEach((ch, b) => (vocab[ch] = b));
  return {
    tokenizerJson: byteLevelBpeJson({ vocab, merges: [], eos: { id: byteTokenizer.eosId, content: BYTE_EOS_TOKEN }, byteLevel: { trimOffsets: false, useRegex: false } }),
    tokenizerConfig: {
      tokenizer_class: "PreTrainedTokenizerFast",
      eos_token: BYTE_EOS_TOKEN,
      model_max_length: seqLen,
      clean_up_tokenization_spaces: false,
      added_tokens_decoder: { [String(byteTokenizer.eosId)]: { content: BYTE_EOS_TOKEN, lstrip: false, rstrip: false, normalized: false, single_word: false, special: true } },
    },
  };
}
