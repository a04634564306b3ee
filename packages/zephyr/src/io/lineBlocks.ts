// Splits a (possibly compressed) text file into blocks of whole lines, the unit both the JSONL and
// the text reader work on: one block per decompressed chunk (~64 KiB), so the per-line cost is a
// slice and nothing else: no promise, no readline event per line. Splitting works on bytes and is
// linear in the bytes read, however long a line is; each block's UTF-8 is checked on the way.
import { isUtf8 } from "node:buffer";
import { ZephyrError } from "../errors.ts";
import { openDecompressed } from "./files.ts";

/** What a reader does with a bad line (not valid JSON, invalid UTF-8, too long): throw, or count it and go on. */
export type BadRecordPolicy = "fail" | "skip";

/**
 * What a reader does with a line that is not valid UTF-8: `"badRecord"` (default) treats it as a
 * bad record under the reader's {@link BadRecordPolicy}; `"replace"` decodes it with U+FFFD in
 * place of each invalid sequence, as `TextDecoder` does without `fatal`.
 */
export type InvalidUtf8Policy = "badRecord" | "replace";

/** A line a reader could not use. */
export interface BadRecord {
  /** The file it came from. */
  readonly path: string;
  /** 1-based line number within the (decompressed) file. */
  readonly line: number;
  /** Why: the parser's error, or a `ZephyrError("BAD_RECORD")` for invalid UTF-8 or an over-long line. */
  readonly error: unknown;
}

/** Counts kept by a reader; pass the same object to several reads to total them. */
export interface ReadStats {
  /** Lines dropped under `onBadRecord: "skip"`. */
  skipped: number;
}

/**
 * The longest line a reader accepts, in bytes: 256 MiB, half of the longest string V8 can make
 * (`buffer.constants.MAX_STRING_LENGTH`, ~512 Mi UTF-16 units), so a line and the chunk it ends
 * in always decode into one string. A longer line is a bad record (its bytes are not kept while
 * it is skipped).
 */
export const MAX_LINE_BYTES = 256 * 1024 * 1024;

/** A line of a block that the splitter could not decode; its text in the block is empty. */
export interface BadLine {
  /** 0-based index of the line within its block. */
  readonly index: number;
  /** Why, for the reader's message (`invalid UTF-8`, `line longer than …`). */
  readonly reason: string;
}

/**
 * Consecutive whole lines joined by "\n" (without the final newline; "\r" of CRLF files is kept),
 * so a block with n newlines holds n + 1 lines and line numbers continue from block to block.
 */
export interface LineBlock {
  readonly text: string;
  /** Lines that could not be decoded, in order (absent when there are none). */
  readonly bad?: readonly BadLine[];
}

/** Options of {@link LineSplitter} and {@link lineBlocks}. */
export interface LineSplitOptions {
  /** Default `"badRecord"`: report invalid lines in {@link LineBlock.bad}. `"replace"`: decode them with U+FFFD. */
  invalidUtf8?: InvalidUtf8Policy;
  /** Lines longer than this many bytes are reported as bad (default {@link MAX_LINE_BYTES}). */
  maxLineBytes?: number;
}

const NL = 0x0a;

/**
 * Turns a stream of byte chunks into {@link LineBlock}s. Each chunk is scanned once for its last
 * newline and its bytes are copied at most once (into the block they end up in), so the work is
 * linear in the bytes pushed, whatever the line lengths: a line spread over many chunks is kept as
 * a list of chunks until its newline arrives, never as a growing string that is re-scanned.
 * `scannedBytes` and `copiedBytes` count that work (tests check linearity through them).
 */
export class LineSplitter {
  /** Bytes examined looking for newlines (or for line ends of a bad block). */
  scannedBytes = 0;
  /** Bytes copied to join a line's chunks. */
  copiedBytes = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private first = true;
  /** Inside a line that passed `maxLineBytes`: its bytes are dropped until its newline. */
  private tooLong = false;
  private readonly replace: boolean;
  private readonly maxLineBytes: number;

  constructor(options: LineSplitOptions = {}) {
    this.replace = options.invalidUtf8 === "replace";
    this.maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
  }

  /** Adds a chunk; returns the block of lines it completes, if any. */
  push(chunk: Buffer): LineBlock | undefined {
    if (chunk.length === 0) return undefined;
    const nl = chunk.lastIndexOf(NL);
    this.scannedBytes += nl < 0 ? chunk.length : chunk.length - nl;
    if (nl < 0) {
      if (this.tooLong) return undefined;
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      if (this.pendingBytes > this.maxLineBytes) {
        this.pending = [];
        this.pendingBytes = 0;
        this.tooLong = true;
      }
      return undefined;
    }
    const block = this.take(chunk, nl);
    this.pending = nl + 1 < chunk.length ? [chunk.subarray(nl + 1)] : [];
    this.pendingBytes = chunk.length - nl - 1;
    return block;
  }

