// Backend selection and the wasm fixes, against the cpu backend.
import * as tf from "@tensorflow/tfjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseBackendName, selectBackend } from "./backend.ts";
import { measureMatMulGflops } from "./kernels/profile.ts";
import { matMul2d } from "./kernels/wasm/matMul2d.ts";
import { oneHotFloat } from "./kernels/wasm/oneHotFloat.ts";
import { LevanterError } from "./errors.ts";

// Each fix is checked by computing the same values on the pure-JS cpu backend (the reference) and
// on wasm, in this one process.
async function onBoth<T>(fn: () => T): Promise<{ cpu: T; wasm: T }> {
  await tf.setBackend("cpu");
  const cpu = fn();
  await tf.setBackend("wasm");
  const wasm = fn();
  return { cpu, wasm };
}

function seeded(shape: number[], seed: number): tf.Tensor {
  return tf.randomNormal(shape, 0, 1, "float32", seed);
}

function maxAbsDiff(a: Float32Array | number[], b: Float32Array | number[]): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe("selectBackend", () => {
  let previous: string | undefined;
  beforeAll(() => {
    previous = process.env.LEVANTER_LOG;
    process.env.LEVANTER_LOG = "silent";
  });
  afterAll(() => {
    process.env.LEVANTER_LOG = previous;
  });

  it("takes the first backend that loads and says why each earlier one was skipped", async () => {
    const sel = await selectBackend();
    const order = ["tensorflow-gpu", "tensorflow", "native", "wasm", "cpu"];
    // Without libtensorflow (these machines) that is wasm; with it, a native backend. Either way
    // every earlier candidate is listed with a reason.
    expect(order.indexOf(sel.name)).toBeLessThanOrEqual(order.indexOf("wasm"));
    expect(sel.skipped.map((s) => s.name)).toEqual(order.slice(0, order.indexOf(sel.name)));
    for (const s of sel.skipped) expect(s.reason.length).toBeGreaterThan(0);
    expect(tf.getBackend()).toBe(sel.tfBackend);
  });

  it("honours a forced backend and rejects an unavailable or unknown one", async () => {
    expect((await selectBackend({ force: "cpu" })).name).toBe("cpu");
    expect(tf.getBackend()).toBe("cpu");
    // @tensorflow/tfjs-node is deliberately not a dependency of this package, so it cannot load.
    await expect(selectBackend({ force: "tensorflow" })).rejects.toThrow(LevanterError);
    expect(() => parseBackendName("gpu")).toThrow(/LEVANTER_BACKEND: expected one of/);
  });
});

