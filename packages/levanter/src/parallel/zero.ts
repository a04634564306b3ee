// ZeRO-1 ownership for data-parallel training: each rank owns whole tensors — a contiguous run of
// the flat parameter layout, about 1/N of its elements — and alone keeps their Adam moments and
// updates them. Whole tensors, so that a tensor's update and its gradient-norm term are computed
// by one kernel call on the whole tensor on any number of ranks, as on one: the bits stay N-independent.

/** Which tensors and elements each rank owns. */
export interface ShardPlan {
  /** Per rank: the tensor indices `[first, end)` it owns (possibly empty). */
  tensors: [number, number][];
  /** Per rank: the element range `[lo, hi)` of those tensors in the flat layout. */
  ranges: [number, number][];
}

/**
 * Splits tensors of `sizes` elements (in layout order) into `world` contiguous runs, each boundary
 * at the tensor boundary nearest an equal split of the elements.
 */
export function tensorShards(sizes: readonly number[], world: number): ShardPlan {
  if (!Number.isInteger(world) || world < 1) throw new RangeError(`world: expected a positive integer, got ${world}`);
  const prefix = [0];
  for (const n of sizes) prefix.push(prefix.at(-1)! + n);
  const total = prefix.at(-1)!;
  const cuts = [0];
  for (let j = 1; j < world; j++) {
    const target = (j * total) / world;
    let best = cuts.at(-1)!;
    for (let k = best; k <= sizes.length; k++) if (Math.abs(prefix[k]! - target) < Math.abs(prefix[best]! - target)) best = k;
    cuts.push(best);
  }
  cuts.push(sizes.length);
  const tensors = Array.from({ length: world }, (_, j) => [cuts[j]!, cuts[j + 1]!] as [number, number]);
  return { tensors, ranges: tensors.map(([a, b]) => [prefix[a]!, prefix[b]!] as [number, number]) };
}
