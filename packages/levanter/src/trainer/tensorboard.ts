// A TensorBoard event-file writer (TFRecord framing with masked CRC32C, Event/Summary protobufs).
import { crc32c } from "@aws-crypto/crc32c";
import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import protobuf from "protobufjs";

// The two TensorBoard messages we write, from tensorflow/core/util/event.proto and
// framework/summary.proto (only the fields used).
const PROTO = `
syntax = "proto3";
message SummaryValue { string tag = 1; float simple_value = 2; string node_name = 7; }
message Summary { repeated SummaryValue value = 1; }
message Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
`;
const root = protobuf.parse(PROTO).root;
/** The protobuf type of a TensorBoard `Event` (exported for reading files back). */
export const EventType = root.lookupType("Event");

/** TFRecord's masked CRC32C: rotate right by 15, add a constant. */
export function maskedCrc32c(data: Uint8Array): number {
  const crc = crc32c(data) >>> 0;
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** One TFRecord: length (u64 LE), masked CRC of the length, data, masked CRC of the data. */
export function frameRecord(data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length + 4);
  out.writeBigUInt64LE(BigInt(data.length), 0);
  out.writeUInt32LE(maskedCrc32c(out.subarray(0, 8)), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return out;
}

/** Splits a TFRecord file into its records, throwing if a length or CRC does not match. */
export function readRecords(buf: Buffer): Buffer[] {
  const records: Buffer[] = [];
  let o = 0;
  while (o < buf.length) {
    const len = Number(buf.readBigUInt64LE(o));
    if (buf.readUInt32LE(o + 8) !== maskedCrc32c(buf.subarray(o, o + 8))) throw new Error(`bad length CRC at byte ${o}`);
    const data = buf.subarray(o + 12, o + 12 + len);
    if (buf.readUInt32LE(o + 12 + len) !== maskedCrc32c(data)) throw new Error(`bad data CRC at byte ${o}`);
    records.push(data);
    o += 16 + len;
  }
  return records;
}

/**
 * Writes a TensorBoard event file (`events.out.tfevents.<secs>.<host>`) of scalar summaries, one
 * Event per `add` call, flushed as it goes: TensorBoard reads it without TensorFlow installed here.
 */
export class TensorBoardWriter {
  readonly file: string;
  readonly #fd: number;

  constructor(dir: string, now = Date.now()) {
    this.file = path.join(dir, `events.out.tfevents.${Math.floor(now / 1000)}.${hostname()}`);
    this.#fd = openSync(this.file, "a");
    this.#write({ wallTime: now / 1000, step: 0, fileVersion: "brain.Event:2" });
  }

  /** Appends one Event holding `scalars` (tag → value) at `step`. */
  add(step: number, scalars: Record<string, number>, now = Date.now()): void {
    const value = Object.entries(scalars).map(([tag, v]) => ({ tag, simpleValue: v }));
    this.#write({ wallTime: now / 1000, step, summary: { value } });
  }

  #write(event: Record<string, unknown>): void {
    writeSync(this.#fd, frameRecord(EventType.encode(EventType.create(event)).finish()));
  }

  /** Flushes to disk and closes the file. */
  close(): void {
    fsyncSync(this.#fd);
    closeSync(this.#fd);
  }
}
