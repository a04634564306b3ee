// The per-record and per-bucket pieces of fuzzy deduplication (MinHash + LSH): what `dedupFuzzy`
// runs inside its stages. No zephyr imports.
import { bandKeys, jaccard, lshParams, makePermutations, minhash, shingleHashesInto, shingleSet } from "./minhash.ts";
import type { Permutations } from "./minhash.ts";

/** Resolved parameters of a fuzzy dedup. */
export interface FuzzyParams {
  readonly threshold: number;
  readonly ngram: number;
  readonly permutations: number;
  readonly seed: number;
  readonly verify: boolean;
  readonly bands: number;
  readonly rows: number;
}

/** A band message: [band key, record id] or, to verify, [band key, record id, text]. */
export type BandEntry = [key: number, id: number] | [key: number, id: number, text: string];

/** Per-process cache of the permutations (the same parameters give the same functions). */
const permCache = new Map<string, Permutations>();

function permsFor(p: FuzzyParams): Permutations {
  const k = `${p.permutations}/${p.seed}`;
  let perms = permCache.get(k);
  if (!perms) {
    perms = makePermutations(p.permutations, p.seed);
    permCache.set(k, perms);
  }
  return perms;
}

export function fuzzyParams(o: { threshold?: number; ngram?: number; permutations?: number; seed?: number; verify?: boolean; bands?: number; rows?: number }): FuzzyParams {
  const threshold = o.threshold ?? 0.8;
  const ngram = o.ngram ?? 5;
  const permutations = o.permutations ?? 128;
  const seed = o.seed ?? 1;
  const { bands, rows } = o.bands !== undefined && o.rows !== undefined ? { bands: o.bands, rows: o.rows } : lshParams(threshold, permutations);
  return { threshold, ngram, permutations, seed, verify: o.verify ?? false, bands, rows };
}

/**
 * One window's band keys for one key group: parallel arrays of band keys and record ids (and,
 * to verify, texts). A band key's group is `key mod groups`, so all records of a bucket meet in
 * one group; grouping thousands of keys per shuffled record keeps the shuffle to a few large
 * typed arrays instead of one small record per band.
 */
export type BandBatch = [group: number, keys: Float64Array, ids: Float64Array, texts: string[] | null];

/** The band batches of a window of `[id, text]` (a text without words has no bands). */
export function bandBatches(window: readonly (readonly [number, string])[], p: FuzzyParams, groups: number): BandBatch[] {
  const perms = permsFor(p);
  const sig = new Int32Array(p.permutations);
  const keys = new Array<number>(p.bands);
  const gk: number[][] = Array.from({ length: groups }, () => []);
  const gi: number[][] = Array.from({ length: groups }, () => []);
  const gt: string[][] | null = p.verify ? Array.from({ length: groups }, () => []) : null;
  for (const [id, text] of window) {
    const { hashes, count } = shingleHashesInto(text, p.ngram);
    if (count === 0) continue;
    minhash(hashes, perms, sig, count);
    bandKeys(sig, p.bands, p.rows, keys);
    for (const k of keys) {
      const g = k % groups;
      gk[g].push(k);
      gi[g].push(id);
      if (gt) gt[g].push(text);
    }
  }
  const out: BandBatch[] = [];
  for (let g = 0; g < groups; g++) if (gk[g].length > 0) out.push([g, Float64Array.from(gk[g]), Float64Array.from(gi[g]), gt ? gt[g] : null]);
  return out;
}

/**
 * A Float64Array as it may come back from a serialising shuffle (msgpack hands typed arrays back
 * as their bytes, a Buffer): copied into an aligned array of this machine's byte order.
 */
function asFloat64(v: Float64Array | Uint8Array): Float64Array {
  return v instanceof Float64Array ? v : new Float64Array(new Uint8Array(v).buffer);
}

/** The edges of one key group: its buckets (equal band keys) of two or more records, through {@link bucketEdges}. */
export function groupEdges(batches: readonly BandBatch[], p: FuzzyParams, counter: (name: string, n?: number) => void): [number, number][] {
  const buckets = new Map<number, number | BandEntry[]>();
  const edges: [number, number][] = [];
  const multi: BandEntry[][] = [];
  for (const [, rawKeys, rawIds, texts] of batches) {
    const keys = asFloat64(rawKeys);
    const ids = asFloat64(rawIds);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      const entry: BandEntry = texts ? [k, ids[i], texts[i]] : [k, ids[i]];
      const cur = buckets.get(k);
      if (cur === undefined) buckets.set(k, texts ? [entry] : ids[i]);
      else if (typeof cur === "number") {
        const list: BandEntry[] = [[k, cur], entry];
        buckets.set(k, list);
        multi.push(list);
      } else {
        if (cur.length === 1) multi.push(cur);
        cur.push(entry);
      }
    }
  }
  for (const members of multi) for (const e of bucketEdges(members, p, counter)) edges.push(e);
  return edges;
}

/**
 * The edges of one LSH bucket. Unverified: a star from the bucket's smallest id to every other
 * member. Verified: members with the same words join the first of them; the distinct ones are
 * compared pairwise, and a pair is an edge when its exact Jaccard similarity reaches the threshold.
 */
export function bucketEdges(members: BandEntry[], p: FuzzyParams, counter: (name: string, n?: number) => void): [number, number][] {
  if (members.length < 2) return [];
  const sorted = [...members].sort((a, b) => a[1] - b[1]);
  const edges: [number, number][] = [];
  if (!p.verify) {
    for (let i = 1; i < sorted.length; i++) if (sorted[i][1] !== sorted[0][1]) edges.push([sorted[0][1], sorted[i][1]]);
    counter("dedupFuzzy.candidatePairs", edges.length);
    return edges;
  }
  const reps: { id: number; set: Set<string> }[] = [];
  const byText = new Map<string, number>();
  for (const m of sorted) {
    const norm = shingleKey(m[2] ?? "");
    const rep = byText.get(norm);
    if (rep !== undefined) {
      if (rep !== m[1]) edges.push([rep, m[1]]);
      continue;
    }
    byText.set(norm, m[1]);
    reps.push({ id: m[1], set: shingleSet(m[2] ?? "", p.ngram) });
  }
  let compared = 0;
  let rejected = 0;
  for (let i = 0; i < reps.length; i++) {
    for (let j = i + 1; j < reps.length; j++) {
      compared++;
      if (jaccard(reps[i].set, reps[j].set) >= p.threshold) edges.push([reps[i].id, reps[j].id]);
      else rejected++;
    }
  }
  counter("dedupFuzzy.candidatePairs", compared + (sorted.length - reps.length));
  counter("dedupFuzzy.rejectedPairs", rejected);
  return edges;
}

function shingleKey(text: string): string {
  return text.toLowerCase().split(/\s+/).filter(Boolean).join(" ");
}
