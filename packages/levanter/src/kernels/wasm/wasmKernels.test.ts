// The wasm kernels (kernels/wasm/) and the wasm-shaped ops, against the cpu backend, and their
// registration list.
import { tf } from "../../tf.ts";
import { beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../../backend.ts";
import { matMul2d } from "./matMul2d.ts";
import { oneHotFloat } from "./oneHotFloat.ts";
import { installWasmFixes, WASM_KERNELS } from "./register.ts";

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
        const f = (x: tf.Tensor, y: tf.Tensor) =>
          matMul2d(x as tf.Tensor2D, y as tf.Tensor2D)
            .mul(w)
            .sum();
        const [ga, gb] = tf.grads(f)([a, b]);
        const builtin = tf.grads((x: tf.Tensor, y: tf.Tensor) =>
          tf
            .matMul(x as tf.Tensor2D, y as tf.Tensor2D)
            .mul(w)
            .sum(),
        )([a, b]);
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
        const ids = tf.tensor2d(
          [
            [4, 0],
            [4, 2],
            [1, 1],
          ],
          [3, 2],
          "int32",
        );
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

describe("the wasm registration list", () => {
  it("registers every kernel once: a second install leaves each as it is", async () => {
    await selectBackend({ force: "wasm" });
    const before = WASM_KERNELS.map((k) => tf.getKernel(k.kernelName, "wasm")?.kernelFunc);
    expect(before.every((f) => typeof f === "function")).toBe(true);
    installWasmFixes();
    expect(WASM_KERNELS.map((k) => tf.getKernel(k.kernelName, "wasm")?.kernelFunc)).toEqual(before);
  });
});
