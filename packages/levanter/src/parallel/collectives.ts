// Collectives over a formed gang: an all-gather of small values, and the exact all-reduce of
// fixed-point gradient sums (bucketed reduce-scatter + all-gather over the full mesh).
//
// The all-reduce splits the flat gradient into N contiguous shards, one per owner rank, and each
// shard into buckets. Reduce-scatter: every rank sends each bucket of shard j straight to rank j
// (float64 integers of the fixed-point grid, exact). The owner adds the N partials of a bucket as
// they arrive (exact, so arrival order is irrelevant), turns the bucket into the float32 mean and
// at once sends it to every peer (all-gather), while later buckets are still in flight. Each rank
// sends (N−1)/N of the gradient twice, as a ring does, but every shard is summed in one place in
// one exact step — which is what makes N ranks give the bits of one.
import { LevanterError } from "../errors.ts";
import { finishMean } from "./exactSum.ts";
import type { Gang } from "./gang.ts";
import { Kind } from "./wire.ts";

/** A tensor's place in the flat gradient and its fixed-point scale exponent. */
export interface Segment {
  offset: number;
  length: number;
  /** Scale exponent `s` (see exactSum.ts); NaN for a tensor with a non-finite value. */
  s: number;
}

/** Default bucket size of the all-reduce: 1 Mi elements (8 MiB of float64 partials). */
export const DEFAULT_BUCKET_ELEMENTS = 2 ** 20;

/** Every rank contributes `bytes`; every rank gets all contributions, by rank. */
export async function allGatherBytes(gang: Gang, bytes: Uint8Array): Promise<Uint8Array[]> {
  const tag = gang.seq++;
  for (let r = 0; r < gang.world; r++) if (r !== gang.rank) gang.send(r, Kind.GATHER, tag, 0, bytes);
  const out: Uint8Array[] = [];
  await Promise.all(
    [...Array(gang.world).keys()].map(async (r) => {
      out[r] = r === gang.rank ? bytes : (await gang.receive(r, Kind.GATHER, tag, 0)).payload;
    }),
  );
  return out;
}

/** JSON all-gather: every rank contributes `value`; every rank gets all values, by rank. */
export async function allGatherJson<T>(gang: Gang, value: T): Promise<T[]> {
  const all = await allGatherBytes(gang, Buffer.from(JSON.stringify(value)));
  return all.map((b, r) => {
    try {
      return JSON.parse(Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("utf8")) as T;
    } catch (e) {
      const err = new LevanterError("DISTRIBUTED", `rank ${r} sent an all-gather value that is not JSON`, { cause: e });
      gang.fail(err);
      throw err;
    }
  });
}

