// TensorBoard event files: framing, CRC, scalar summaries read back.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EventType, TensorBoardWriter, maskedCrc32c, readRecords } from "./tensorboard.ts";

describe("TensorBoardWriter", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("uses TFRecord's masked CRC32C (known vector)", () => {
    // CRC32C("123456789") = 0xE3069283 (RFC 3720); masked = rotr15 + 0xa282ead8.
    const crc = 0xe3069283;
    const expected = ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
    expect(maskedCrc32c(new TextEncoder().encode("123456789"))).toBe(expected);
  });

  it("writes events that read back with valid CRCs and the logged values", () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-tb-"));
    const w = new TensorBoardWriter(dir, 1_700_000_000_000);
    w.add(3, { "train/loss": 2.5, "optim/learning_rate": 1e-3 }, 1_700_000_001_000);
    w.add(4, { "train/loss": 2.25 }, 1_700_000_002_000);
    w.close();
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^events\.out\.tfevents\.1700000000\./);
    const events = readRecords(readFileSync(path.join(dir, files[0]!))).map((r) => EventType.toObject(EventType.decode(r), { longs: Number }));
    expect(events[0]).toMatchObject({ fileVersion: "brain.Event:2" });
    expect(events[1]).toMatchObject({ step: 3, wallTime: 1_700_000_001 });
    const values = (events[1] as { summary: { value: { tag: string; simpleValue: number }[] } }).summary.value;
    expect(values.map((v) => v.tag)).toEqual(["train/loss", "optim/learning_rate"]);
    expect(values[0]!.simpleValue).toBe(2.5);
    expect(values[1]!.simpleValue).toBeCloseTo(1e-3, 9);
    expect(events[2]).toMatchObject({ step: 4, summary: { value: [{ tag: "train/loss", simpleValue: 2.25 }] } });
    // A flipped byte is caught by the CRC check.
    const bytes = readFileSync(path.join(dir, files[0]!));
    bytes[bytes.length - 6]! ^= 0xff;
    expect(() => readRecords(bytes)).toThrow(/CRC/);
  });
});
