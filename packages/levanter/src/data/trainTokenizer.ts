// Training a byte-level BPE tokenizer (Hugging Face's Rust trainer) into a tokenizer.json that
// levanter's HfTokenizer (and Hugging Face's own libraries) load.
import { createWriteStream } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { once } from "node:events";
import { LevanterError } from "../errors.ts";
import { byteLevelBpeJson } from "./byteLevelBpe.ts";

/** Options of {@link trainBpeTokenizer}. */
export interface TrainBpeOptions {
  /**
   * Ids in the vocabulary, all told: the 256 byte tokens, the merges and the end-of-document token.
   * At least 258 (one merge); at most 16,384.
   */
  vocabSize: number;
  /** The end-of-document special token (default `<|endoftext|>`); its id is `vocabSize - 1`. */
  eosToken?: string;
}

/** A trained tokenizer: the parsed `tokenizer.json` and `tokenizer_config.json`, and what was learned. */
export interface TrainedBpeTokenizer {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  /** Ids in the vocabulary (may fall short of the request when the data has fewer distinct pairs). */
  vocabSize: number;
  merges: number;
  /** Documents and UTF-8 bytes of text the tokenizer was trained on. */
  documents: number;
  bytes: number;
}

/** The largest vocabulary {@link trainBpeTokenizer} trains (the Rust trainer's default target is 30,000). */
export const MAX_TRAINED_VOCAB = 16_384;
/** See {@link TrainBpeOptions.eosToken}. */
export const DEFAULT_EOS_TOKEN = "<|endoftext|>";

// GPT-2's byte ↔ printable-character map, used by the byte-level pre-tokenizer: printable Latin-1
// bytes stand for themselves, the others move to U+0100 and up in byte order.
function byteLevelChars(): string[] {
  const keep = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const chars: string[] = [];
  let next = 256;
  for (let b = 0; b < 256; b++) chars.push(String.fromCodePoint(keep(b) ? b : next++));
  return chars;
}

/** The character the byte-level pre-tokenizer writes for each byte (index = byte). */
export const BYTE_LEVEL_CHARS: readonly string[] = Object.freeze(byteLevelChars());

type RustTokenizers = typeof import("tokenizers");

/**
 * Trains a byte-level BPE tokenizer on `texts` (one string per document) with Hugging Face's own
 * Rust trainer (`tokenizers`), deterministically: the same texts give a byte-identical
 * `tokenizer.json`. Ids 0–255 are the 256 bytes in byte order (so any text encodes), then the
 * merges in the order the trainer learned them, then the end-of-document token.
 *
 * BPE training is greedy — each merge is the most frequent pair (ties broken by the pair) given
 * the merges before it — so the first `vocabSize - 257` merges of a longer run are exactly the
 * merges of a run asked for `vocabSize`; the Rust binding's `train` takes no vocabulary size, and
 * its list is cut here.
 *
 * @example
 * const trained = await trainBpeTokenizer(docs, { vocabSize: 2048 });
 * await writeTrainedTokenizer("out/tokenizer", trained); // tokenizer.json + tokenizer_config.json
 */
export async function trainBpeTokenizer(texts: Iterable<string> | AsyncIterable<string>, options: TrainBpeOptions): Promise<TrainedBpeTokenizer> {
  const { vocabSize } = options;
  const eosToken = options.eosToken ?? DEFAULT_EOS_TOKEN;
  if (!Number.isInteger(vocabSize) || vocabSize < 258 || vocabSize > MAX_TRAINED_VOCAB) {
    throw new LevanterError("INVALID_CONFIG", `vocabSize: expected an integer in [258, ${MAX_TRAINED_VOCAB}] (256 bytes + merges + end-of-document), got ${vocabSize}`);
  }
  if (eosToken.length === 0) throw new LevanterError("INVALID_CONFIG", "eosToken: expected a non-empty string");
  const rust = createRequire(import.meta.url)("tokenizers") as RustTokenizers;
  const dir = await mkdtemp(path.join(os.tmpdir(), "levanter-bpe-"));
  try {
    // The Rust binding trains from files: the documents go to one, a line per line of text.
    const file = path.join(dir, "train.txt");
    const out = createWriteStream(file, "utf8");
    let documents = 0;
    let bytes = 0;
    for await (const text of texts) {
      if (typeof text !== "string") throw new LevanterError("DATA", `document ${documents}: expected a string, got ${typeof text}`);
      documents++;
      bytes += Buffer.byteLength(text, "utf8");
      if (!out.write(text.endsWith("\n") ? text : `${text}\n`)) await once(out, "drain");
    }
    out.end();
    await once(out, "finish");
    if (bytes === 0) throw new LevanterError("DATA", "trainBpeTokenizer: no text to train on");

    const raw = new rust.Tokenizer(rust.BPE.empty());
    raw.setPreTokenizer(rust.byteLevelPreTokenizer(false, true));
    raw.train([file]);
    const learned = path.join(dir, "learned.json");
    raw.save(learned, false);
    const model = (JSON.parse(await readFile(learned, "utf8")) as { model: { merges: unknown[] } }).model;

    const vocab: Record<string, number> = {};
    BYTE_LEVEL_CHARS.forEach((c, i) => (vocab[c] = i));
    let size = 256;
    const merges: [string, string][] = [];
    for (const m of model.merges) {
      if (size >= vocabSize - 1) break;
      const [a, b] = Array.isArray(m) ? (m as string[]) : String(m).split(" ");
      if (typeof a !== "string" || typeof b !== "string" || vocab[a] === undefined || vocab[b] === undefined) {
        throw new LevanterError("INTERNAL", `the BPE trainer produced a merge of unknown tokens: ${JSON.stringify(m)}`);
      }
      merges.push([a, b]);
      // Two merges may spell the same token ("a"+"bc", "ab"+"c"): one id.
      if (vocab[a + b] === undefined) vocab[a + b] = size++;
    }
    if (vocab[eosToken] !== undefined) throw new LevanterError("INVALID_CONFIG", `eosToken ${JSON.stringify(eosToken)} is also a learned token`);
    const eosId = size++;
    const tokenizerJson = byteLevelBpeJson({ vocab, merges, eos: { id: eosId, content: eosToken }, byteLevel: { trimOffsets: true, useRegex: true } });
    const tokenizerConfig = {
      tokenizer_class: "PreTrainedTokenizerFast",
      eos_token: eosToken,
      bos_token: null,
      unk_token: null,
      add_prefix_space: false,
      clean_up_tokenization_spaces: false,
    };
    return { tokenizerJson, tokenizerConfig, vocabSize: size, merges: merges.length, documents, bytes };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** File names {@link writeTrainedTokenizer} writes (the layout {@link loadHfTokenizer} reads). */
export const TOKENIZER_FILES = { tokenizer: "tokenizer.json", config: "tokenizer_config.json" } as const;

/**
 * Writes `tokenizer.json` and (when there is one) `tokenizer_config.json` into `dir` (created if
 * missing); returns the tokenizer.json path. The JSON is written without whitespace, keys in a
 * fixed order. Also how a token cache or a checkpoint records the tokenizer that made it.
 */
export async function writeTrainedTokenizer(dir: string, files: { tokenizerJson: unknown; tokenizerConfig?: unknown }): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, TOKENIZER_FILES.tokenizer);
  await writeFile(file, JSON.stringify(files.tokenizerJson));
  if (files.tokenizerConfig !== undefined) await writeFile(path.join(dir, TOKENIZER_FILES.config), JSON.stringify(files.tokenizerConfig, null, 2) + "\n");
  return file;
}
