// Collectives over a formed gang: an all-gather of small values, and the exact all-reduce of
// fixed-point gradient sums (bucketed reduce-scatter + all-gather over the full mesh).
//
// The all-reduce splits the flat gradient into N contiguous shards, one per owner rank, and each
// shard into buckets. Reduce-scatter: every rank sends each bucket of shard j straight to rank j
// (a rank with one micro-batch sends its float32 gradient, one with several the float64 integers
// of their fixed-point sum). The owner quantizes and adds the N partials of a bucket as they
// arrive (exact, so arrival order is irrelevant), turns the bucket into the float32 mean and
// at once sends it to every peer (all-gather), while later buckets are still in flight. Each rank
// sends (N−1)/N of the gradient twice, as a ring does, but every shard is summed in one place in
// one exact step — which is what makes N ranks give the bits of one.
import { LevanterError } from "../errors.ts";
import { accumulateQuantized, addExact, finishMean, rawMean } from "./exactSum.ts";
import type { Gang } from "./gang.ts";
import { scratch } from "./buffers.ts";
import { ensureShared, sharedLayout } from "./sharedMemory.ts";
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

// The shards of a collective over `length` elements: the given ones checked (contiguous, in rank
// order, covering everything — every rank must pass the same), else equal parts.
function checkShards(gang: Gang, length: number, shards: readonly (readonly [number, number])[] | undefined): readonly (readonly [number, number])[] {
  if (shards === undefined) return Array.from({ length: gang.world }, (_, j) => bounds(length, gang.world, j));
  let at = 0;
  const ok = shards.length === gang.world && shards.every(([lo, hi]) => lo === at && hi >= lo && ((at = hi), true)) && at === length;
  if (!ok) throw new LevanterError("INTERNAL", `collective shards ${JSON.stringify(shards)} do not split ${length} elements over ${gang.world} ranks in order`);
  return shards;
}

/**
 * All-gather of a float32 array split into shards (`shards[r]`, contiguous in rank order): on
 * entry each rank's own shard of `data` is valid, on return all of it, on every rank. Same-host
 * peers read the shard from this rank's shared region (`shared: true`, the default when they
 * mapped it), others get it over TCP, in buckets. With `shared: false` everything goes over TCP
 * (for a gather right after another one through the region, which a slower peer may still be
 * reading). `to`: only that rank receives (a gather to one rank); the others only send.
 */
export async function allGatherShards(
  gang: Gang,
  data: Float32Array,
  shards: readonly (readonly [number, number])[],
  opts: { shared?: boolean; to?: number; bucketElements?: number } = {},
): Promise<Float32Array> {
  if (gang.world === 1) return data;
  const length = data.length;
  checkShards(gang, length, shards);
  const { rank, world } = gang;
  const tag = gang.seq++;
  const bucket = Math.max(1, opts.bucketElements ?? DEFAULT_BUCKET_ELEMENTS);
  const shared = opts.shared === false ? undefined : await ensureShared(gang, length);
  const resultAt = shared ? sharedLayout(shared.length).result : 0;
  const region = shared?.own !== undefined && shared.peers.size > 0 ? new Float32Array(shared.own, resultAt, length) : undefined;
  const receivers = [...Array(world).keys()].filter((r) => r !== rank && (opts.to === undefined || opts.to === r));
  const [lo, hi] = shards[rank]!;
  if (region && receivers.some((r) => shared!.peers.has(r))) region.set(data.subarray(lo, hi), lo);
  for (let a = lo, g = 0; a < hi; a += bucket, g++) {
    const e = Math.min(hi, a + bucket);
    for (const r of receivers) {
      if (region && shared!.peers.has(r)) gang.send(r, Kind.GATHER_SHM, tag, g);
      else gang.send(r, Kind.GATHER, tag, g, new Uint8Array(data.buffer, data.byteOffset + a * 4, (e - a) * 4));
    }
  }
  if (opts.to !== undefined && opts.to !== rank) return data;
  await Promise.all(
    [...Array(world).keys()]
      .filter((r) => r !== rank)
      .map(async (r) => {
        const [rlo, rhi] = shards[r]!;
        const theirs = shared?.peers.get(r);
        for (let a = rlo, g = 0; a < rhi; a += bucket, g++) {
          const e = Math.min(rhi, a + bucket);
          if (theirs) {
            await gang.receive(r, Kind.GATHER_SHM, tag, g);
            data.set(new Float32Array(theirs, resultAt + a * 4, e - a), a);
            continue;
          }
          const f = await gang.receive(r, Kind.GATHER, tag, g);
          if (f.payload.byteLength !== (e - a) * 4) {
            const err = new LevanterError("DISTRIBUTED", `rank ${r} sent ${f.payload.byteLength} bytes for bucket ${g} of gather ${tag}, expected ${(e - a) * 4}`);
            gang.fail(err);
            throw err;
          }
          data.set(new Float32Array(f.payload.buffer, f.payload.byteOffset, e - a), a);
        }
      }),
  );
  return data;
}

