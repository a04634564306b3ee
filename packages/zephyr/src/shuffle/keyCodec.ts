// Keys of a shuffle: a canonical msgpack encoding (equal keys ⇔ equal bytes) and its XXH64 hash,
// which routes a key to a partition identically on every machine and Node version.
import { pack, unpack } from "msgpackr";
import xxhash from "xxhash-wasm";
import type { XXHashAPI } from "xxhash-wasm";

/**
 * Rewrites a key so that values equal as data encode to equal bytes: plain objects get their
 * keys sorted (msgpack keeps insertion order, so `{a,b}` and `{b,a}` would differ), arrays are
 * canonicalised element-wise, and -0 becomes 0 (JavaScript and `Map` treat them as one key).
 * Other values (strings, numbers, booleans, null, bigint, Uint8Array, Date) are kept as they are.
 */
export function canonicalKey(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonicalKey);
  if (value === 0) return 0;
  if (value !== null && typeof value === "object") {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto === Object.prototype || proto === null) {
      const obj = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(obj).sort()) {
        if (obj[k] !== undefined) out[k] = canonicalKey(obj[k]);
      }
      return out;
    }
  }
  return value;
}

/** The canonical bytes of a key (msgpack, plain `pack`: no record extension, readable anywhere). */
export function encodeKey(key: unknown): Uint8Array {
  return pack(canonicalKey(key));
}

/** Decodes bytes made by {@link encodeKey} back into the (canonical) key. */
export function decodeKey(bytes: Uint8Array): unknown {
  return unpack(bytes);
}

/** Hashing of encoded keys; obtained once per process with {@link loadKeyHasher}. */
export interface KeyHasher {
  /** XXH64 (seed 0) of the bytes. */
  hash(bytes: Uint8Array): bigint;
  /**
   * The top 53 bits of XXH64, as an exact integer number: the shuffle's sort hash. Keeping it a
   * number makes routing and comparisons cheap (one bigint shift per record, then plain math).
   */
  hash53(bytes: Uint8Array): number;
  /** The partition in `[0, numPartitions)` that owns an encoded key: `hash53 mod N`. */
  partitionOf(bytes: Uint8Array, numPartitions: number): number;
}

let hasher: Promise<KeyHasher> | undefined;

/** Loads the XXH64 WebAssembly module (once per process) and returns the key hasher. */
export function loadKeyHasher(): Promise<KeyHasher> {
  hasher ??= xxhash().then((api: XXHashAPI) => ({
    hash: (bytes) => api.h64Raw(bytes),
    hash53: (bytes) => Number(api.h64Raw(bytes) >> 11n),
    partitionOf: (bytes, n) => Number(api.h64Raw(bytes) >> 11n) % n,
  }));
  return hasher;
}
