// Sampling and scoring on one row of logits (float64 JS): the draw of a token, a token's logprob, the likeliest ids.
import type { Rng } from "../rng.ts";

/** log Σ exp(row), stable (float64). */
export function logSumExp(row: ArrayLike<number>): number {
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i]! > max) max = row[i]!;
  let s = 0;
  for (let i = 0; i < row.length; i++) s += Math.exp(row[i]! - max);
  return max + Math.log(s);
}

/** Natural-log probability of `id` under the softmax of `row` (float64). */
export function logprobOf(row: ArrayLike<number>, id: number): number {
  return row[id]! - logSumExp(row);
}

/** The `k` likeliest ids of `row`, likeliest first (ties: the lower id). */
export function topIds(row: ArrayLike<number>, k: number): number[] {
  return Array.from({ length: row.length }, (_, i) => i)
    .sort((a, b) => row[b]! - row[a]! || a - b)
    .slice(0, k);
}

// The whole-vocabulary draw's weights, reused across draws (sampling runs on one thread).
let scratch = new Float64Array(0);

/**
 * Draws a token from logits: greedy at temperature 0 (ties: the lowest id), else softmax at
 * `temperature` restricted to the `topK` likeliest and then to the smallest prefix whose
 * probability reaches `topP`; one `rng.next()` per draw, in float64.
 */
export function sampleToken(row: ArrayLike<number>, temperature: number, topK: number | undefined, topP: number, rng: Rng): number {
  if (temperature === 0) {
    let best = 0;
    for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
    return best;
  }
  if (topK === undefined && topP >= 1) {
    // The whole vocabulary: the same float64 arithmetic as below, without id and weight arrays.
    let max = -Infinity;
    for (let i = 0; i < row.length; i++) if (row[i]! > max) max = row[i]!;
    if (scratch.length < row.length) scratch = new Float64Array(row.length);
    const w = scratch;
    let total = 0;
    for (let i = 0; i < row.length; i++) total += w[i] = Math.exp((row[i]! - max) / temperature);
    let u = rng.next() * total;
    for (let j = 0; j < row.length; j++) if ((u -= w[j]!) < 0) return j;
    return row.length - 1;
  }
  const ids = topIds(row, topK ?? row.length);
  let max = -Infinity;
  for (const i of ids) if (row[i]! > max) max = row[i]!;
  let weights = ids.map((i) => Math.exp((row[i]! - max) / temperature));
  let kept = ids;
  if (topP < 1) {
    const total = weights.reduce((s, w) => s + w, 0);
    let acc = 0;
    let n = 0;
    while (n < weights.length && acc < topP * total) acc += weights[n++]!;
    kept = ids.slice(0, Math.max(1, n));
    weights = weights.slice(0, kept.length);
  }
  let u = rng.next() * weights.reduce((s, w) => s + w, 0);
  for (let j = 0; j < kept.length; j++) if ((u -= weights[j]!) < 0) return kept[j]!;
  return kept[kept.length - 1]!;
}
