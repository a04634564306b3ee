// JSON Lines: a batch-at-a-time reader and a buffered writer, compression by extension.
import { once } from "node:events";
import { finished } from "node:stream/promises";
import { ZephyrError } from "../errors.ts";
import { openCompressed } from "./files.ts";
import type { CompressOptions, CompressedOutput } from "./files.ts";
import { badLine, lineBlocks } from "./lineBlocks.ts";
import type { BadRecord, BadRecordPolicy, InvalidUtf8Policy, ReadStats } from "./lineBlocks.ts";

export type { BadRecord, BadRecordPolicy, InvalidUtf8Policy, ReadStats } from "./lineBlocks.ts";

/** Options of {@link readJsonlBatches} and {@link readJsonl}. */
export interface ReadJsonlOptions {
  /**
   * `"fail"` (default): a bad line (not JSON, invalid UTF-8, longer than 256 MiB)
   * throws `ZephyrError("BAD_RECORD")` as `FILE:LINE: why`. `"skip"`: drop the line and count it.
   */
  onBadRecord?: BadRecordPolicy;
  /** `"badRecord"` (default): invalid UTF-8 makes the line bad. `"replace"`: read it with U+FFFD instead. */
  invalidUtf8?: InvalidUtf8Policy;
  /** Called for every skipped line (only under `"skip"`). */
  onSkip?: (bad: BadRecord) => void;
  /** Incremented for every skipped line (only under `"skip"`). */
  stats?: ReadStats;
}

/**
 * Streams the records of a JSONL file (`.jsonl`, `.jsonl.gz`, `.jsonl.zst`; compression by
 * extension) as arrays of parsed records, one array per ~64 KiB of decompressed text, in file order.
 * Blank lines are ignored. A batch is never empty.
 *
 * *When to use:* on hot paths. Iterating batches costs one promise per ~thousands of records
 * instead of one per record (see {@link readJsonl} for the convenient per-record form).
 *
 * @example
 * for await (const batch of readJsonlBatches<{ text: string }>("in.jsonl.gz")) for (const r of batch) use(r);
 */
export async function* readJsonlBatches<T = unknown>(filePath: string, options: ReadJsonlOptions = {}): AsyncGenerator<T[], void, undefined> {
  let line = 1;
  for await (const block of lineBlocks(filePath, { invalidUtf8: options.invalidUtf8 })) {
    const text = block.text;
    const bad = block.bad;
    let b = 0;
    let nextBad = bad ? bad[0].index : -1;
    const out: T[] = [];
    let start = 0;
    for (let index = 0; ; index++) {
      const nl = text.indexOf("\n", start);
      const end = nl < 0 ? text.length : nl;
      if (index === nextBad) {
        badLine(filePath, line, bad![b].reason, undefined, options);
        nextBad = ++b < bad!.length ? bad![b].index : -1;
      } else if (end > start) {
        const slice = text.slice(start, end);
        try {
          out.push(JSON.parse(slice) as T);
        } catch (error) {
          // Whitespace-only lines (and a lone "\r" of CRLF files) are blank, not bad.
          if (slice.trim().length !== 0) badLine(filePath, line, `malformed JSON line: ${(error as Error).message}`, error, options);
        }
      }
      line++;
      if (nl < 0) break;
      start = nl + 1;
    }
    if (out.length > 0) yield out;
  }
}

/**
 * Streams the records of a JSONL file one at a time. Same semantics as {@link readJsonlBatches},
 * which is faster on hot paths.
 */
export async function* readJsonl<T = unknown>(filePath: string, options: ReadJsonlOptions = {}): AsyncGenerator<T, void, undefined> {
  for await (const batch of readJsonlBatches<T>(filePath, options)) yield* batch;
}

/** What a closed writer reports of its one file (a file sink's `WriteResult` covers all its shards). */
export interface WrittenFile {
  /** Records written. */
  readonly count: number;
  /** Bytes of the file on disk (after compression). */
  readonly bytes: number;
}

/** Options of {@link JsonlWriter.create}. */
export type JsonlWriterOptions = CompressOptions;

/** Serialised text is handed to the codec in chunks of about this many UTF-16 units. */
const FLUSH_CHARS = 1 << 20;
const DONE: Promise<void> = Promise.resolve();