describe("measureMatMulGflops", () => {
  it("measures a positive rate and leaks no tensors", async () => {
    await selectBackend({ force: "wasm" });
    const before = tf.memory().numTensors;
    const g = measureMatMulGflops(64, 32, 64, 3);
    expect(g.wall).toBeGreaterThan(0);
    expect(g.cpu).toBeGreaterThan(0);
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe("wasm fixes agree with the cpu backend", () => {
  beforeAll(async () => {
    await selectBackend({ force: "wasm" });
  });

  it("matMul2d: forward and explicit-transpose gradients", async () => {
    const r = await onBoth(() =>
      tf.tidy(() => {
        const a = seeded([24, 16], 1) as tf.Tensor2D;
        const b = seeded([16, 40], 2) as tf.Tensor2D;
        const w = seeded([24, 40], 3);
        const f = (x: tf.Tensor, y: tf.Tensor) => matMul2d(x as tf.Tensor2D, y as tf.Tensor2D).mul(w).sum();
        const [ga, gb] = tf.grads(f)([a, b]);
        const builtin = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.matMul(x as tf.Tensor2D, y as tf.Tensor2D).mul(w).sum())([a, b]);
        return {
          y: Array.from(matMul2d(a, b).dataSync()),
          ga: Array.from(ga!.dataSync()),
          gb: Array.from(gb!.dataSync()),
          builtinGa: Array.from(builtin[0]!.dataSync()),
        };
      }),
    );
    expect(maxAbsDiff(r.wasm.y, r.cpu.y)).toBeLessThan(1e-4);
    expect(maxAbsDiff(r.wasm.ga, r.cpu.ga)).toBeLessThan(1e-4);
    expect(maxAbsDiff(r.wasm.gb, r.cpu.gb)).toBeLessThan(1e-4);
    expect(maxAbsDiff(r.cpu.ga, r.cpu.builtinGa)).toBeLessThan(1e-4);
    expect(Math.max(...r.cpu.ga.map(Math.abs))).toBeGreaterThan(0.1);
  });

  it("oneHotFloat: exact ones and zeros, and a cross-entropy that is not silently zero", async () => {
    const r = await onBoth(() =>
      tf.tidy(() => {
        const ids = tf.tensor1d([3, 0, 2, 3], "int32");
        const oh = oneHotFloat(ids, 5);
        const logits = seeded([4, 5], 4);
        const ce = tf.logSumExp(logits, -1).sub(logits.mul(oh).sum(-1)).mean();
        return { oh: Array.from(oh.dataSync()), ce: ce.dataSync()[0]! };
      }),
    );
    expect(r.wasm.oh).toEqual(r.cpu.oh);
    expect(r.cpu.oh.reduce((s, v) => s + v, 0)).toBe(4);
    expect(r.wasm.ce).toBeGreaterThan(0.1);
    expect(Math.abs(r.wasm.ce - r.cpu.ce)).toBeLessThan(1e-5);
  });

  it("UnsortedSegmentSum kernel: gather (embedding lookup) has the cpu gradient on wasm", async () => {
    const r = await onBoth(() =>
      tf.tidy(() => {
        const table = seeded([7, 6], 5);
        const ids = tf.tensor1d([1, 4, 1, 6, 0, 1], "int32");
        const w = seeded([6, 6], 6);
        const g = tf.grad((t: tf.Tensor) => tf.gather(t, ids).mul(w).sum())(table);
        return Array.from(g.dataSync());
      }),
    );
    expect(maxAbsDiff(r.wasm, r.cpu)).toBeLessThan(1e-5);
    // Row 1 was looked up three times: its gradient is the sum of three rows of w.
    expect(r.cpu.slice(6, 12).some((v) => Math.abs(v) > 0.1)).toBe(true);
    expect(r.cpu.slice(12, 18).every((v) => v === 0)).toBe(true);
  });

  it("GatherV2 fast path: exact rows on wasm, other cases left to the original kernel", async () => {
    const r = await onBoth(() =>
      tf.tidy(() => {
        const table = seeded([5, 3, 4], 7);
        const ids = tf.tensor2d([[4, 0], [4, 2], [1, 1]], [3, 2], "int32");
        const rows = tf.gather(table, ids); // fast path: axis 0, [3,2] ids → [3,2,3,4]
        const cols = tf.gather(table, tf.tensor1d([2, 0], "int32"), 1); // axis 1: original kernel
        return { rows: Array.from(rows.dataSync()), shape: rows.shape, cols: Array.from(cols.dataSync()), table: Array.from(table.dataSync()) };
      }),
    );
    expect(r.wasm.shape).toEqual([3, 2, 3, 4]);
    expect(r.wasm.rows).toEqual(r.cpu.rows);
    expect(r.wasm.cols).toEqual(r.cpu.cols);
    // The first looked-up row is table row 4, bit for bit.
    expect(r.wasm.rows.slice(0, 12)).toEqual(r.wasm.table.slice(48, 60));
  });

  it("Slice and SplitV read through a heap view and match cpu exactly (any rank, int32 too)", async () => {
    const r = await onBoth(() =>
      tf.tidy(() => {
        const x4 = seeded([3, 6, 5, 4], 8);
        const x5 = seeded([2, 3, 4, 5, 6], 9);
        const ints = tf.range(0, 60, 1, "int32").reshape([5, 12]);
        const parts = [
          ...tf.split(x4, 3, 1),
          ...tf.split(x4, [1, 3], 3),
          ...tf.split(seeded([4, 9], 10), 3, 1),
          x4.slice([1, 2, 1, 1], [2, 3, 3, 2]),
          x5.slice([1, 1, 0, 2, 3], [1, 2, 4, 2, 3]),
          ints.slice([1, 3], [3, 5]),
          seeded([10], 11).slice([4], [3]),
        ];
        return parts.map((t) => ({ shape: t.shape, dtype: t.dtype, v: Array.from(t.dataSync()) }));
      }),
    );
    expect(r.wasm).toEqual(r.cpu);
    expect(r.cpu[10]!.v).toEqual([15, 16, 17, 18, 19, 27, 28, 29, 30, 31, 39, 40, 41, 42, 43]);
  });

  it("Identity shares the buffer: a clone outlives its source, and nothing leaks", async () => {
    await tf.setBackend("wasm");
    const before = tf.memory().numBytes;
    const a = tf.tensor1d([1, 2, 3]);
    const c = tf.clone(a);
    const doubled = c.mul(2);
    const v = tf.variable(doubled);
    doubled.dispose();
    a.dispose();
    expect(Array.from(c.dataSync())).toEqual([1, 2, 3]);
    const sum = v.add(c);
    v.assign(sum);
    sum.dispose();
    expect(Array.from(v.dataSync())).toEqual([3, 6, 9]);
    expect(Array.from(c.dataSync())).toEqual([1, 2, 3]);
    c.dispose();
    v.dispose();
    expect(tf.memory().numBytes).toBe(before);
  });
});
