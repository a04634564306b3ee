// Local files: glob expansion and compression chosen by file extension.
import { createReadStream, createWriteStream, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { Readable, Transform, Writable } from "node:stream";
import { createGunzip, createGzip, constants as zlibConstants } from "node:zlib";
import type { ZlibOptions } from "node:zlib";
import { ZephyrError } from "../errors.ts";

/** How a file's bytes are compressed, decided by its extension (`.gz`, `.zst`). */
export type Compression = "none" | "gzip" | "zstd";

/** Options of {@link expandGlob}. */
export interface ExpandGlobOptions {
  /** Resolve relative patterns against this directory (default: `process.cwd()`). */
  cwd?: string;
  /** Return `[]` instead of throwing when nothing matches (default: false). */
  allowEmpty?: boolean;
}

/**
 * Expands one or more glob patterns (braces included: `data/{a,b}/*.jsonl.gz`) into the sorted,
 * de-duplicated absolute paths of the matching files. A pattern naming an existing file is taken
 * literally; glob syntax counts only below the pattern's literal directory prefix.
 *
 * Throws `ZephyrError("INVALID_ARGUMENT")` when nothing matches, unless `allowEmpty` is set, because
 * an empty input almost always means a typo, and silently producing empty outputs hides it.
 */
export async function expandGlob(patterns: string | readonly string[], options: ExpandGlobOptions = {}): Promise<string[]> {
  const list = typeof patterns === "string" ? [patterns] : [...patterns];
  if (list.length === 0) throw new ZephyrError("INVALID_ARGUMENT", "expandGlob: expected at least one pattern");
  const cwd = path.resolve(options.cwd ?? process.cwd());
  // Loaded here, not with the module: worker threads import this module but never list files.
  const { glob, isDynamicPattern } = await import("tinyglobby");
  const found = new Set<string>();
  for (const pattern of list) {
    const absolute = path.resolve(cwd, pattern);
    // An existing file is taken literally, so names like "part[1].jsonl" need no escaping.
    if (isFile(absolute)) {
      found.add(absolute);
      continue;
    }
    // Glob from the pattern's static directory prefix, so that glob characters in a directory
    // name above the wildcard part (a temp dir "run(1)/", say) are not read as syntax.
    const { base, rest } = splitStaticPrefix(absolute, isDynamicPattern);
    if (rest === "") continue;
    try {
      for (const p of await glob(rest, { cwd: base, absolute: true, onlyFiles: true, expandDirectories: false, dot: false })) found.add(path.resolve(p));
    } catch (cause) {
      throw new ZephyrError("IO", `expandGlob: listing ${JSON.stringify(pattern)} under ${base} failed`, { cause });
    }
  }
  const paths = [...found].sort(comparePaths);
  if (paths.length === 0 && !options.allowEmpty) {
    throw new ZephyrError(
      "INVALID_ARGUMENT",
      `expandGlob: no files match ${list.map((p) => JSON.stringify(p)).join(", ")} (relative to ${cwd}); pass allowEmpty to accept an empty input`,
    );
  }
  return paths;
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Splits an absolute pattern into its longest leading run of literal directories (segments without
 * glob syntax, or existing directories whose names merely contain glob characters) and the rest.
 */
function splitStaticPrefix(absolute: string, isDynamicPattern: (segment: string) => boolean): { base: string; rest: string } {
  const parts = absolute.split(path.sep);
  let base = parts[0] === "" ? path.sep : parts[0];
  let i = 1;
  for (; i < parts.length - 1; i++) {
    const next = path.join(base, parts[i]);
    if (isDynamicPattern(parts[i]) && !isDirectory(next)) break;
    base = next;
  }
  const rest = parts.slice(i);
  if (rest.length === 1 && !isDynamicPattern(rest[0])) return { base, rest: "" };
  return { base, rest: rest.join("/") };
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Code-unit order, independent of the locale, so every machine sees the same shard order. */
function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The compression a path implies: `.gz` → gzip, `.zst`/`.zstd` → zstd, anything else → none. */
export function compressionOf(filePath: string): Compression {
  const lower = filePath.toLowerCase();
  if (lower.endsWith(".gz")) return "gzip";
  if (lower.endsWith(".zst") || lower.endsWith(".zstd")) return "zstd";
  return "none";
}

/** The path with its compression suffix removed (`a.jsonl.gz` → `a.jsonl`), to find the inner format. */
export function stripCompressionSuffix(filePath: string): string {
  return compressionOf(filePath) === "none" ? filePath : filePath.slice(0, filePath.lastIndexOf("."));
}

/** The parts of zstd-napi zephyr uses. */
export interface ZstdModule {
  CompressStream: new (params?: { compressionLevel?: number }) => Transform;
  DecompressStream: new () => Transform;
  compress(data: Uint8Array, params?: { compressionLevel?: number }): Buffer;
  decompress(data: Uint8Array): Buffer;
}

let zstdModule: ZstdModule | undefined;

/**
 * Loads zstd-napi on first use, so that a checkout whose native binding was not built still runs
 * every pipeline that never touches a `.zst` file, and the one that does gets a clear message.
 */
export function zstd(): ZstdModule {
  if (zstdModule) return zstdModule;
  try {
    zstdModule = createRequire(import.meta.url)("zstd-napi") as ZstdModule;
  } catch (cause) {
    throw new ZephyrError(
      "MISSING_DEPENDENCY",
      "zstd-napi could not be loaded (needed for .zst files); its native binding must be built: " +
        "list zstd-napi under onlyBuiltDependencies in pnpm-workspace.yaml and run `pnpm rebuild zstd-napi`",
      { cause },
    );
  }
  return zstdModule;
}

/**
 * Chunk size for reads and inflation. Measured on 1M-record JSONL.gz: 64 KiB beats 1 MiB (the
 * decoded text of a chunk stays in cache while it is split and parsed).
 */
const CHUNK_BYTES = 1 << 16;
/** Compressed bytes read ahead, and decompressed bytes buffered ahead of the parser. */
const READ_AHEAD_BYTES = 1 << 18;
const INFLATE_AHEAD_BYTES = 1 << 20;
/**
 * Uncompressed bytes a writer may queue ahead of the gzip codec (on libuv's thread pool) before it
 * waits: with Node's 16 KiB default, every batch of records waited for its own compression.
 */
const DEFLATE_AHEAD_BYTES = 4 << 20;
// zlib streams pass stream options on to Transform; @types/node's ZlibOptions omits them.
const INFLATE_OPTIONS: ZlibOptions & { highWaterMark: number } = { chunkSize: CHUNK_BYTES, highWaterMark: INFLATE_AHEAD_BYTES };

/**
 * Opens a file for reading and decompresses it according to its extension. The returned stream
 * yields Buffers of decompressed bytes; errors of the file or the codec surface on it.
 */
export function openDecompressed(filePath: string, compression: Compression = compressionOf(filePath)): Readable {
  if (compression === "none") return createReadStream(filePath, { highWaterMark: CHUNK_BYTES });
  const file = createReadStream(filePath, { highWaterMark: READ_AHEAD_BYTES });
  // Chunks stay small for the parser, but several are inflated ahead so the codec (on libuv's
  // thread pool for gzip) keeps working while the main thread parses.
  const codec = compression === "gzip" ? createGunzip(INFLATE_OPTIONS) : new (zstd().DecompressStream)();
  file.on("error", (err) => codec.destroy(err));
  codec.on("close", () => file.destroy());
  return file.pipe(codec);
}

/** Options of {@link openCompressed}. */
export interface CompressOptions {
  /** Override the compression implied by the extension. */
  compression?: Compression;
  /**
   * Codec level. Defaults favour throughput: gzip 1 (about 3× faster than zlib's default 6 for
   * ~15 % larger files of text) and zstd 2.
   */
  level?: number;
}

/** A compressed output file: write plain bytes to `input`; `file` is the on-disk stream. */
export interface CompressedOutput {
  /** Where to write uncompressed bytes (the codec, or the file itself when uncompressed). */
  readonly input: Writable;
  /** The file stream; `bytesWritten` is the on-disk size once it has closed. */
  readonly file: ReturnType<typeof createWriteStream>;
}

/** Default gzip level: tuned for speed (see {@link CompressOptions.level}). */
export const DEFAULT_GZIP_LEVEL = 1;
/** Default zstd level: 2, as upstream (zstd compresses on the calling thread, so speed matters). */
export const DEFAULT_ZSTD_LEVEL = 2;

/**
 * Creates (truncates) `filePath` and returns a writable that compresses according to the
 * extension. The caller ends `input` and waits for `file` to close.
 */
export function openCompressed(filePath: string, options: CompressOptions = {}): CompressedOutput {
  const compression = options.compression ?? compressionOf(filePath);
  const file = createWriteStream(filePath, { highWaterMark: CHUNK_BYTES });
  if (compression === "none") return { input: file, file };
  let codec: Transform;
  if (compression === "gzip") {
    const level = options.level ?? DEFAULT_GZIP_LEVEL;
    if (!Number.isInteger(level) || level < 0 || level > 9) {
      file.destroy();
      throw new ZephyrError("INVALID_ARGUMENT", `gzip level: expected an integer in 0..9, got ${level}`);
    }
    codec = createGzip({ level, chunkSize: CHUNK_BYTES, memLevel: zlibConstants.Z_DEFAULT_MEMLEVEL, writableHighWaterMark: DEFLATE_AHEAD_BYTES } as ZlibOptions);
  } else {
    const level = options.level ?? DEFAULT_ZSTD_LEVEL;
    if (!Number.isInteger(level) || level < -7 || level > 22) {
      file.destroy();
      throw new ZephyrError("INVALID_ARGUMENT", `zstd level: expected an integer in -7..22, got ${level}`);
    }
    codec = new (zstd().CompressStream)({ compressionLevel: level });
  }
  codec.on("error", (err) => file.destroy(err));
  codec.pipe(file);
  return { input: codec, file };
}