  /** Ends the input; returns the last line(s) when the input did not end with a newline. */
  end(): LineBlock | undefined {
    if (this.tooLong) {
      this.tooLong = false;
      return { text: "", bad: [{ index: 0, reason: this.tooLongReason() }] };
    }
    if (this.pendingBytes === 0) return undefined;
    const bytes = this.join(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    return this.decode(bytes, undefined);
  }

  /** The block made of the pending bytes and `chunk` up to (not including) its newline at `nl`. */
  private take(chunk: Buffer, nl: number): LineBlock {
    if (this.pending.length === 0 && !this.tooLong) return this.decode(chunk.subarray(0, nl), undefined);
    // The pending bytes continue into this chunk's first line.
    const firstNl = chunk.indexOf(NL);
    this.scannedBytes += firstNl + 1;
    if (this.tooLong || this.pendingBytes + firstNl > this.maxLineBytes) {
      // The first line of this block is the over-long one: it stays empty and is reported.
      this.tooLong = false;
      return this.decode(chunk.subarray(firstNl, nl), this.tooLongReason());
    }
    this.pending.push(chunk.subarray(0, nl));
    return this.decode(this.join(this.pending, this.pendingBytes + nl), undefined);
  }

  private join(parts: Buffer[], bytes: number): Buffer {
    if (parts.length === 1) return parts[0];
    this.copiedBytes += bytes;
    return Buffer.concat(parts, bytes);
  }

  private tooLongReason(): string {
    return `line longer than ${this.maxLineBytes} bytes (the reader's limit)`;
  }

  /** Decodes whole lines; `firstBad` marks line 0 as bad for that reason (its bytes are already gone). */
  private decode(bytes: Buffer, firstBad: string | undefined): LineBlock {
    if (this.first) {
      this.first = false;
      // A UTF-8 byte order mark is not part of the first line.
      if (firstBad === undefined && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
    }
    if (this.replace || isUtf8(bytes)) {
      const text = bytes.toString("utf8");
      return firstBad === undefined ? { text } : { text, bad: [{ index: 0, reason: firstBad }] };
    }
    // Rare: find the invalid lines, leave them empty and report them.
    this.scannedBytes += bytes.length;
    const bad: BadLine[] = firstBad === undefined ? [] : [{ index: 0, reason: firstBad }];
    const parts: string[] = [];
    let start = 0;
    for (let index = 0; ; index++) {
      const at = bytes.indexOf(NL, start);
      const end = at < 0 ? bytes.length : at;
      const line = bytes.subarray(start, end);
      if (isUtf8(line)) parts.push(line.toString("utf8"));
      else {
        parts.push("");
        bad.push({ index, reason: "invalid UTF-8" });
      }
      if (at < 0) break;
      start = at + 1;
    }
    return { text: parts.join("\n"), bad };
  }
}

/**
 * Yields the lines of `filePath` in {@link LineBlock}s. The file's final newline does not start an
 * extra (empty) line, and a leading UTF-8 byte order mark is dropped. Read or codec failures become
 * `ZephyrError("IO")` naming the file.
 */
export async function* lineBlocks(filePath: string, options: LineSplitOptions = {}): AsyncGenerator<LineBlock, void, undefined> {
  const splitter = new LineSplitter(options);
  const stream = openDecompressed(filePath);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      const block = splitter.push(chunk);
      if (block) yield block;
    }
    const rest = splitter.end();
    if (rest) yield rest;
  } catch (cause) {
    if (cause instanceof ZephyrError) throw cause;
    throw new ZephyrError("IO", `reading ${filePath} failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  } finally {
    stream.destroy();
  }
}

/**
 * Applies the bad-record policy to a bad line: under `"fail"` throws `ZephyrError("BAD_RECORD")`
 * as `FILE:LINE: reason`; under `"skip"` counts it and tells `onSkip`.
 */
export function badLine(
  filePath: string,
  line: number,
  reason: string,
  cause: unknown,
  options: { onBadRecord?: BadRecordPolicy; stats?: ReadStats; onSkip?: (bad: BadRecord) => void },
): void {
  const error = new ZephyrError("BAD_RECORD", `${filePath}:${line}: ${reason}`, cause === undefined ? {} : { cause });
  if ((options.onBadRecord ?? "fail") !== "skip") throw error;
  if (options.stats) options.stats.skipped++;
  options.onSkip?.({ path: filePath, line, error: cause ?? error });
}
