// Intermediate record files between stages (before a reshard, a take or a reduce): framed msgpack
// blocks, so a reader can skip whole blocks by count without decoding them.
import { open } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { Packr } from "msgpackr";
import { ZephyrError } from "../errors.ts";

// Plain msgpack (no record extension), so any reader decodes it without shared structures.
const packr = new Packr({ useRecords: false, moreTypes: true });
const HEADER = 8;

/** A part of a chunk file a shard reads: skip `skip` records, then read `take`. */
export interface ChunkRange {
  readonly file: string;
  readonly skip: number;
  readonly take: number;
}

/** Writes batches of records as framed blocks: [u32 byte length][u32 record count][msgpack array]. */
export class ChunkWriter {
  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  count = 0;
  bytes = 0;

  readonly file: string;
  private readonly fh: FileHandle;

  private constructor(file: string, fh: FileHandle) {
    this.file = file;
    this.fh = fh;
  }

  /** Creates (truncates) `file`. */
  static async create(file: string): Promise<ChunkWriter> {
    return new ChunkWriter(file, await open(file, "w"));
  }

  /** Appends a batch; flushes to disk every few MiB. */
  async write(batch: readonly unknown[]): Promise<void> {
    if (batch.length === 0) return;
    const body = packr.pack(batch);
    const head = Buffer.allocUnsafe(HEADER);
    head.writeUInt32LE(body.length, 0);
    head.writeUInt32LE(batch.length, 4);
    this.pending.push(head, body);
    this.pendingBytes += HEADER + body.length;
    this.count += batch.length;
    if (this.pendingBytes >= 4 << 20) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const buf = Buffer.concat(this.pending);
    this.pending.length = 0;
    this.pendingBytes = 0;
    await this.fh.write(buf);
    this.bytes += buf.length;
  }

  /** Flushes and closes; resolves to the number of records written. */
  async close(): Promise<number> {
    await this.flush();
    await this.fh.close();
    return this.count;
  }
}

/** Streams the records of `range` in batches (whole blocks outside the range are never decoded). */
export async function* readChunkRange(range: ChunkRange): AsyncGenerator<unknown[], void, undefined> {
  if (range.take <= 0) return;
  let fh: FileHandle;
  try {
    fh = await open(range.file, "r");
  } catch (cause) {
    throw new ZephyrError("IO", `reading intermediate file ${range.file} failed`, { cause });
  }
  try {
    const head = Buffer.alloc(HEADER);
    let pos = 0;
    let seen = 0;
    const end = range.skip + range.take;
    while (seen < end) {
      const { bytesRead } = await fh.read(head, 0, HEADER, pos);
      if (bytesRead === 0) break;
      if (bytesRead < HEADER) throw new ZephyrError("IO", `intermediate file ${range.file} is truncated`);
      const len = head.readUInt32LE(0);
      const n = head.readUInt32LE(4);
      pos += HEADER;
      if (seen + n > range.skip) {
        const body = Buffer.allocUnsafe(len);
        await fh.read(body, 0, len, pos);
        const batch = packr.unpack(body) as unknown[];
        const from = Math.max(0, range.skip - seen);
        const to = Math.min(n, end - seen);
        yield from === 0 && to === n ? batch : batch.slice(from, to);
      }
      pos += len;
      seen += n;
    }
  } finally {
    await fh.close();
  }
}
