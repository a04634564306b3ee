// A small synthetic English-like corpus and a helper that writes it as a byte-level token cache:
// fixtures for tests and benchmarks (deterministic for a seed, no files needed).
import { byteTokenizer } from "../data/byteTokenizer.ts";
import { encodeDocument } from "../data/tokenizer.ts";
import { finalizeTokenCache, writeTokenCacheShard } from "../sharding/tokenCacheWriter.ts";
import { Rng } from "../rng.ts";

const SUBJECTS = ["the cat", "a dog", "the old man", "my sister", "the farmer", "a small bird", "the teacher", "our neighbour"];
const VERBS = ["saw", "found", "liked", "carried", "painted", "followed", "cooked", "lost"];
const OBJECTS = ["the red ball", "a wooden box", "the river", "an apple", "the long road", "a green hat", "the letter", "some bread"];
const ENDS = [" today", " again", " in the morning", " at night", "", " with care", " near the house", ""];

/** `n` documents of a few simple sentences each. */
export function syntheticDocuments(n: number, seed = 1): string[] {
  const rng = new Rng(seed);
  const pick = (xs: string[]) => xs[rng.int(xs.length)]!;
  return Array.from({ length: n }, () =>
    Array.from({ length: 3 + rng.int(4) }, () => {
      const s = `${pick(SUBJECTS)} ${pick(VERBS)} ${pick(OBJECTS)}${pick(ENDS)}.`;
      return s[0]!.toUpperCase() + s.slice(1);
    }).join(" "),
  );
}

/** Writes `docs` as a finished byte-level token cache in `dir` (one or two shards). */
export async function writeByteCache(dir: string, docs: string[]): Promise<void> {
  const half = Math.ceil(docs.length / 2);
  const opts = { tokenizer: byteTokenizer.name, vocabSize: byteTokenizer.vocabSize };
  await writeTokenCacheShard(
    dir,
    0,
    docs.slice(0, half).map((d) => encodeDocument(byteTokenizer, d)),
    opts,
  );
  if (docs.length > half)
    await writeTokenCacheShard(
      dir,
      1,
      docs.slice(half).map((d) => encodeDocument(byteTokenizer, d)),
      opts,
    );
  await finalizeTokenCache(dir);
}

/** Unigram entropy (nats per token) of a token stream: the loss a model without context reaches. */
export function unigramEntropy(tokens: ArrayLike<number>): number {
  const counts = new Map<number, number>();
  for (let i = 0; i < tokens.length; i++) counts.set(tokens[i]!, (counts.get(tokens[i]!) ?? 0) + 1);
  let h = 0;
  for (const c of counts.values()) {
    const p = c / tokens.length;
    h -= p * Math.log(p);
  }
  return h;
}
