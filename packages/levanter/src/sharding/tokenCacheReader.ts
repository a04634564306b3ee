// Reads token-cache shards as one flat, random-access token stream.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { endianness } from "node:os";
import path from "node:path";
import { LevanterError } from "../errors.ts";
import { formatZodIssues } from "@marin/iris/toolkit";
import { LEDGER_FILE, SHARD_MAGIC, SHARD_TRAILER_BYTES, parseLedger, shardFooterSchema } from "./tokenCacheLayout.ts";
import type { ShardFooter, TokenCacheLedger } from "./tokenCacheLayout.ts";
import { checkRange } from "./tokenSource.ts";
import type { TokenSource } from "./tokenSource.ts";

const LITTLE_ENDIAN = endianness() === "LE";

interface OpenShard {
  readonly fd: number;
  readonly file: string;
  /** Global position of this shard's first token / first document. */
  readonly tokenStart: number;
  readonly docStart: number;
  readonly numTokens: number;
  /** Document boundaries inside the shard, as read from its offsets section. */
  readonly offsets: Float64Array;
}

/**
 * Reads a finished token cache (see tokenCacheLayout.ts): random access by global token position
 * across shards, and document iteration. ledger.json is validated (a DATA error names the bad
 * field) and every shard footer is checked against it when the reader opens.
 *
 * Reads are synchronous `pread`s on open file descriptors: call {@link TokenCacheReader.close}.
 *
 * @example
 * const cache = await TokenCacheReader.open("cache/train");
 * const window = cache.read(1024, 65); // tokens 1024…1088, across shard boundaries if need be
 */
export class TokenCacheReader implements TokenSource {
  readonly dir: string;
  readonly ledger: TokenCacheLedger;
  readonly numTokens: number;
  readonly numDocuments: number;
  readonly #shards: OpenShard[];
  #closed = false;

  private constructor(dir: string, ledger: TokenCacheLedger, shards: OpenShard[]) {
    this.dir = dir;
    this.ledger = ledger;
    this.numTokens = ledger.totalTokens;
    this.numDocuments = ledger.totalDocuments;
    this.#shards = shards;
  }

  /**
   * Opens the cache in `dir`. Throws DATA if ledger.json is missing or invalid, if the cache is not
   * `finished` (unless `allowUnfinished`), or if a shard file disagrees with the ledger.
   */
  static async open(dir: string, opts: { allowUnfinished?: boolean } = {}): Promise<TokenCacheReader> {
    const ledger = await readTokenCacheLedger(dir);
    if (!ledger.finished && !opts.allowUnfinished) {
      throw new LevanterError("DATA", `token cache ${dir}: finished is false (run finalizeTokenCache first)`);
    }
    const shards: OpenShard[] = [];
    let tokenStart = 0;
    let docStart = 0;
    try {
      for (const entry of ledger.shards) {
        const file = path.join(dir, entry.file);
        let fd: number;
        try {
          fd = openSync(file, "r");
        } catch (cause) {
          throw new LevanterError("DATA", `token cache ${dir}: cannot open ${entry.file}, listed in ledger.json`, { cause });
        }
        try {
          const footer = readShardFooter(fd, file);
          for (const key of ["numTokens", "numDocuments"] as const) {
            if (footer[key] !== entry[key]) {
              throw new LevanterError(
                "DATA",
                `${file}: ${key} is ${footer[key]} but ledger.json shards.${entry.index}.${key} says ${entry[key]} (shard rewritten after finalize?)`,
              );
            }
          }
          if (footer.vocabSize !== ledger.vocabSize || footer.tokenizer !== ledger.tokenizer) {
            throw new LevanterError("DATA", `${file}: tokenizer ${footer.tokenizer}/${footer.vocabSize} differs from ledger.json (${ledger.tokenizer}/${ledger.vocabSize})`);
          }
          const raw = Buffer.alloc((footer.numDocuments + 1) * 8);
          readFully(fd, raw, footer.numTokens * 4, file);
          const offsets = new Float64Array(footer.numDocuments + 1);
          for (let i = 0; i < offsets.length; i++) offsets[i] = Number(raw.readBigUInt64LE(i * 8));
          if (offsets[0] !== 0 || offsets[offsets.length - 1] !== footer.numTokens) {
            throw new LevanterError("DATA", `${file}: offsets must run from 0 to numTokens (${footer.numTokens})`);
          }
          shards.push({ fd, file, tokenStart, docStart, numTokens: footer.numTokens, offsets });
        } catch (err) {
          closeSync(fd);
          throw err;
        }
        tokenStart += entry.numTokens;
        docStart += entry.numDocuments;
      }
    } catch (err) {
      for (const s of shards) closeSync(s.fd);
      throw err;
    }
    return new TokenCacheReader(dir, ledger, shards);
  }

  /** The tokenizer name recorded in the ledger. */
  get tokenizer(): string {
    return this.ledger.tokenizer;
  }

  /** The vocabulary size recorded in the ledger. */
  get vocabSize(): number {
    return this.ledger.vocabSize;
  }

