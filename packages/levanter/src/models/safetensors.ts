// Safetensors files (Hugging Face's tensor format): a strict reader and a writer.
//
//   [ u64 little-endian N ][ N bytes of UTF-8 JSON header ][ data ]
//   header: { "__metadata__"?: { string: string }, NAME: { dtype, shape, data_offsets: [begin, end] }, … }
//
// Offsets are relative to the start of the data. The whole header is checked before any tensor is
// read: every range lies inside the file, no two ranges overlap, every dtype is known, every
// shape's byte length matches its range. Files from outside are hostile until then; every problem
// is a LevanterError (CHECKPOINT_CORRUPT) naming the file.
import { open, stat } from "node:fs/promises";
import { LevanterError } from "../errors.ts";

/** Element types the format defines, with their widths in bytes. */
const DTYPE_BYTES: Record<string, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U64: 8,
  U32: 4,
  U16: 2,
  U8: 1,
  BOOL: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
};

/** Element types levanter reads as float32 (and writes: F32, BF16). */
export type FloatDtype = "F32" | "F16" | "BF16";

/** One tensor's entry in a checked header. */
export interface SafetensorsEntry {
  dtype: string;
  shape: number[];
  /** Absolute byte offsets in the file (header included). */
  begin: number;
  end: number;
}

/** A checked header: tensors by name (in the header's order) and the free-form metadata. */
export interface SafetensorsHeader {
  file: string;
  tensors: Map<string, SafetensorsEntry>;
  metadata: Record<string, string>;
}

/** A tensor read as float32. */
export interface FloatTensor {
  shape: number[];
  data: Float32Array;
  /** The dtype stored in the file. */
  dtype: FloatDtype;
}

/** Largest header accepted (the reference implementation's limit). */
const MAX_HEADER_BYTES = 100 * 2 ** 20;

function corrupt(file: string, what: string): LevanterError {
  return new LevanterError("CHECKPOINT_CORRUPT", `${file}: ${what}`);
}

/** Reads and checks the header of a safetensors file (no tensor data is read). */
export async function readSafetensorsHeader(file: string): Promise<SafetensorsHeader> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (cause) {
    throw new LevanterError("CHECKPOINT_NOT_FOUND", `${file}: cannot read it (${(cause as Error).message})`, { cause });
  }
  if (size < 8) throw corrupt(file, `not a safetensors file: ${size} bytes, shorter than the 8-byte header length (truncated?)`);
  const fh = await open(file, "r");
  let headerBytes: Buffer;
  try {
    const lenBuf = Buffer.alloc(8);
    await fh.read(lenBuf, 0, 8, 0);
    const n = lenBuf.readBigUInt64LE(0);
    if (n > BigInt(size - 8)) throw corrupt(file, `header length ${n} is larger than the file (${size} bytes; truncated or not a safetensors file)`);
    if (n > BigInt(MAX_HEADER_BYTES)) throw corrupt(file, `header length ${n} exceeds the ${MAX_HEADER_BYTES}-byte limit`);
    headerBytes = Buffer.alloc(Number(n));
    const { bytesRead } = await fh.read(headerBytes, 0, headerBytes.length, 8);
    if (bytesRead !== headerBytes.length) throw corrupt(file, "header cut short while reading (truncated?)");
  } finally {
    await fh.close();
  }
  return parseHeader(file, headerBytes, size);
}

