// A Bloom filter of word n-grams (decontamination): sized for a false-positive rate, k probes by
// double hashing of two 32-bit hashes, bits in a Uint32Array. Filters are content-addressed
// files, so that the process that builds one first writes it and every other process (worker
// threads, iris tasks on the machine) reads it instead of building it again.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { writeFileAtomicSync } from "@marin/iris/toolkit";
import { fmix32, hashWord, words } from "./minhash.ts";

/** Two independent 32-bit hashes of each word `n`-gram of `text` (nothing for fewer than `n` words). */
export function ngramHashPairs(text: string, n: number): { h1: Uint32Array; h2: Uint32Array } {
  const ws = words(text);
  const count = Math.max(0, ws.length - n + 1);
  const h1 = new Uint32Array(count);
  const h2 = new Uint32Array(count);
  if (count === 0) return { h1, h2 };
  const wh = new Uint32Array(ws.length);
  for (let i = 0; i < ws.length; i++) wh[i] = hashWord(ws[i]);
  for (let i = 0; i < count; i++) {
    let a = 0x3c6ef372;
    let b = 0x510e527f;
    for (let j = 0; j < n; j++) {
      a = Math.imul(a ^ wh[i + j], 0x9e3779b1) + j;
      b = Math.imul(b + wh[i + j], 0x85ebca77) ^ (b >>> 13);
    }
    h1[i] = fmix32(a);
    h2[i] = fmix32(b ^ 0x5bd1e995) | 1;
  }
  return { h1, h2 };
}

/** A Bloom filter of `bits` bits probed `k` times per item. */
export class BloomFilter {
  readonly bits: number;
  readonly k: number;
  readonly words: Uint32Array;

  constructor(bits: number, k: number, wordsArr?: Uint32Array) {
    this.bits = bits;
    this.k = k;
    this.words = wordsArr ?? new Uint32Array(Math.ceil(bits / 32));
  }

  /** A filter sized for `items` items at false-positive rate `p`. */
  static forItems(items: number, p: number): BloomFilter {
    const n = Math.max(1, items);
    const bits = Math.max(64, Math.ceil((-n * Math.log(p)) / (Math.LN2 * Math.LN2)));
    const k = Math.max(1, Math.round((bits / n) * Math.LN2));
    return new BloomFilter(bits, k);
  }

  add(h1: number, h2: number): void {
    const m = this.bits;
    let h = h1 % m;
    const step = h2 % m || 1;
    for (let i = 0; i < this.k; i++) {
      this.words[h >>> 5] |= 1 << (h & 31);
      h += step;
      if (h >= m) h -= m;
    }
  }

  has(h1: number, h2: number): boolean {
    const m = this.bits;
    let h = h1 % m;
    const step = h2 % m || 1;
    for (let i = 0; i < this.k; i++) {
      if ((this.words[h >>> 5] & (1 << (h & 31))) === 0) return false;
      h += step;
      if (h >= m) h -= m;
    }
    return true;
  }

  /** Header (magic, bits, k) then the bit words, little-endian. */
  serialize(): Buffer {
    const head = Buffer.alloc(16);
    head.write("ZBLM", 0, "latin1");
    head.writeUInt32LE(1, 4);
    head.writeUInt32LE(this.bits >>> 0, 8);
    head.writeUInt32LE(this.k, 12);
    return Buffer.concat([head, Buffer.from(this.words.buffer, this.words.byteOffset, this.words.byteLength)]);
  }

  static deserialize(buf: Buffer, where: string): BloomFilter {
    if (buf.length < 16 || buf.toString("latin1", 0, 4) !== "ZBLM" || buf.readUInt32LE(4) !== 1) throw new Error(`${where}: not a zephyr Bloom filter file`);
    const bits = buf.readUInt32LE(8);
    const k = buf.readUInt32LE(12);
    const n = Math.ceil(bits / 32);
    if (bits === 0 || k === 0 || k > 64 || buf.length !== 16 + n * 4) throw new Error(`${where}: truncated or malformed Bloom filter (bits ${bits}, k ${k}, ${buf.length} bytes)`);
    const w = new Uint32Array(n);
    for (let i = 0; i < n; i++) w[i] = buf.readUInt32LE(16 + i * 4);
    return new BloomFilter(bits, k, w);
  }
}

/** The filter of every word `n`-gram of `texts`, sized for their distinct count at rate `p`. */
export function buildNgramFilter(texts: Iterable<string>, n: number, p: number): BloomFilter {
  // Distinct n-grams first (by their hash pair), so the filter is sized for what it holds.
  const seen = new Set<number>();
  const pairs: number[] = [];
  for (const t of texts) {
    const { h1, h2 } = ngramHashPairs(t, n);
    for (let i = 0; i < h1.length; i++) {
      const key = (h1[i] & 0x1fffff) * 4294967296 + h2[i];
      if (seen.has(key)) continue;
      seen.add(key);
      pairs.push(h1[i], h2[i]);
    }
  }
  const f = BloomFilter.forItems(pairs.length / 2, p);
  for (let i = 0; i < pairs.length; i += 2) f.add(pairs[i], pairs[i + 1]);
  return f;
}

/** Fraction of `text`'s word `n`-grams in `filter` (0 for a text with fewer than `n` words). */
export function overlapFraction(filter: BloomFilter, text: string, n: number): number {
  const { h1, h2 } = ngramHashPairs(text, n);
  if (h1.length === 0) return 0;
  let hit = 0;
  for (let i = 0; i < h1.length; i++) if (filter.has(h1[i], h2[i])) hit++;
  return hit / h1.length;
}

const loaded = new Map<string, BloomFilter>();

/**
 * The filter for `texts` (n-gram size `n`, rate `p`), built at most once per machine: its
 * content hash names a file in `dir`; a process that finds the file reads it, otherwise it
 * builds the filter and writes the file (atomically, by rename). Cached per process.
 */
export function sharedNgramFilter(
  texts: readonly string[],
  n: number,
  p: number,
  dir: string = path.join(os.tmpdir(), "zephyr-filters"),
): { filter: BloomFilter; file: string; built: boolean } {
  const h = createHash("sha256").update(`bloom/v1/${n}/${p}/${texts.length}\n`);
  for (const t of texts) h.update(`${Buffer.byteLength(t)}:`).update(t);
  const digest = h.digest("hex");
  const file = path.join(dir, `${digest}.bloom`);
  const cached = loaded.get(file);
  if (cached) return { filter: cached, file, built: false };
  if (existsSync(file)) {
    try {
      const f = BloomFilter.deserialize(readFileSync(file), file);
      loaded.set(file, f);
      return { filter: f, file, built: false };
    } catch {
      // A bad file is rebuilt and replaced below.
    }
  }
  const f = buildNgramFilter(texts, n, p);
  writeFileAtomicSync(file, f.serialize(), { durable: false, mkdir: true });
  loaded.set(file, f);
  return { filter: f, file, built: true };
}