  /** `length` tokens from global position `start`, crossing shard boundaries as needed. */
  read(start: number, length: number): Int32Array {
    this.#checkOpen();
    checkRange(start, length, this.numTokens);
    const out = new Int32Array(length);
    let pos = start;
    let written = 0;
    let s = this.#shardOfToken(pos);
    while (written < length) {
      const shard = this.#shards[s];
      const inShard = pos - shard.tokenStart;
      const n = Math.min(length - written, shard.numTokens - inShard);
      if (n > 0) {
        this.#readTokens(shard, inShard, out.subarray(written, written + n));
        written += n;
        pos += n;
      }
      s++;
    }
    return out;
  }

  /** The token ids of document `index` (global, across shards). */
  document(index: number): Int32Array {
    this.#checkOpen();
    if (!Number.isInteger(index) || index < 0 || index >= this.numDocuments) {
      throw new LevanterError("DATA", `document ${index} is outside [0, ${this.numDocuments})`);
    }
    let lo = 0;
    let hi = this.#shards.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.#shards[mid].docStart <= index) lo = mid;
      else hi = mid - 1;
    }
    const shard = this.#shards[lo];
    const d = index - shard.docStart;
    const begin = shard.offsets[d];
    const out = new Int32Array(shard.offsets[d + 1] - begin);
    this.#readTokens(shard, begin, out);
    return out;
  }

  /** Every document in order, from `from` (a global document index). */
  *documents(from = 0): IterableIterator<Int32Array> {
    for (let i = from; i < this.numDocuments; i++) yield this.document(i);
  }

  /** Closes the shard files. Further reads throw. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const s of this.#shards) closeSync(s.fd);
  }

  #shardOfToken(pos: number): number {
    let lo = 0;
    let hi = this.#shards.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.#shards[mid].tokenStart <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  #readTokens(shard: OpenShard, inShard: number, into: Int32Array): void {
    const bytes = Buffer.from(into.buffer, into.byteOffset, into.byteLength);
    readFully(shard.fd, bytes, inShard * 4, shard.file);
    if (!LITTLE_ENDIAN) for (let i = 0; i < into.length; i++) into[i] = bytes.readUInt32LE(i * 4);
  }

  #checkOpen(): void {
    if (this.#closed) throw new LevanterError("INTERNAL", `token cache ${this.dir} is closed`);
  }
}

/** Reads and validates `<dir>/ledger.json`; a DATA error names the missing file or the bad field. */
export async function readTokenCacheLedger(dir: string): Promise<TokenCacheLedger> {
  const file = path.join(dir, LEDGER_FILE);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (cause) {
    throw new LevanterError("DATA", `token cache ${dir}: no ${LEDGER_FILE} (not a token cache, or not finalized)`, { cause });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new LevanterError("DATA", `${file}: not valid JSON`, { cause });
  }
  return parseLedger(json, file);
}

/** Reads and validates the footer of an open shard file (see tokenCacheLayout.ts). */
export function readShardFooter(fd: number, file: string): ShardFooter {
  const size = fstatSync(fd).size;
  if (size < SHARD_TRAILER_BYTES) throw new LevanterError("DATA", `${file}: too short to be a shard (${size} bytes)`);
  const trailer = Buffer.alloc(SHARD_TRAILER_BYTES);
  readFully(fd, trailer, size - SHARD_TRAILER_BYTES, file);
  if (trailer.toString("latin1", 4) !== SHARD_MAGIC) throw new LevanterError("DATA", `${file}: not a shard file (bad magic)`);
  const jsonLength = trailer.readUInt32LE(0);
  const jsonStart = size - SHARD_TRAILER_BYTES - jsonLength;
  if (jsonStart < 0) throw new LevanterError("DATA", `${file}: footer length ${jsonLength} exceeds the file`);
  const json = Buffer.alloc(jsonLength);
  readFully(fd, json, jsonStart, file);
  let parsedJson: unknown;
  try {
    parsedJson = JSON.parse(json.toString("utf8"));
  } catch (cause) {
    throw new LevanterError("DATA", `${file}: footer is not valid JSON`, { cause });
  }
  const parsed = shardFooterSchema.safeParse(parsedJson);
  if (!parsed.success) throw new LevanterError("DATA", `${file}: invalid footer: ${formatZodIssues(parsed.error)}`);
  const footer = parsed.data;
  const expectedStart = footer.numTokens * 4 + (footer.numDocuments + 1) * 8;
  if (expectedStart !== jsonStart) {
    throw new LevanterError("DATA", `${file}: sections end at byte ${expectedStart} but the footer starts at ${jsonStart} (truncated or corrupt)`);
  }
  return footer;
}

function readFully(fd: number, into: Buffer, position: number, file: string): void {
  let done = 0;
  while (done < into.length) {
    const n = readSync(fd, into, done, into.length - done, position + done);
    if (n === 0) throw new LevanterError("DATA", `${file}: unexpected end of file at byte ${position + done}`);
    done += n;
  }
}