// Means of the elements [lo, hi) into `out`, segment by segment; `acc` holds elements from `base`.
function finishRange(acc: Float64Array, base: number, lo: number, hi: number, segments: readonly Segment[], count: number, out: Float32Array): void {
  for (const seg of segments) {
    const a = Math.max(lo, seg.offset);
    const b = Math.min(hi, seg.offset + seg.length);
    if (a < b) finishMean(acc, a - base, b - a, seg.s, count, out, a);
  }
}

/** The mean over `count` micro-batches of complete fixed-point sums `acc` (one process, no exchange), into `into` when given. */
export function finishExactMean(acc: Float64Array, segments: readonly Segment[], count: number, into?: Float32Array): Float32Array {
  const out = into?.length === acc.length ? into : new Float32Array(acc.length);
  finishRange(acc, 0, 0, acc.length, segments, count, out);
  return out;
}

/**
 * One rank's share of an exact all-reduce: the float32 gradient of the one micro-batch it
 * computed (`raw`: quantized where it is summed, so half the bytes of a fixed-point partial), or
 * the exact fixed-point sum of its several micro-batches (`fixed`, float64 integers on each
 * segment's grid).
 */
export type Contribution = { kind: "raw"; values: Float32Array } | { kind: "fixed"; partial: Float64Array };

// Adds `c`'s elements [lo, hi) to `acc` (which holds elements from `base`), segment by segment.
function addContribution(
  acc: Float64Array,
  base: number,
  lo: number,
  hi: number,
  c: Contribution | { kind: "raw" | "fixed"; bytes: Uint8Array },
  segments: readonly Segment[],
): void {
  if (c.kind === "fixed") {
    const src = "partial" in c ? c.partial.subarray(lo, hi) : new Float64Array(c.bytes.buffer, c.bytes.byteOffset, hi - lo);
    addExact(acc, lo - base, src);
    return;
  }
  const values = "values" in c ? c.values : new Float32Array(c.bytes.buffer, c.bytes.byteOffset, hi - lo);
  const at = "values" in c ? 0 : lo; // a wire payload starts at lo, a whole gradient at 0
  for (const seg of segments) {
    const a = Math.max(lo, seg.offset);
    const b = Math.min(hi, seg.offset + seg.length);
    if (a < b && !Number.isNaN(seg.s)) accumulateQuantized(acc, a - base, values.subarray(a - at, b - at), seg.s);
  }
}

/**
 * The mean over `count` micro-batches of every rank's {@link Contribution}, as float32 on every
 * rank — bitwise the same for any number of ranks and any split of the micro-batches (the
 * segments' scale exponents come from the global maxima). `kinds[r]` is what rank r sends
 * (default: what this rank sends). A `fixed` partial is used as scratch. The result is written
 * into `into` when given (reused from step to step), else into a new array.
 */
