// On-disk format of one checkpoint directory (`<root>/step-N/`):
//
//   arrays.bin     every named array's raw little-endian bytes, one after another
//   arrays.json    manifest: { version, arrays: [{ name, dtype, shape, byteOffset, byteLength, crc32 }],
//                  state: { byteLength, crc32 } }  (state.json's checksum; absent in older checkpoints)
//   state.json     the trainer's JSON state (loader position, RNG state, optimizer scalars, …)
//   metadata.json  { step, timestamp, isTemporary }: written LAST, after the others are fsynced
//
// A directory without metadata.json is an incomplete save and is ignored by discovery. Arrays are
// stored bit for bit (NaN payloads, -0 included), so a load round-trips exactly.
import { mkdir, open, readFile, readdir, rm } from "node:fs/promises";
import { endianness } from "node:os";
import path from "node:path";
import { crc32 } from "node:zlib";
import { z } from "@marin/iris/toolkit";
import { LevanterError } from "../errors.ts";
import { log } from "../internal/log.ts";
import { formatZodIssues, syncDir, writeFileAtomic } from "@marin/iris/toolkit";

/** Name of the file whose presence marks a checkpoint directory complete. */
export const METADATA_FILE = "metadata.json";
const ARRAYS_FILE = "arrays.bin";
const MANIFEST_FILE = "arrays.json";
const STATE_FILE = "state.json";
const LITTLE_ENDIAN = endianness() === "LE";

/** Element types a checkpoint stores. */
export type ArrayDtype = "float32" | "int32";

/** A named array as saved and loaded: row-major `data` of `shape`. */
export interface StoredArray {
  dtype: ArrayDtype;
  shape: number[];
  data: Float32Array | Int32Array;
}

/** What {@link saveCheckpoint} writes. */
export interface CheckpointPayload {
  step: number;
  /** Default false (permanent). */
  isTemporary?: boolean;
  /** Parameters and optimizer slots by name; the manifest keeps their insertion order. */
  arrays: Record<string, { shape: readonly number[]; data: Float32Array | Int32Array }>;
  /**
   * Any JSON the trainer needs to resume: loader step, RNG state, optimizer scalars (e.g. Adam's
   * bias-correction accumulators), config fingerprint. Numbers must be finite (JSON has no NaN);
   * finite doubles round-trip exactly, except that -0 comes back as 0.
   */
  state?: unknown;
  /** Default `new Date()`; tests inject one. */
  timestamp?: Date;
}

const metadataSchema = z.object({
  step: z.number().int().nonnegative(),
  timestamp: z.iso.datetime(),
  isTemporary: z.boolean(),
});

/** The contents of a checkpoint's metadata.json. */
export type CheckpointMetadata = z.infer<typeof metadataSchema>;

const manifestSchema = z.object({
  version: z.literal(1),
  arrays: z.array(
    z.object({
      name: z.string(),
      dtype: z.enum(["float32", "int32"]),
      shape: z.array(z.number().int().nonnegative()),
      byteOffset: z.number().int().nonnegative(),
      byteLength: z.number().int().nonnegative(),
      crc32: z.number().int().nonnegative(),
    }),
  ),
  /** Length and CRC-32 of state.json's bytes (optional: checkpoints written before it existed lack it). */
  state: z.object({ byteLength: z.number().int().nonnegative(), crc32: z.number().int().nonnegative() }).optional(),
});

/** A checkpoint read back by {@link loadCheckpoint}. */
export interface LoadedCheckpoint {
  path: string;
  metadata: CheckpointMetadata;
  /** By name, in the order they were saved. */
  arrays: Record<string, StoredArray>;
  /** Names in the order they were saved. */
  names: string[];
  state: unknown;
}

/**
 * Writes a checkpoint into `dir` (created if needed): arrays, manifest and state, each fsynced,
 * then metadata.json last. Re-saving into an existing directory first removes its metadata.json,
 * so a crash mid-save leaves it incomplete rather than mixed.
 */
