// Writes token-cache shards: append-only files with a ledger, safe against racing writers.
import { randomBytes } from "node:crypto";
import { closeSync, openSync } from "node:fs";
import { mkdir, open, readdir, rename, rm } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { LevanterError } from "../errors.ts";
import { syncDir, writeFileAtomic } from "@marin/iris/toolkit";
import { LEDGER_FILE, SHARD_FILE_PATTERN, SHARD_MAGIC, TOKEN_CACHE_FORMAT, TOKEN_CACHE_VERSION, shardFileName } from "./tokenCacheLayout.ts";
import type { ShardFooter, TokenCacheLedger } from "./tokenCacheLayout.ts";
import { readShardFooter } from "./tokenCacheReader.ts";

/** What every shard of one cache agrees on. */
export interface TokenCacheShardOptions {
  /** Name of the tokenizer that produced the ids (`"byte"`, `"llama2"`, …); recorded in the ledger. */
  tokenizer: string;
  /** Every id must be in `[0, vocabSize)`. */
  vocabSize: number;
}

/** What a committed shard holds. */
export interface ShardSummary {
  shard: number;
  file: string;
  numTokens: number;
  numDocuments: number;
}

const FLUSH_BYTES = 1 << 20;

/**
 * Writes one shard of a token cache, one document at a time, to a private temporary file, and
 * commits it with an atomic rename on {@link TokenCacheShardWriter.close}. Any number of processes
 * may write different shards of the same directory at once; a shard written twice (a retried task)
 * is replaced whole, never mixed. After every shard is written, one process calls
 * {@link finalizeTokenCache}.
 *
 * When to use: streaming documents whose count is unknown up front. For a list of documents,
 * {@link writeTokenCacheShard} does open/write/close in one call.
 *
 * @example
 * const w = await TokenCacheShardWriter.open("cache/train", 3, { tokenizer: "byte", vocabSize: 257 });
 * for (const text of texts) await w.writeDocument([...tok.encode(text), tok.eosId]);
 * await w.close();
 */
export class TokenCacheShardWriter {
  readonly dir: string;
  readonly shard: number;
  readonly options: TokenCacheShardOptions;
  readonly #tmpPath: string;
  readonly #file: FileHandle;
  readonly #offsets: number[] = [0];
  #buffer = Buffer.allocUnsafe(FLUSH_BYTES);
  #buffered = 0;
  #numTokens = 0;
  #state: "open" | "closed" | "aborted" = "open";

  private constructor(dir: string, shard: number, options: TokenCacheShardOptions, tmpPath: string, file: FileHandle) {
    this.dir = dir;
    this.shard = shard;
    this.options = options;
    this.#tmpPath = tmpPath;
    this.#file = file;
  }

