// The native elementwise binary kernels (broadcasting, odd and empty shapes, several chunks), Sum
// and UnsortedSegmentSum against the pure-JS cpu backend, value and gradient, and their bits for 1, 2
// and 3 threads.
import { tf } from "../../tf.ts";
import { describe, expect, it } from "vitest";
import { selectBackend } from "../../backend.ts";
import { loadNativeAddon } from "./addon.ts";
import { sameBits, quietSuiteBackToWasm } from "./testing.ts";
import { broadcastPlan } from "./binary.ts";

const load = loadNativeAddon();

const PAIRS: [number[], number[]][] = [
  [
    [5, 7],
    [5, 7],
  ],
  [[5, 7], [7]],
  [[7], [5, 7]],
  [
    [5, 1],
    [1, 7],
  ],
  [
    [3, 1, 4],
    [2, 1],
  ],
  [[], [3, 4]],
  [[3, 4], [1]],
  [[2, 3, 4, 5, 6], [6]],
  [
    [2, 1, 3, 1, 4, 1],
    [1, 5, 1, 2, 1, 3],
  ], // 6 dimensions after collapsing: the wasm kernel
  [[0, 3], [3]],
  [[130, 257], [257]],
  [
    [16, 1, 128],
    [16, 64, 1],
  ],
];

const seeded = (shape: number[], seed: number) => tf.randomNormal(shape, 0, 1, "float32", seed);

function run(): Float32Array[] {
  return PAIRS.flatMap(([sa, sb], i) =>
    tf.tidy(() => {
      const a = seeded(sa, 100 + i);
      const b = seeded(sb, 200 + i)
        .abs()
        .add(0.5);
      const f = (x: tf.Tensor, y: tf.Tensor) => x.mul(y).add(x.div(y)).sub(y).add(x);
      const g = tf.grads((x: tf.Tensor, y: tf.Tensor) => f(x, y).square().sum())([a, b]);
      return [f(a, b), ...g].map((t) => t.dataSync() as Float32Array);
    }),
  );
}

function segments(): Float32Array[] {
  return tf.tidy(() => {
    const table = seeded([37, 20], 300);
    const ids = tf.tensor1d(
      Int32Array.from({ length: 1500 }, (_, i) => (i * 7) % 37),
      "int32",
    );
    const w = seeded([1500, 20], 301);
    const [g] = tf.grads((t: tf.Tensor) => tf.gather(t, ids).mul(w).sum())([table]);
    const x = seeded([6, 70], 302);
    const direct = tf.unsortedSegmentSum(x, tf.tensor1d([2, -1, 0, 2, 9, 0], "int32"), 4);
    return [g!, direct].map((t) => t.dataSync() as Float32Array);
  });
}

// Sum over contiguous axis blocks (rows, columns, the middle, keepDims), an empty reduction, the
// non-contiguous case (the wasm kernel), and shapes of several chunks.
const SUMS: [number[], number | number[], boolean][] = [
  [[3, 4, 5], -1, false],
  [[3, 4, 5], 0, true],
  [[3, 4, 5], [1, 2], false],
  [[3, 4, 5], [0, 2], false],
  [[0, 3], 0, false],
  [[300, 257], 0, false],
  [[300, 257], 1, false],
  [[1, 40_000], 0, false],
];

function sums(): Float32Array[] {
  return SUMS.map(([shape, axis, keep], i) =>
    tf.tidy(
      () =>
        seeded(shape, 400 + i)
          .sum(axis, keep)
          .dataSync() as Float32Array,
    ),
  );
}

describe("broadcastPlan", () => {
  it("collapses contiguous and jointly broadcast dimensions, and gives up past 4", () => {
    expect(broadcastPlan([2, 3, 4, 5, 6], [6])).toEqual({ shape: [2, 3, 4, 5, 6], dims: [1, 1, 120, 6], sa: [0, 0, 6, 1], sb: [0, 0, 0, 1] });
    expect(broadcastPlan([5, 7], [5, 7])!.dims).toEqual([1, 1, 1, 35]);
    expect(broadcastPlan([5, 1], [1, 7])).toEqual({ shape: [5, 7], dims: [1, 1, 5, 7], sa: [0, 0, 1, 0], sb: [0, 0, 0, 1] });
    expect(broadcastPlan([2, 1, 3, 1, 4, 1], [1, 5, 1, 2, 1, 3])).toBeUndefined();
    expect(() => broadcastPlan([2, 3], [4])).toThrow(/broadcast/i);
  });
});

describe.skipIf(!load.ok)("native binary kernels, Sum and UnsortedSegmentSum", () => {
  quietSuiteBackToWasm();

  it("Add, Sub, Multiply, RealDiv (every broadcast), Sum and UnsortedSegmentSum match cpu, value and gradient", async () => {
    await tf.setBackend("cpu");
    const want = [...run(), ...segments(), ...sums()];
    await selectBackend({ force: "native", threads: 1 });
    const got = [...run(), ...segments(), ...sums()];
    expect(got.length).toBe(want.length);
    for (const [i, v] of got.entries()) {
      expect(v.length, `output ${i}`).toBe(want[i]!.length);
      // Error relative to the output's largest magnitude (sums of many terms cancel).
      let worst = 0;
      let scale = 1;
      for (let j = 0; j < v.length; j++) scale = Math.max(scale, Math.abs(want[i]![j]!));
      for (let j = 0; j < v.length; j++) worst = Math.max(worst, Math.abs(v[j]! - want[i]![j]!));
      expect(worst / scale, `output ${i}`).toBeLessThan(1e-5);
    }
  });

  it("gives the same bits for 1, 2 and 3 threads, and as the wasm kernels", async () => {
    const runs: Float32Array[][] = [];
    for (const threads of [1, 2, 3]) {
      await selectBackend({ force: "native", threads });
      runs.push([...run(), ...segments(), ...sums()]);
    }
    await selectBackend({ force: "wasm", threads: 1 });
    const wasm = tf.tidy(() => {
      const [sa, sb] = PAIRS[10]!;
      const a = seeded(sa, 110);
      const b = seeded(sb, 210).abs().add(0.5);
      return a.mul(b).add(a.div(b)).sub(b).add(a).dataSync() as Float32Array;
    });
    for (const r of runs.slice(1)) for (const [i, v] of r.entries()) expect(sameBits(v, runs[0]![i]!), `output ${i}`).toBe(true);
    expect(sameBits(runs[0]![30]!, wasm)).toBe(true); // pair 10's value: outputs are 3 per pair
  });
});