export async function saveCheckpoint(dir: string, payload: CheckpointPayload): Promise<CheckpointMetadata> {
  if (!Number.isSafeInteger(payload.step) || payload.step < 0) {
    throw new LevanterError("INVALID_CONFIG", `step: expected a non-negative integer, got ${payload.step}`);
  }
  checkJson(payload.state, "state");
  const entries = Object.entries(payload.arrays).map(([name, a]) => {
    const dtype: ArrayDtype | undefined = a.data instanceof Float32Array ? "float32" : a.data instanceof Int32Array ? "int32" : undefined;
    if (dtype === undefined) throw new LevanterError("INVALID_CONFIG", `arrays.${name}: expected a Float32Array or Int32Array`);
    const size = a.shape.reduce((p, d) => p * d, 1);
    if (!a.shape.every((d) => Number.isInteger(d) && d >= 0) || size !== a.data.length) {
      throw new LevanterError("INVALID_CONFIG", `arrays.${name}: shape [${a.shape.join(", ")}] does not match ${a.data.length} elements`);
    }
    return { name, dtype, shape: [...a.shape], bytes: littleEndianBytes(a.data) };
  });

  await mkdir(dir, { recursive: true });
  await rm(path.join(dir, METADATA_FILE), { force: true });
  await syncDir(dir);

  const manifest: z.infer<typeof manifestSchema> = { version: 1, arrays: [] };
  const fh = await open(path.join(dir, ARRAYS_FILE), "w");
  try {
    let offset = 0;
    for (const e of entries) {
      await fh.write(e.bytes, 0, e.bytes.length, offset);
      manifest.arrays.push({ name: e.name, dtype: e.dtype, shape: e.shape, byteOffset: offset, byteLength: e.bytes.length, crc32: crc32(e.bytes) });
      offset += e.bytes.length;
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  const stateBytes = Buffer.from(`${JSON.stringify(payload.state ?? null)}\n`, "utf8");
  manifest.state = { byteLength: stateBytes.length, crc32: crc32(stateBytes) };
  await writeFileAtomic(path.join(dir, STATE_FILE), stateBytes, { durable: true });
  await writeJsonDurably(path.join(dir, MANIFEST_FILE), manifest);
  const metadata: CheckpointMetadata = {
    step: payload.step,
    timestamp: (payload.timestamp ?? new Date()).toISOString(),
    isTemporary: payload.isTemporary ?? false,
  };
  await writeJsonDurably(path.join(dir, METADATA_FILE), metadata);
  return metadata;
}

/**
 * Reads the checkpoint in `dir`. Throws CHECKPOINT_NOT_FOUND if it has no metadata.json
 * (absent or incomplete) and CHECKPOINT_CORRUPT if a file is missing, malformed (the error names
 * the file and field) or fails its checksum (arrays.bin's arrays and state.json are checked
 * against the CRC-32s in arrays.json).
 */
export async function loadCheckpoint(dir: string): Promise<LoadedCheckpoint> {
  const metadata = await readCheckpointMetadata(dir);
  if (metadata === undefined) {
    throw new LevanterError("CHECKPOINT_NOT_FOUND", `${dir}: no ${METADATA_FILE} (not a checkpoint, or an incomplete save)`);
  }
  const manifestJson = await readJson(path.join(dir, MANIFEST_FILE));
  const manifest = manifestSchema.safeParse(manifestJson);
  if (!manifest.success) {
    throw new LevanterError("CHECKPOINT_CORRUPT", `${path.join(dir, MANIFEST_FILE)}: ${formatZodIssues(manifest.error)}`);
  }
  let blob: Buffer;
  try {
    blob = await readFile(path.join(dir, ARRAYS_FILE));
  } catch (cause) {
    throw new LevanterError("CHECKPOINT_CORRUPT", `${dir}: cannot read ${ARRAYS_FILE}`, { cause });
  }
  const arrays: Record<string, StoredArray> = {};
  const names: string[] = [];
  for (const [i, a] of manifest.data.arrays.entries()) {
    const where = `${path.join(dir, MANIFEST_FILE)} arrays.${i} (${a.name})`;
    const count = a.shape.reduce((p, d) => p * d, 1);
    if (a.byteLength !== count * 4) throw new LevanterError("CHECKPOINT_CORRUPT", `${where}: byteLength ${a.byteLength} does not match shape [${a.shape.join(", ")}]`);
    if (a.byteOffset + a.byteLength > blob.length) throw new LevanterError("CHECKPOINT_CORRUPT", `${where}: extends past the end of ${ARRAYS_FILE} (truncated?)`);
    const bytes = blob.subarray(a.byteOffset, a.byteOffset + a.byteLength);
    if (crc32(bytes) !== a.crc32) throw new LevanterError("CHECKPOINT_CORRUPT", `${where}: checksum mismatch`);
    const data = a.dtype === "float32" ? new Float32Array(count) : new Int32Array(count);
    const view = new Uint8Array(data.buffer);
    if (LITTLE_ENDIAN) view.set(bytes);
    else for (let k = 0; k < count; k++) view.set(Uint8Array.from(bytes.subarray(k * 4, k * 4 + 4)).reverse(), k * 4);
    if (Object.hasOwn(arrays, a.name)) throw new LevanterError("CHECKPOINT_CORRUPT", `${where}: duplicate name`);
    arrays[a.name] = { dtype: a.dtype, shape: a.shape, data };
    names.push(a.name);
  }
  const stateFile = path.join(dir, STATE_FILE);
  let stateBytes: Buffer;
  try {
    stateBytes = await readFile(stateFile);
  } catch (cause) {
    throw new LevanterError("CHECKPOINT_CORRUPT", `${stateFile}: missing from a checkpoint that has ${METADATA_FILE}`, { cause });
  }
  const expected = manifest.data.state;
  if (expected !== undefined && (stateBytes.length !== expected.byteLength || crc32(stateBytes) !== expected.crc32)) {
    throw new LevanterError(
      "CHECKPOINT_CORRUPT",
      `${stateFile}: checksum mismatch (the file was edited or damaged; ${MANIFEST_FILE} records ${expected.byteLength} bytes with crc32 ${expected.crc32})`,
    );
  }
  let state: unknown;
  try {
    state = JSON.parse(stateBytes.toString("utf8"));
  } catch (cause) {
    throw new LevanterError("CHECKPOINT_CORRUPT", `${stateFile}: not valid JSON`, { cause });
  }
  return { path: dir, metadata, arrays, names, state };
}

/**
 * The metadata of the checkpoint in `dir`, or undefined when there is none (no directory, or no
 * metadata.json: an incomplete save). A malformed metadata.json is CHECKPOINT_CORRUPT.
 */
export async function readCheckpointMetadata(dir: string): Promise<CheckpointMetadata | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(dir, METADATA_FILE), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
    throw new LevanterError("CHECKPOINT_CORRUPT", `${dir}: cannot read ${METADATA_FILE}`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new LevanterError("CHECKPOINT_CORRUPT", `${path.join(dir, METADATA_FILE)}: not valid JSON`, { cause });
  }
  const parsed = metadataSchema.safeParse(json);
  if (!parsed.success) {
    throw new LevanterError("CHECKPOINT_CORRUPT", `${path.join(dir, METADATA_FILE)}: ${formatZodIssues(parsed.error)}`);
  }
  return parsed.data;
}

/** A complete checkpoint found on disk. */
export interface FoundCheckpoint {
  path: string;
  metadata: CheckpointMetadata;
}

/** The name of the directory of step `step` (`step-42`). */
export function checkpointDirName(step: number): string {
  return `step-${step}`;
}

/**
 * What discovery does with a `step-N` directory whose metadata.json exists but cannot be read or
 * parsed: skip it with a warning naming it (`warn`, the default), skip it quietly (`skip`), or
 * throw its CHECKPOINT_CORRUPT error (`error`).
 */
export type DamagedCheckpointPolicy = "warn" | "skip" | "error";

/** Options of {@link listCheckpoints} and {@link findLatestCheckpoint}. */
export interface DiscoveryOptions {
  /** Default `warn`. */
  damaged?: DamagedCheckpointPolicy;
}

/**
 * The complete checkpoints (immediate sub-directories with a valid metadata.json) under `root`,
 * by ascending step. A missing root is empty; directories without metadata.json (incomplete
 * saves) are skipped; a damaged metadata.json is handled as `opts.damaged` says.
 */
export async function listCheckpoints(root: string, opts: DiscoveryOptions = {}): Promise<FoundCheckpoint[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const found: FoundCheckpoint[] = [];
  for (const name of names) {
    if (!/^step-\d+$/.test(name)) continue;
    const dir = path.join(root, name);
    let metadata: CheckpointMetadata | undefined;
    try {
      metadata = await readCheckpointMetadata(dir);
    } catch (err) {
      const policy = opts.damaged ?? "warn";
      if (policy === "error") throw err;
      if (policy === "warn") {
        const file = path.join(dir, METADATA_FILE);
        log("warn", `checkpoint skipped: ${file} is damaged (${(err as Error).message.replace(`${file}: `, "")})`, { checkpoint: dir });
      }
      continue;
    }
    if (metadata !== undefined) found.push({ path: dir, metadata });
  }
  return found.sort(compareCheckpoints);
}

/**
 * The checkpoint to resume from: across all `roots` (e.g. the permanent then the temporary base
 * path), the highest numeric step; ties go to the newer timestamp. Options: ignore steps above
 * `maxStep`, skip `exclude`d paths, what to do with a damaged metadata.json (`damaged`, see
 * {@link listCheckpoints}). Undefined when there is none.
 */
export async function findLatestCheckpoint(
  roots: string | readonly string[],
  opts: { maxStep?: number; exclude?: readonly string[] } & DiscoveryOptions = {},
): Promise<FoundCheckpoint | undefined> {
  const excluded = new Set((opts.exclude ?? []).map((p) => path.resolve(p)));
  let best: FoundCheckpoint | undefined;
  for (const root of typeof roots === "string" ? [roots] : roots) {
    for (const c of await listCheckpoints(root, opts.damaged ? { damaged: opts.damaged } : {})) {
      if (excluded.has(path.resolve(c.path))) continue;
      if (opts.maxStep !== undefined && c.metadata.step > opts.maxStep) continue;
      if (best === undefined || compareCheckpoints(c, best) > 0) best = c;
    }
  }
  return best;
}

function compareCheckpoints(a: FoundCheckpoint, b: FoundCheckpoint): number {
  return a.metadata.step - b.metadata.step || Date.parse(a.metadata.timestamp) - Date.parse(b.metadata.timestamp);
}

function littleEndianBytes(data: Float32Array | Int32Array): Uint8Array {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (LITTLE_ENDIAN) return bytes;
  const out = new Uint8Array(bytes.length);
  for (let k = 0; k < bytes.length; k += 4) out.set(bytes.subarray(k, k + 4).reverse(), k);
  return out;
}

async function writeJsonDurably(file: string, value: unknown): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(value)}\n`, { durable: true });
}

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (cause) {
    throw new LevanterError("CHECKPOINT_CORRUPT", `${file}: missing from a checkpoint that has ${METADATA_FILE}`, { cause });
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new LevanterError("CHECKPOINT_CORRUPT", `${file}: not valid JSON`, { cause });
  }
}

/** Rejects values JSON would silently change (NaN/Infinity → null, undefined dropped, bigint). */
function checkJson(value: unknown, where: string): void {
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new LevanterError("INVALID_CONFIG", `${where}: ${value} cannot be stored in JSON (store it in an array)`);
  } else if (typeof value === "bigint" || typeof value === "function" || typeof value === "symbol") {
    throw new LevanterError("INVALID_CONFIG", `${where}: a ${typeof value} cannot be stored in JSON`);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => checkJson(v, `${where}.${i}`));
  } else if (ArrayBuffer.isView(value)) {
    throw new LevanterError("INVALID_CONFIG", `${where}: a typed array belongs in arrays, not state`);
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) checkJson(v, `${where}.${k}`);
  }
}
