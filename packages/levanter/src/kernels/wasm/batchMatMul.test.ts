// The wasm SIMD matMul kernel against the cpu backend: every transpose form, odd sizes, threads.
import { readFile } from "node:fs/promises";
import { tf } from "../../tf.ts";
import { describe, expect, it } from "vitest";
import { quietSuiteBackToWasm } from "../native/testing.ts";
import { selectBackend } from "../../backend.ts";
import { setWasmThreads, wasmThreads } from "./batchMatMul.ts";
import { GENERATED_PATH, generatedSource } from "../compileWat.ts";
import { GemmPool } from "../gemmPool.ts";

type Case = { a: number[]; b: number[]; ta?: boolean; tb?: boolean };

// Odd sizes exercise every tail: rows not a multiple of 4, columns not a multiple of 8, k = 1.
const CASES: Case[] = [
  { a: [5, 7], b: [7, 13] },
  { a: [7, 5], b: [7, 13], ta: true },
  { a: [5, 7], b: [13, 7], tb: true },
  { a: [7, 5], b: [13, 7], ta: true, tb: true },
  { a: [1, 33], b: [33, 3] },
  { a: [9, 1], b: [1, 17] },
  { a: [6, 64, 32], b: [6, 32, 64] }, // attention q·kᵀ
  { a: [6, 64, 64], b: [6, 64, 32] }, // att·v
  { a: [6, 64, 32], b: [6, 64, 32], tb: true },
  { a: [6, 64, 64], b: [6, 64, 32], ta: true },
  { a: [2, 3, 9, 5], b: [2, 3, 5, 11] }, // rank 4
  { a: [1, 9, 5], b: [4, 5, 11] }, // broadcast A
  { a: [4, 9, 5], b: [5, 11] }, // broadcast B (rank 2)
];

const seeded = (shape: number[], seed: number) => tf.randomNormal(shape, 0, 1, "float32", seed);

function product(c: Case): { shape: number[]; values: Float32Array } {
  return tf.tidy(() => {
    const out = tf.matMul(seeded(c.a, 1) as tf.Tensor3D, seeded(c.b, 2) as tf.Tensor3D, c.ta ?? false, c.tb ?? false);
    return { shape: out.shape, values: out.dataSync() as Float32Array };
  });
}

describe("matmul.wat", () => {
  it("matches the generated module (run `pnpm --filter @marin/levanter build:wasm` after editing it)", async () => {
    expect(await readFile(GENERATED_PATH, "utf8")).toBe(await generatedSource());
  });
});

describe("wasm BatchMatMul kernel", () => {
  quietSuiteBackToWasm();

  it("agrees with the cpu backend for every flag, tail, rank and broadcast", async () => {
    await tf.setBackend("cpu");
    const want = CASES.map(product);
    await selectBackend({ force: "wasm", threads: 1 });
    for (const [i, c] of CASES.entries()) {
      const got = product(c);
      expect(got.shape, JSON.stringify(c)).toEqual(want[i]!.shape);
      let worst = 0;
      for (let j = 0; j < got.values.length; j++) worst = Math.max(worst, Math.abs(got.values[j]! - want[i]!.values[j]!));
      expect(worst, JSON.stringify(c)).toBeLessThan(1e-4);
    }
  });

  it("gives a batched product's gradients (transpose flags) the cpu backend's values", async () => {
    const grads = () =>
      tf.tidy(() => {
        const a = seeded([8, 64, 32], 3);
        const b = seeded([8, 32, 64], 4);
        const g = tf.grads((x: tf.Tensor, y: tf.Tensor) =>
          tf
            .matMul(x as tf.Tensor3D, y as tf.Tensor3D)
            .square()
            .sum(),
        )([a, b]);
        return g.map((t) => t.dataSync() as Float32Array);
      });
    await tf.setBackend("cpu");
    const want = grads();
    await selectBackend({ force: "wasm", threads: 1 });
    const got = grads();
    for (let i = 0; i < 2; i++) {
      let worst = 0;
      let scale = 0;
      for (let j = 0; j < got[i]!.length; j++) {
        worst = Math.max(worst, Math.abs(got[i]![j]! - want[i]![j]!));
        scale = Math.max(scale, Math.abs(want[i]![j]!));
      }
      expect(scale).toBeGreaterThan(1);
      expect(worst / scale).toBeLessThan(1e-6);
    }
  });

  it("returns the same bits for 1, 2 and 3 threads, also when rows or batches split unevenly", async () => {
    // Large enough (≥ 2 MFLOP) to be split over the pool.
    const big: Case[] = [
      { a: [203, 257], b: [257, 131] },
      { a: [257, 203], b: [131, 257], ta: true, tb: true },
      { a: [5, 67, 64], b: [5, 64, 67] },
      { a: [3, 130, 96], b: [96, 70] },
    ];
    const runs: Float32Array[][] = [];
    for (const threads of [1, 2, 3]) {
      await selectBackend({ force: "wasm", threads });
      expect(wasmThreads()).toBe(threads);
      runs.push(big.map((c) => product(c).values));
    }
    for (const run of runs.slice(1)) {
      for (const [i, values] of run.entries()) expect(Buffer.from(values.buffer).equals(Buffer.from(runs[0]![i]!.buffer)), JSON.stringify(big[i])).toBe(true);
    }
  });

  it("rejects a thread count that is not a positive integer", () => {
    expect(() => setWasmThreads(0)).toThrow(/positive integer/);
    expect(() => setWasmThreads(1.5)).toThrow(/positive integer/);
  });
});

describe("GemmPool", () => {
  it("splits a product over its workers and stops them on close", () => {
    const pool = new GemmPool(2);
    try {
      const [m, k, n] = [10, 3, 9];
      const panel = Math.ceil(n / 8) * 8 * k * 4;
      const mem = pool.reserve(4096);
      const f = new Float32Array(mem.buffer);
      const a = Float32Array.from({ length: m * k }, (_, i) => (i % 7) - 3);
      const b = Float32Array.from({ length: k * n }, (_, i) => (i % 5) - 2);
      f.set(a, 16);
      f.set(b, 256);
      pool.pack(256 * 4, 512 * 4, k, n, n, 1);
      pool.run({ a: 64, b: 512 * 4, c: 1024 * 4, m, k, n, sai: k, sak: 1, batches: 1, strideA: 0, strideB: panel, strideC: 0 });
      for (let i = 0; i < m; i++) {
        for (let j = 0; j < n; j++) {
          let s = 0;
          for (let kk = 0; kk < k; kk++) s += a[i * k + kk]! * b[kk * n + j]!;
          expect(f[1024 + i * n + j]).toBe(s);
        }
      }
    } finally {
      pool.close();
    }
    expect(() => pool.run({ a: 0, b: 0, c: 0, m: 1, k: 1, n: 1, sai: 1, sak: 1, batches: 1, strideA: 0, strideB: 0, strideC: 0 })).toThrow(/closed/);
    expect(() => new GemmPool(1)).toThrow(/at least 2/);
  });
});