/**
 * Writes records as JSON Lines to exactly the path it is given, compressed by extension (`.gz`:
 * gzip level 1 by default, `.zst`: zstd level 2). Records are serialised eagerly and buffered;
 * `write` only returns a pending promise when the buffer is handed to the codec and the codec asks
 * to wait (backpressure), so awaiting every `write` is cheap. Temp names and renames are the
 * caller's business.
 *
 * @example
 * const w = JsonlWriter.create("/tmp/out.jsonl.zst");
 * await w.writeMany(records);
 * const { count, bytes } = await w.close();
 */
export class JsonlWriter {
  readonly path: string;
  private readonly out: CompressedOutput;
  private buffer = "";
  private count = 0;
  private failure: unknown;
  private closed = false;

  private constructor(filePath: string, out: CompressedOutput) {
    this.path = filePath;
    this.out = out;
    const fail = (err: unknown): void => {
      this.failure ??= err;
    };
    out.input.on("error", fail);
    out.file.on("error", fail);
  }

  /** Creates (truncates) the file at `filePath`; its directory must exist. */
  static create(filePath: string, options: JsonlWriterOptions = {}): JsonlWriter {
    return new JsonlWriter(filePath, openCompressed(filePath, options));
  }

  /** Appends one record. Await it: it resolves at once unless the codec needs the caller to wait. */
  write(record: unknown): Promise<void> {
    try {
      this.append(record);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.buffer.length >= FLUSH_CHARS ? this.flush() : DONE;
  }

  /** Appends records in order. */
  async writeMany(records: Iterable<unknown>): Promise<void> {
    for (const record of records) {
      this.append(record);
      if (this.buffer.length >= FLUSH_CHARS) await this.flush();
    }
  }

  /**
   * Appends records that are already JSON text, as UTF-8 bytes (one record each, no newline), in
   * order; the bytes go to the codec as they are.
   */
  async writeEncoded(lines: readonly Uint8Array[]): Promise<void> {
    this.checkOpen();
    await this.flush();
    let bytes = 0;
    for (const l of lines) bytes += l.length + 1;
    const chunk = Buffer.allocUnsafe(bytes);
    let at = 0;
    for (const l of lines) {
      chunk.set(l, at);
      at += l.length;
      chunk[at++] = 0x0a;
    }
    this.count += lines.length;
    await this.writeChunk(chunk);
  }

  /** Flushes, ends the codec and the file, and reports what was written. */
  async close(): Promise<WrittenFile> {
    this.checkOpen();
    await this.flush();
    this.closed = true;
    this.out.input.end();
    try {
      await finished(this.out.file);
    } catch (cause) {
      throw this.ioError(cause);
    }
    if (this.failure !== undefined) throw this.ioError(this.failure);
    return { count: this.count, bytes: this.out.file.bytesWritten };
  }

  /** Stops writing and releases the file; what was written is left for the caller to remove. */
  async abort(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.out.input.destroy();
    this.out.file.destroy();
    await finished(this.out.file).catch(() => undefined);
  }

  private append(record: unknown): void {
    this.checkOpen();
    let json: string | undefined;
    try {
      json = JSON.stringify(record);
    } catch (cause) {
      throw new ZephyrError("BAD_RECORD", `${this.path}: record #${this.count} cannot be serialised as JSON: ${(cause as Error).message}`, { cause });
    }
    if (json === undefined) {
      throw new ZephyrError("BAD_RECORD", `${this.path}: record #${this.count} (${typeof record}) has no JSON form`);
    }
    this.buffer += json + "\n";
    this.count++;
  }

  private async flush(): Promise<void> {
    if (this.failure !== undefined) throw this.ioError(this.failure);
    if (this.buffer.length === 0) return;
    const chunk = this.buffer;
    this.buffer = "";
    await this.writeChunk(chunk);
  }

  private async writeChunk(chunk: string | Buffer): Promise<void> {
    if (!this.out.input.write(chunk)) {
      try {
        await once(this.out.input, "drain");
      } catch (cause) {
        throw this.ioError(cause);
      }
    }
    if (this.failure !== undefined) throw this.ioError(this.failure);
  }

  private checkOpen(): void {
    if (this.closed) throw new ZephyrError("INVALID_ARGUMENT", `${this.path}: writer is closed`);
  }

  private ioError(cause: unknown): ZephyrError {
    return cause instanceof ZephyrError ? cause : new ZephyrError("IO", `writing ${this.path} failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}
