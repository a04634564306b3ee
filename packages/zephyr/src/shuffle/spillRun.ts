// The on-disk format of shuffle spill runs and a cursor that reads one sorted range of frames.
//
// A run file is a sequence of frames sorted by (partition, hash, key bytes, tag, arrival); a
// run's descriptor records where each partition's frames start, so a reducer reads only its own
// byte range. Frame layout (little-endian):
//
//   u32 bodyLength | f64 sortHash | u8 tag | u32 keyLength | key bytes | value bytes
//
// Value bytes are msgpack, or UTF-8 JSON text in a run marked `values: "json"`.
//
// `sortHash` is the top 53 bits of the key's XXH64, exact as a double, so comparisons are one
// float compare in the common case; key bytes (canonical msgpack) break ties, so equal keys are
// adjacent and distinct keys with equal hashes stay apart.
import { closeSync, openSync, readSync } from "node:fs";
import { ZephyrError } from "../errors.ts";

/** Bytes of the frame header before the key: length, hash, tag, key length. */
export const FRAME_HEADER_BYTES = 4 + 8 + 1 + 4;

/**
 * One spill run: a file of frames sorted by partition, plus where each partition lives in it.
 * Plain JSON, so a mapper can hand it to reducers on other threads or machines.
 */
export interface SpillRun {
  /** Absolute path of the run file. */
  readonly path: string;
  /** Byte offsets: partition p occupies `[offsets[p], offsets[p + 1])`. Length = partitions + 1. */
  readonly offsets: readonly number[];
  /** Number of frames (records) of each partition. */
  readonly counts: readonly number[];
  /**
   * False when each partition's frames are in arrival order instead of sorted (a writer created
   * with `sort: false`, for deduplicate): readers hash them in memory, or sort them before merging.
   */
  readonly sorted?: boolean;
  /**
   * `"json"`: values are UTF-8 JSON text (a deduplicate feeding a JSONL sink directly, whose
   * reducer hands the text through without decoding it); otherwise msgpack.
   */
  readonly values?: "json";
}

/** A byte range of a run file holding frames of one partition, in sorted order. */
export interface SpillSegment {
  readonly path: string;
  readonly start: number;
  readonly end: number;
}

/** The segments of `partition` across `runs`, in run order, skipping empty ones. */
export function segmentsOf(runs: readonly SpillRun[], partition: number): SpillSegment[] {
  const out: SpillSegment[] = [];
  for (const run of runs) {
    if (partition < 0 || partition + 1 >= run.offsets.length) {
      throw new ZephyrError("INVALID_ARGUMENT", `spill run ${run.path} has ${run.offsets.length - 1} partitions; partition ${partition} requested`);
    }
    const start = run.offsets[partition];
    const end = run.offsets[partition + 1];
    if (end > start) out.push({ path: run.path, start, end });
  }
  return out;
}

/**
 * Reads the frames of one segment, block by block, with synchronous reads (shuffles run on a
 * worker thread or inline; sync reads keep the merge free of per-record promises). After a
 * successful {@link advance}, the current frame is `buf[frameStart, frameEnd)`, its key is
 * `buf[keyStart, keyEnd)` and its value is `buf[keyEnd, frameEnd)`.
 */
export class FrameCursor {
  buf: Buffer;
  hash = 0;
  tag = 0;
  frameStart = 0;
  keyStart = 0;
  keyEnd = 0;
  frameEnd = 0;
  private fd: number | undefined;
  private readonly segment: SpillSegment;
  private filePos: number;
  private dataEnd = 0;

  constructor(segment: SpillSegment, blockBytes: number) {
    this.segment = segment;
    this.filePos = segment.start;
    this.buf = Buffer.allocUnsafe(blockBytes);
    try {
      this.fd = openSync(segment.path, "r");
    } catch (cause) {
      throw new ZephyrError("IO", `opening spill run ${segment.path} failed`, { cause });
    }
  }

  /** Moves to the next frame; false (and the file closed) at the end of the segment. */
  advance(): boolean {
    let pos = this.frameEnd;
    if (this.dataEnd - pos < 4) {
      if (!this.fill(pos, 4)) return this.finish();
      pos = 0;
    }
    const body = this.buf.readUInt32LE(pos);
    if (this.dataEnd - pos < 4 + body) {
      this.fill(pos, 4 + body);
      pos = 0;
    }
    this.frameStart = pos;
    this.hash = this.buf.readDoubleLE(pos + 4);
    this.tag = this.buf[pos + 12];
    const keyLen = this.buf.readUInt32LE(pos + 13);
    this.keyStart = pos + FRAME_HEADER_BYTES;
    this.keyEnd = this.keyStart + keyLen;
    this.frameEnd = pos + 4 + body;
    if (body < FRAME_HEADER_BYTES - 4 || this.keyEnd > this.frameEnd) throw this.corrupt("bad frame header");
    return true;
  }

  /** Releases the file early (the cursor is abandoned). */
  close(): void {
    if (this.fd !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
    }
  }

  /**
   * Moves the unread bytes from `from` to the front of the buffer (so the next frame starts at 0)
   * and reads until `need` bytes are there; grows the buffer for a frame larger than a block.
   * False at a clean end of the segment; a partial frame is corruption.
   */
  private fill(from: number, need: number): boolean {
    const unread = this.dataEnd - from;
    if (need > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(bigger, 0, from, this.dataEnd);
      this.buf = bigger;
    } else if (unread > 0 && from > 0) {
      this.buf.copy(this.buf, 0, from, this.dataEnd);
    }
    this.dataEnd = unread;
    this.frameEnd = 0;
    while (this.dataEnd < need) {
      const want = Math.min(this.buf.length - this.dataEnd, this.segment.end - this.filePos);
      if (want <= 0) break;
      let n: number;
      try {
        n = readSync(this.fd as number, this.buf, this.dataEnd, want, this.filePos);
      } catch (cause) {
        throw new ZephyrError("IO", `reading spill run ${this.segment.path} failed`, { cause });
      }
      if (n === 0) break;
      this.dataEnd += n;
      this.filePos += n;
    }
    if (this.dataEnd >= need) return true;
    if (this.dataEnd === 0) return false;
    throw this.corrupt("truncated frame");
  }

  private finish(): false {
    this.close();
    return false;
  }

  private corrupt(what: string): ZephyrError {
    this.close();
    return new ZephyrError("IO", `spill run ${this.segment.path} is corrupt (${what}) near byte ${this.filePos}`);
  }
}