function parseHeader(file: string, bytes: Buffer, fileSize: number): SafetensorsHeader {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw corrupt(file, "header is not valid UTF-8 JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw corrupt(file, "header is not a JSON object");
  const dataStart = 8 + bytes.length;
  const dataLength = fileSize - dataStart;
  const tensors = new Map<string, SafetensorsEntry>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(json as Record<string, unknown>)) {
    if (name === "__metadata__") {
      if (typeof raw !== "object" || raw === null || Array.isArray(raw) || !Object.values(raw).every((v) => typeof v === "string")) {
        throw corrupt(file, "__metadata__: expected an object of strings");
      }
      metadata = raw as Record<string, string>;
      continue;
    }
    const where = `tensor ${JSON.stringify(name)}`;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw corrupt(file, `${where}: expected an object with dtype, shape, data_offsets`);
    const e = raw as Record<string, unknown>;
    const extra = Object.keys(e).filter((k) => !["dtype", "shape", "data_offsets"].includes(k));
    if (extra.length) throw corrupt(file, `${where}: unknown field ${extra.join(", ")}`);
    if (typeof e.dtype !== "string" || !Object.hasOwn(DTYPE_BYTES, e.dtype)) throw corrupt(file, `${where}: unknown dtype ${JSON.stringify(e.dtype)}`);
    const isDim = (d: unknown): d is number => typeof d === "number" && Number.isSafeInteger(d) && d >= 0;
    if (!Array.isArray(e.shape) || !e.shape.every(isDim)) throw corrupt(file, `${where}: shape must be a list of non-negative integers, got ${JSON.stringify(e.shape)}`);
    const off = e.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every(isDim)) throw corrupt(file, `${where}: data_offsets must be two non-negative integers, got ${JSON.stringify(off)}`);
    const [begin, end] = off as [number, number];
    if (begin > end) throw corrupt(file, `${where}: data_offsets [${begin}, ${end}] run backwards`);
    if (end > dataLength) throw corrupt(file, `${where}: data_offsets [${begin}, ${end}] extend past the end of the data (${dataLength} bytes; truncated?)`);
    const count = (e.shape as number[]).reduce((a, b) => a * b, 1);
    const want = count * DTYPE_BYTES[e.dtype]!;
    if (!Number.isSafeInteger(want) || want !== end - begin) {
      throw corrupt(file, `${where}: shape [${(e.shape as number[]).join(", ")}] of ${e.dtype} needs ${want} bytes, data_offsets give ${end - begin}`);
    }
    tensors.set(name, { dtype: e.dtype, shape: e.shape as number[], begin: dataStart + begin, end: dataStart + end });
  }
  // Sorted by start, each non-empty range must begin at or after the furthest end so far.
  const sorted = [...tensors].filter(([, e]) => e.end > e.begin).sort((a, b) => a[1].begin - b[1].begin);
  let last: [string, SafetensorsEntry] | undefined;
  for (const cur of sorted) {
    if (last && cur[1].begin < last[1].end) throw corrupt(file, `tensors ${JSON.stringify(last[0])} and ${JSON.stringify(cur[0])} overlap`);
    if (!last || cur[1].end > last[1].end) last = cur;
  }
  return { file, tensors, metadata };
}

/**
 * Reads the tensors `names` (default: all) of a checked file as float32 (F32, F16 and BF16 are
 * converted exactly). Other dtypes are refused naming the tensor.
 */
export async function readSafetensors(file: string, names?: Iterable<string>): Promise<Map<string, FloatTensor>> {
  const header = await readSafetensorsHeader(file);
  return readTensors(header, names ?? header.tensors.keys());
}

/** Reads tensors of an already checked header (see {@link readSafetensorsHeader}). */
export async function readTensors(header: SafetensorsHeader, names: Iterable<string>): Promise<Map<string, FloatTensor>> {
  const out = new Map<string, FloatTensor>();
  const fh = await open(header.file, "r");
  try {
    // The file may have changed since its header was checked: every read must come back whole.
    const size = (await fh.stat()).size;
    for (const name of names) {
      const e = header.tensors.get(name);
      if (!e) throw corrupt(header.file, `no tensor ${JSON.stringify(name)}`);
      if (e.dtype !== "F32" && e.dtype !== "F16" && e.dtype !== "BF16") {
        throw corrupt(header.file, `tensor ${JSON.stringify(name)}: dtype ${e.dtype} is not supported (F32, F16, BF16 are)`);
      }
      if (e.end > size) throw corrupt(header.file, `tensor ${JSON.stringify(name)}: the file is shorter than its header says (truncated?)`);
      const bytes = Buffer.alloc(e.end - e.begin);
      const { bytesRead } = await fh.read(bytes, 0, bytes.length, e.begin);
      if (bytesRead !== bytes.length) throw corrupt(header.file, `tensor ${JSON.stringify(name)}: cut short while reading (truncated?)`);
      out.set(name, { shape: e.shape, data: toFloat32(bytes, e.dtype), dtype: e.dtype });
    }
  } finally {
    await fh.close();
  }
  return out;
}