  /** Creates `dir` if needed and starts writing shard `shard` (a non-negative integer). */
  static async open(dir: string, shard: number, options: TokenCacheShardOptions): Promise<TokenCacheShardWriter> {
    if (!Number.isInteger(shard) || shard < 0) {
      throw new LevanterError("INVALID_CONFIG", `shard: expected a non-negative integer, got ${shard}`);
    }
    if (!Number.isInteger(options.vocabSize) || options.vocabSize < 1 || options.vocabSize > 2 ** 31) {
      throw new LevanterError("INVALID_CONFIG", `vocabSize: expected an integer in [1, 2^31], got ${options.vocabSize}`);
    }
    if (!options.tokenizer) throw new LevanterError("INVALID_CONFIG", "tokenizer: expected a non-empty name");
    await mkdir(dir, { recursive: true });
    const tmpPath = path.join(dir, `.${shardFileName(shard)}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
    const file = await open(tmpPath, "wx");
    return new TokenCacheShardWriter(dir, shard, { ...options }, tmpPath, file);
  }

  /** Tokens written so far. */
  get numTokens(): number {
    return this.#numTokens;
  }

  /** Documents written so far. */
  get numDocuments(): number {
    return this.#offsets.length - 1;
  }

  /**
   * Appends one document (its token ids, EOS included if you want one: the cache stores ids as
   * given). Throws a DATA error for an id outside `[0, vocabSize)`.
   */
  async writeDocument(ids: ArrayLike<number>): Promise<void> {
    this.#checkOpen();
    const { vocabSize } = this.options;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (!(Number.isInteger(id) && id >= 0 && id < vocabSize)) {
        throw new LevanterError("DATA", `shard ${this.shard}, document ${this.numDocuments}: token ${i} is ${id}, outside [0, ${vocabSize})`);
      }
    }
    let done = 0;
    while (done < ids.length) {
      if (this.#buffered === this.#buffer.length) await this.#flush();
      const n = Math.min(ids.length - done, (this.#buffer.length - this.#buffered) / 4);
      const view = new DataView(this.#buffer.buffer, this.#buffer.byteOffset + this.#buffered, n * 4);
      for (let i = 0; i < n; i++) view.setUint32(i * 4, ids[done + i], true);
      this.#buffered += n * 4;
      done += n;
    }
    this.#numTokens += ids.length;
    this.#offsets.push(this.#numTokens);
  }

  /** Writes offsets and footer, fsyncs, and renames the shard into place; returns what it holds. */
  async close(): Promise<ShardSummary> {
    this.#checkOpen();
    try {
      await this.#flush();
      const offsets = Buffer.allocUnsafe(this.#offsets.length * 8);
      this.#offsets.forEach((o, i) => offsets.writeBigUInt64LE(BigInt(o), i * 8));
      const footer: ShardFooter = {
        shard: this.shard,
        numTokens: this.#numTokens,
        numDocuments: this.numDocuments,
        tokenizer: this.options.tokenizer,
        vocabSize: this.options.vocabSize,
      };
      const json = Buffer.from(JSON.stringify(footer), "utf8");
      const trailer = Buffer.alloc(12);
      trailer.writeUInt32LE(json.length, 0);
      trailer.write(SHARD_MAGIC, 4, "latin1");
      await this.#file.write(Buffer.concat([offsets, json, trailer]));
      await this.#file.sync();
      await this.#file.close();
      this.#state = "closed";
      const file = shardFileName(this.shard);
      await rename(this.#tmpPath, path.join(this.dir, file));
      await syncDir(this.dir);
      return { shard: this.shard, file, numTokens: footer.numTokens, numDocuments: footer.numDocuments };
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  /** Discards the shard: nothing of it becomes visible. Safe to call more than once. */
  async abort(): Promise<void> {
    if (this.#state === "open") await this.#file.close().catch(() => undefined);
    this.#state = "aborted";
    await rm(this.#tmpPath, { force: true });
  }

  async #flush(): Promise<void> {
    if (this.#buffered === 0) return;
    await this.#file.write(this.#buffer, 0, this.#buffered);
    // A fresh buffer: FileHandle.write may still hold the old one until its promise settles.
    this.#buffer = Buffer.allocUnsafe(FLUSH_BYTES);
    this.#buffered = 0;
  }

  #checkOpen(): void {
    if (this.#state !== "open") throw new LevanterError("INTERNAL", `shard ${this.shard} writer is already ${this.#state}`);
  }
}

/**
 * Writes shard `shard` of the cache in `dir` from `documents` (each an array of token ids) and
 * commits it. The one-call form of {@link TokenCacheShardWriter}; this is what zephyr's
 * `writeTokenCache` and marin's tokenize step call, once per shard, from any process.
 */
export async function writeTokenCacheShard(
  dir: string,
  shard: number,
  documents: Iterable<ArrayLike<number>> | AsyncIterable<ArrayLike<number>>,
  options: TokenCacheShardOptions,
): Promise<ShardSummary> {
  const writer = await TokenCacheShardWriter.open(dir, shard, options);
  try {
    for await (const doc of documents) await writer.writeDocument(doc);
  } catch (err) {
    await writer.abort();
    throw err;
  }
  return writer.close();
}

/**
 * Combines the shards in `dir` into its ledger.json (written via a temporary file and a rename),
 * marking the cache `finished`. Shards must be numbered `0 … n-1` with no gap and agree on
 * tokenizer and vocabulary size; with `numShards`, exactly that many must be present. Passing
 * `tokenizer` and `vocabSize` checks the shards against them and lets an empty dataset (zero
 * shards) finalize into an empty cache. Run it once, after every shard writer has closed
 * (re-running it is harmless).
 */
export async function finalizeTokenCache(dir: string, opts: { numShards?: number; tokenizer?: string; vocabSize?: number } = {}): Promise<TokenCacheLedger> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (cause) {
    throw new LevanterError("DATA", `token cache ${dir}: cannot list the directory`, { cause });
  }
  const indexes = names
    .map((n) => SHARD_FILE_PATTERN.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
  const expected = opts.numShards ?? indexes.length;
  const missing: number[] = [];
  for (let i = 0; i < expected; i++) if (!indexes.includes(i)) missing.push(i);
  if (missing.length > 0) {
    throw new LevanterError("DATA", `token cache ${dir}: missing shard(s) ${missing.join(", ")} of ${expected}`);
  }
  if (indexes.length !== expected) {
    throw new LevanterError("DATA", `token cache ${dir}: expected ${expected} shards, found ${indexes.length} (${indexes.join(", ")})`);
  }
  const shards: TokenCacheLedger["shards"] = [];
  const given = opts.tokenizer !== undefined && opts.vocabSize !== undefined ? { tokenizer: opts.tokenizer, vocabSize: opts.vocabSize } : undefined;
  let first: Pick<ShardFooter, "tokenizer" | "vocabSize"> | undefined = given;
  for (const index of indexes) {
    const file = shardFileName(index);
    const fd = openSync(path.join(dir, file), "r");
    let footer: ShardFooter;
    try {
      footer = readShardFooter(fd, path.join(dir, file));
    } finally {
      closeSync(fd);
    }
    if (footer.shard !== index) {
      throw new LevanterError("DATA", `token cache ${dir}: ${file} says it is shard ${footer.shard}`);
    }
    first ??= footer;
    if (footer.tokenizer !== first.tokenizer || footer.vocabSize !== first.vocabSize) {
      throw new LevanterError(
        "DATA",
        `token cache ${dir}: ${file} was written with tokenizer ${footer.tokenizer} (vocab ${footer.vocabSize}), ` +
          `expected ${first.tokenizer} (vocab ${first.vocabSize}) like ${given ? "the options" : "shard 0"}`,
      );
    }
    shards.push({ index, file, numTokens: footer.numTokens, numDocuments: footer.numDocuments });
  }
  if (first === undefined) {
    throw new LevanterError("DATA", `token cache ${dir}: no shards to finalize (pass tokenizer and vocabSize to write an empty cache)`);
  }
  const ledger: TokenCacheLedger = {
    format: TOKEN_CACHE_FORMAT,
    version: TOKEN_CACHE_VERSION,
    tokenizer: first.tokenizer,
    vocabSize: first.vocabSize,
    tokenDtype: "uint32",
    shards,
    totalTokens: shards.reduce((s, sh) => s + sh.numTokens, 0),
    totalDocuments: shards.reduce((s, sh) => s + sh.numDocuments, 0),
    finished: true,
  };
  await writeFileAtomic(path.join(dir, LEDGER_FILE), `${JSON.stringify(ledger, null, 2)}\n`, { durable: true });
  return ledger;
}
