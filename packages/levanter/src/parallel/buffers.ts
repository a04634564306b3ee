// The buffers the data-parallel code hands out: scratch arrays kept from step to step, and the
// buffers a rank computes its contribution to the all-reduce into — in its shared-memory region
// when same-host peers read it there (sharedMemory.ts), else on the heap. Callers (the trainer)
// never see where a buffer lives.
import type { Gang } from "./gang.ts";
import { ensureShared, sharedLayout } from "./sharedMemory.ts";

const scratches = new WeakMap<object, Map<string, Float32Array | Float64Array>>();

/**
 * A buffer of `n` elements that `owner` (a gang) keeps under `key` and reuses from step to step:
 * large fresh arrays cost a page fault per 4 KiB on first touch, every step. Its contents are
 * whatever the last user left.
 */
export function scratch<T extends Float32Array | Float64Array>(owner: object, key: string, Ctor: new (n: number) => T, n: number): T {
  let byKey = scratches.get(owner);
  if (!byKey) scratches.set(owner, (byKey = new Map()));
  const have = byKey.get(key);
  if (have instanceof Ctor && have.length >= n) return have.subarray(0, n) as T;
  const fresh = new Ctor(n);
  byKey.set(key, fresh);
  return fresh;
}

/**
 * `count` float32 buffers of `length` elements for this rank's raw contributions (one per
 * micro-batch) to the next `allReduceExactMean` (collectives.ts) over `gang`. With one, it is this rank's
 * shared-memory region when it has one (same-host peers then read it in place, with no copy),
 * else a heap buffer kept from step to step. A collective: every rank calls it at the same point,
 * whatever its count (it negotiates the shared regions on first use).
 *
 * A buffer in the region may still be read by a slower peer after this rank's reduce returns (see
 * `allReduceExactMean`'s `gather: false`): run a collective that every peer enters only after its
 * reduce before asking for the buffers again.
 */
export async function contributionBuffers(gang: Gang, length: number, count: number): Promise<Float32Array[]> {
  const shared = await ensureShared(gang, length);
  if (count === 1 && shared.own) return [new Float32Array(shared.own, sharedLayout(shared.length).contribution, length)];
  return [...Array(count).keys()].map((k) => scratch(gang, `flat${k}`, Float32Array, length));
}