/** Element-wise all-gather of float64 arrays of equal length, by rank. */
export async function allGatherFloat64(gang: Gang, values: Float64Array): Promise<Float64Array[]> {
  const all = await allGatherBytes(gang, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
  return all.map((b, r) => {
    if (b.byteLength !== values.byteLength) {
      const err = new LevanterError("DISTRIBUTED", `rank ${r} sent ${b.byteLength} bytes to an all-gather of ${values.byteLength}`);
      gang.fail(err);
      throw err;
    }
    return r === gang.rank ? values : new Float64Array(b.buffer, b.byteOffset, values.length);
  });
}

function bounds(length: number, parts: number, i: number): [number, number] {
  return [Math.floor((i * length) / parts), Math.floor(((i + 1) * length) / parts)];
}

// Means of the elements [lo, hi) of `acc` into `out`, segment by segment.
function finishRange(acc: Float64Array, lo: number, hi: number, segments: readonly Segment[], count: number, out: Float32Array): void {
  for (const seg of segments) {
    const a = Math.max(lo, seg.offset);
    const b = Math.min(hi, seg.offset + seg.length);
    if (a < b) finishMean(acc, a, b - a, seg.s, count, out, a);
  }
}

/** The mean over `count` micro-batches of complete fixed-point sums `acc` (one process, no exchange). */
export function finishExactMean(acc: Float64Array, segments: readonly Segment[], count: number): Float32Array {
  const out = new Float32Array(acc.length);
  finishRange(acc, 0, acc.length, segments, count, out);
  return out;
}

/**
 * The mean over `count` micro-batches of the fixed-point partial sums every rank holds in
 * `partial` (integers on each segment's grid), as float32 on every rank — bitwise the same for
 * any number of ranks and any split of the micro-batches. `partial` is used as scratch.
 */
export async function allReduceExactMean(
  gang: Gang | undefined,
  partial: Float64Array,
  segments: readonly Segment[],
  count: number,
  opts: { bucketElements?: number } = {},
): Promise<Float32Array> {
  if (!gang || gang.world === 1) return finishExactMean(partial, segments, count);
  const out = new Float32Array(partial.length);
  const { rank, world } = gang;
  const tag = gang.seq++;
  const bucket = Math.max(1, opts.bucketElements ?? DEFAULT_BUCKET_ELEMENTS);
  // Buckets of every shard, numbered globally in shard order.
  const buckets: { owner: number; lo: number; hi: number }[] = [];
  for (let j = 0; j < world; j++) {
    const [start, end] = bounds(partial.length, world, j);
    for (let lo = start; lo < end; lo += bucket) buckets.push({ owner: j, lo, hi: Math.min(end, lo + bucket) });
  }
  const payloadOf = (a: Float64Array | Float32Array, lo: number, hi: number) => new Uint8Array(a.buffer, a.byteOffset + lo * a.BYTES_PER_ELEMENT, (hi - lo) * a.BYTES_PER_ELEMENT);
  const check = (r: number, g: number, bytes: number, expected: number, what: string) => {
    if (bytes !== expected) {
      const err = new LevanterError("DISTRIBUTED", `rank ${r} sent ${bytes} bytes for ${what} bucket ${g} of all-reduce ${tag}, expected ${expected}`);
      gang.fail(err);
      throw err;
    }
  };
  // Reduce-scatter: send every bucket of every other shard to its owner, all at once (the kernel
  // and libuv move the bytes while this rank reduces its own shard).
  for (const [g, b] of buckets.entries()) if (b.owner !== rank) gang.send(b.owner, Kind.REDUCE, tag, g, payloadOf(partial, b.lo, b.hi));
  const own = [...buckets.entries()].filter(([, b]) => b.owner === rank);
  const reduceOwn = (async () => {
    for (const [g, b] of own) {
      const parts = await Promise.all([...Array(world).keys()].filter((r) => r !== rank).map(async (r) => [r, await gang.receive(r, Kind.REDUCE, tag, g)] as const));
      for (const [r, f] of parts) {
        check(r, g, f.payload.byteLength, (b.hi - b.lo) * 8, "reduce");
        const values = new Float64Array(f.payload.buffer, f.payload.byteOffset, b.hi - b.lo);
        for (let i = 0; i < values.length; i++) partial[b.lo + i]! += values[i]!;
      }
      finishRange(partial, b.lo, b.hi, segments, count, out);
      for (let r = 0; r < world; r++) if (r !== rank) gang.send(r, Kind.GATHER, tag, g, payloadOf(out, b.lo, b.hi));
    }
  })();
  const gatherOthers = Promise.all(
    [...buckets.entries()]
      .filter(([, b]) => b.owner !== rank)
      .map(async ([g, b]) => {
        const f = await gang.receive(b.owner, Kind.GATHER, tag, g);
        check(b.owner, g, f.payload.byteLength, (b.hi - b.lo) * 4, "gather");
        out.set(new Float32Array(f.payload.buffer, f.payload.byteOffset, b.hi - b.lo), b.lo);
      }),
  );
  await Promise.all([reduceOwn, gatherOthers]);
  return out;
}

/** Element-wise maximum over ranks, NaN-propagating (exact: any order gives the same). */
export async function allReduceMax(gang: Gang | undefined, values: Float64Array): Promise<Float64Array> {
  if (!gang || gang.world === 1) return values;
  const all = await allGatherFloat64(gang, values);
  const out = new Float64Array(values.length);
  for (let i = 0; i < out.length; i++) {
    let m = 0;
    for (const a of all) m = Number.isNaN(m) || Number.isNaN(a[i]!) ? Number.NaN : Math.max(m, a[i]!);
    out[i] = m;
  }
  return out;
}