export async function allReduceExactMean(
  gang: Gang | undefined,
  mine: Contribution,
  segments: readonly Segment[],
  count: number,
  opts: {
    bucketElements?: number;
    kinds?: readonly ("raw" | "fixed")[];
    into?: Float32Array;
    /** Each rank's shard `[lo, hi)` of the elements, contiguous in rank order (default: equal parts). */
    shards?: readonly (readonly [number, number])[];
    /**
     * False: reduce-scatter only — just this rank's shard of the result is written (ZeRO-1). It
     * returns as soon as this rank's own shard is reduced, while peers may still be reading its
     * contribution (in its shared region): run a collective that every peer enters only after its
     * reduce before this rank writes its region again.
     */
    gather?: boolean;
  } = {},
): Promise<Float32Array> {
  const length = mine.kind === "raw" ? mine.values.length : mine.partial.length;
  if (!gang || gang.world === 1) {
    const acc = mine.kind === "fixed" ? mine.partial : new Float64Array(length);
    if (mine.kind === "raw") addContribution(acc, 0, 0, length, mine, segments);
    return finishExactMean(acc, segments, count);
  }
  const shared = await ensureShared(gang, length);
  const layout = sharedLayout(shared.length);
  const out = opts.into?.length === length ? opts.into : new Float32Array(length);
  const { rank, world } = gang;
  const shards = checkShards(gang, length, opts.shards);
  const gather = opts.gather ?? true;
  const kinds = opts.kinds ?? Array.from({ length: world }, () => mine.kind);
  const width = (r: number) => (kinds[r] === "raw" ? 4 : 8);
  const tag = gang.seq++;
  const bucket = Math.max(1, opts.bucketElements ?? DEFAULT_BUCKET_ELEMENTS);
  // Buckets of every shard, numbered globally in shard order.
  const buckets: { owner: number; lo: number; hi: number }[] = [];
  for (let j = 0; j < world; j++) {
    const [start, end] = shards[j]!;
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
  // Reduce-scatter: every bucket of every other shard goes to its owner, all at once — through
  // this rank's shared region for a same-host owner (then only a notice travels), over TCP
  // otherwise (the kernel and libuv move the bytes while this rank reduces its own shard).
  const source = mine.kind === "raw" ? mine.values : mine.partial;
  for (const [g, b] of buckets.entries()) {
    if (b.owner === rank) continue;
    if (shared.peers.has(b.owner)) {
      // Already there when the caller computed into the region itself.
      if (source.buffer !== shared.own || source.byteOffset !== layout.contribution) {
        const Ctor = mine.kind === "raw" ? Float32Array : Float64Array;
        new Ctor(shared.own!, layout.contribution + b.lo * source.BYTES_PER_ELEMENT, b.hi - b.lo).set(source.subarray(b.lo, b.hi));
      }
      gang.send(b.owner, Kind.REDUCE_SHM, tag, g);
    } else {
      gang.send(b.owner, Kind.REDUCE, tag, g, payloadOf(source, b.lo, b.hi));
    }
  }
  const shmPeers = [...shared.peers.keys()];
  const own = [...buckets.entries()].filter(([, b]) => b.owner === rank);
  // The other ranks' contributions to bucket g, as the bytes of its elements (checked in size):
  // read in place from a same-host peer's region, else the TCP payload.
  const receiveParts = (g: number, b: { lo: number; hi: number }) =>
    Promise.all(
      [...Array(world).keys()]
        .filter((r) => r !== rank)
        .map(async (r) => {
          const region = shared.peers.get(r);
          let bytes: Uint8Array;
          if (region) {
            await gang.receive(r, Kind.REDUCE_SHM, tag, g);
            bytes = new Uint8Array(region, layout.contribution + b.lo * width(r), (b.hi - b.lo) * width(r));
          } else {
            bytes = (await gang.receive(r, Kind.REDUCE, tag, g)).payload;
            check(r, g, bytes.byteLength, (b.hi - b.lo) * width(r), "reduce");
          }
          return { r, bytes };
        }),
    );
  // Every rank sending raw float32 (one micro-batch each): each bucket is quantized, summed and
  // finished in one pass (rawMean), with no float64 accumulator to fill and read back.
  const mineRaw = mine.kind === "raw" && kinds.every((k) => k === "raw") ? mine.values : undefined;
  const resultView = gather && shmPeers.length > 0 ? new Float32Array(shared.own!, layout.result, length) : undefined;
  const reduceOwnRaw = async (g: number, b: { lo: number; hi: number }, values: Float32Array) => {
    // Element i of the gradient is at sources[k].values[i - sources[k].from].
    const sources = [{ values, from: 0 }];
    for (const { bytes } of await receiveParts(g, b)) sources.push({ values: new Float32Array(bytes.buffer, bytes.byteOffset, b.hi - b.lo), from: b.lo });
    for (const seg of segments) {
      const a = Math.max(b.lo, seg.offset);
      const e = Math.min(b.hi, seg.offset + seg.length);
      if (a >= e) continue;
      const at = sources.map((x) => ({ values: x.values, offset: a - x.from }));
      rawMean(at, e - a, seg.s, count, out, a, resultView ? { values: resultView, offset: a } : undefined);
    }
  };
  // Mixed kinds (some rank sends float64 fixed-point partials): a float64 accumulator per bucket.
  const reduceOwnMixed = async (g: number, b: { lo: number; hi: number }) => {
    const acc = scratch(gang, "bucket", Float64Array, b.hi - b.lo).fill(0);
    addContribution(acc, b.lo, b.lo, b.hi, mine, segments);
    for (const { r, bytes } of await receiveParts(g, b)) addContribution(acc, b.lo, b.lo, b.hi, { kind: kinds[r]!, bytes }, segments);
    finishRange(acc, b.lo, b.lo, b.hi, segments, count, out);
    resultView?.set(out.subarray(b.lo, b.hi), b.lo);
  };
  const reduceOwn = (async () => {
    for (const [g, b] of own) {
      await (mineRaw ? reduceOwnRaw(g, b, mineRaw) : reduceOwnMixed(g, b));
      if (!gather) continue;
      for (let r = 0; r < world; r++) {
        if (r === rank) continue;
        if (shared.peers.has(r)) gang.send(r, Kind.GATHER_SHM, tag, g);
        else gang.send(r, Kind.GATHER, tag, g, payloadOf(out, b.lo, b.hi));
      }
    }
  })();
  const gatherOthers = Promise.all(
    [...buckets.entries()]
      .filter(([, b]) => gather && b.owner !== rank)
      .map(async ([g, b]) => {
        const region = shared.peers.get(b.owner);
        if (region) {
          await gang.receive(b.owner, Kind.GATHER_SHM, tag, g);
          out.set(new Float32Array(region, layout.result + b.lo * 4, b.hi - b.lo), b.lo);
          return;
        }
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