function toFloat32(bytes: Buffer, dtype: FloatDtype): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dtype === "F32") {
    const out = new Float32Array(bytes.length / 4);
    for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
    return out;
  }
  const n = bytes.length / 2;
  const bits = new Uint32Array(n);
  if (dtype === "BF16") {
    for (let i = 0; i < n; i++) bits[i] = view.getUint16(i * 2, true) << 16;
  } else {
    for (let i = 0; i < n; i++) bits[i] = halfToFloatBits(view.getUint16(i * 2, true));
  }
  return new Float32Array(bits.buffer);
}

// IEEE half → single bits, exact (subnormals normalised, Inf/NaN kept).
function halfToFloatBits(h: number): number {
  const sign = (h & 0x8000) << 16;
  let exp = (h >> 10) & 0x1f;
  let mant = h & 0x3ff;
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant << 13)) >>> 0;
  if (exp === 0) {
    if (mant === 0) return sign >>> 0;
    exp = 1;
    while ((mant & 0x400) === 0) {
      mant <<= 1;
      exp--;
    }
    mant &= 0x3ff;
  }
  return (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
}

// float32 → bfloat16 bits, round to nearest even (NaN stays NaN).
function floatToBf16(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return ((bits >>> 16) | 0x40) & 0xffff;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** A tensor to write: float32 values stored as `dtype`. */
export interface TensorToWrite {
  name: string;
  shape: readonly number[];
  data: Float32Array;
}

/** The bytes of one tensor stored as `dtype` (little-endian). */
export function tensorBytes(data: Float32Array, dtype: "F32" | "BF16"): Buffer {
  if (dtype === "F32") {
    const out = Buffer.alloc(data.length * 4);
    for (let i = 0; i < data.length; i++) out.writeFloatLE(data[i]!, i * 4);
    return out;
  }
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  const out = Buffer.alloc(data.length * 2);
  for (let i = 0; i < data.length; i++) out.writeUInt16LE(floatToBf16(bits[i]!), i * 2);
  return out;
}

/**
 * Writes `tensors` (in order) as one safetensors file of `dtype`; the header is padded with spaces
 * to a multiple of 8 bytes, as Hugging Face's writer does.
 */
export async function writeSafetensors(file: string, tensors: readonly TensorToWrite[], dtype: "F32" | "BF16", metadata: Record<string, string> = {}): Promise<void> {
  const width = dtype === "F32" ? 4 : 2;
  const header: Record<string, unknown> = Object.keys(metadata).length ? { __metadata__: metadata } : {};
  let offset = 0;
  for (const t of tensors) {
    const n = t.data.length * width;
    header[t.name] = { dtype, shape: [...t.shape], data_offsets: [offset, offset + n] };
    offset += n;
  }
  let json = Buffer.from(JSON.stringify(header), "utf8");
  const pad = (8 - (json.length % 8)) % 8;
  if (pad) json = Buffer.concat([json, Buffer.alloc(pad, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const fh = await open(file, "w");
  try {
    let at = 0;
    for (const chunk of [len, json]) {
      await fh.write(chunk, 0, chunk.length, at);
      at += chunk.length;
    }
    for (const t of tensors) {
      const b = tensorBytes(t.data, dtype);
      await fh.write(b, 0, b.length, at);
      at += b.length;
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Bytes per element of a float dtype levanter writes. */
export function dtypeWidth(dtype: "F32" | "BF16"): number {
  return dtype === "F32" ? 4 : 2;
}
