// The per-record and per-bucket pieces of fuzzy deduplication (MinHash + LSH): what `dedupFuzzy`
// runs inside its stages. No zephyr imports.
import { bandKeys, jaccard, lshParams, makePermutations, minhash, shingleHashes, shingleSet } from "./minhash.ts";
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

/** The band entries of one record (none for a text without words). */
export function bandEntries(id: number, text: string, p: FuzzyParams, sig: Uint32Array = new Uint32Array(p.permutations)): BandEntry[] {
  const sh = shingleHashes(text, p.ngram);
  if (sh.length === 0) return [];
  minhash(sh, permsFor(p), sig);
  const keys = bandKeys(sig, p.bands, p.rows);
  return p.verify ? keys.map((k) => [k, id, text] as BandEntry) : keys.map((k) => [k, id] as BandEntry);
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
