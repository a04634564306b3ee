// The native kernels against the pure-JS cpu backend (forward and gradient), bitwise identity
// over thread counts and micro-kernels, and the whole file again with the vendored GEMM
// (LEVANTER_NATIVE_GEMM=vendored), as CI requires.
import type * as Tfjs from "@tensorflow/tfjs";
import { tf } from "../../tf.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../../backend.ts";
import { agreeOnNativeGemm, loadNativeAddon, nativeGemmCalibration, nativeGemmEngine } from "./addon.ts";
import { relErr, sameBits, quietSuiteBackToWasm } from "./testing.ts";

const load = loadNativeAddon();
// CI builds the addon at install: there, a missing addon is a failure, not a skip.
const required = process.env.CI === "true" || process.env.LEVANTER_NATIVE_REQUIRED === "1";
if (!load.ok && required) throw new Error(`levanter native addon required but unavailable: ${load.reason}`);

type Case = { a: number[]; b: number[]; ta?: boolean; tb?: boolean };

// Odd sizes for every tail (rows not a multiple of 6, columns not of 16/32, k = 1, k > 256),
// transposes, ranks 3–4, broadcasting, and empty dimensions.
const CASES: Case[] = [
  { a: [5, 7], b: [7, 13] },
  { a: [7, 5], b: [7, 13], ta: true },
  { a: [5, 7], b: [13, 7], tb: true },
  { a: [7, 5], b: [13, 7], ta: true, tb: true },
  { a: [1, 33], b: [33, 3] },
  { a: [9, 1], b: [1, 17] },
  { a: [1, 9], b: [1, 17], ta: true },
  { a: [37, 300], b: [300, 45] },
  { a: [300, 37], b: [45, 300], ta: true, tb: true },
  { a: [130, 64], b: [64, 70] },
  { a: [6, 64, 32], b: [6, 32, 64] },
  { a: [6, 64, 32], b: [6, 64, 32], tb: true },
  { a: [6, 64, 64], b: [6, 64, 32], ta: true },
  { a: [2, 3, 9, 5], b: [2, 3, 5, 11] },
  { a: [1, 9, 5], b: [4, 5, 11] },
  { a: [4, 9, 5], b: [5, 11] },
  { a: [0, 5], b: [5, 3] },
  { a: [4, 0], b: [0, 3] },
  { a: [3, 4, 5], b: [3, 5, 0] },
  { a: [0, 4, 5], b: [0, 5, 2] },
];

const seeded = (shape: number[], seed: number) => tf.randomNormal(shape, 0, 1, "float32", seed);

function product(c: Case): { shape: number[]; values: Float32Array } {
  return tf.tidy(() => {
    const out = tf.matMul(seeded(c.a, 1) as tf.Tensor3D, seeded(c.b, 2) as tf.Tensor3D, c.ta ?? false, c.tb ?? false);
    return { shape: out.shape, values: out.dataSync() as Float32Array };
  });
}

function gradsOf(c: Case): Float32Array[] {
  return tf.tidy(() => {
    const a = seeded(c.a, 3);
    const b = seeded(c.b, 4);
    const f = (x: tf.Tensor, y: tf.Tensor) =>
      tf
        .matMul(x as tf.Tensor3D, y as tf.Tensor3D, c.ta ?? false, c.tb ?? false)
        .square()
        .sum();
    return tf
      .grads(f)([a, b])
      .map((t) => t.dataSync() as Float32Array);
  });
}

type Fused = { a: number[]; b: number[]; bias?: number[]; act: Tfjs.fused.Activation; ta?: boolean; tb?: boolean };
const FUSED: Fused[] = [
  { a: [17, 9], b: [9, 21], bias: [21], act: "linear" },
  { a: [9, 17], b: [21, 9], bias: [1, 21], act: "relu", ta: true, tb: true },
  { a: [3, 8, 5], b: [3, 5, 7], bias: [8, 7], act: "relu6" },
  { a: [3, 8, 5], b: [5, 7], bias: [3, 8, 7], act: "leakyrelu" },
  { a: [8, 5], b: [5, 7], act: "sigmoid" },
  { a: [8, 5], b: [5, 7], bias: [7], act: "elu" },
];

function fused(c: Fused): Float32Array[] {
  return tf.tidy(() => {
    const a = seeded(c.a, 5);
    const b = seeded(c.b, 6);
    const bias = c.bias ? seeded(c.bias, 7) : undefined;
    const run = () =>
      tf.fused.matMul({
        a: a as tf.Tensor3D,
        b: b as tf.Tensor3D,
        transposeA: c.ta ?? false,
        transposeB: c.tb ?? false,
        activation: c.act,
        ...(bias ? { bias } : {}),
        leakyreluAlpha: 0.1,
      });
    const value = run().dataSync() as Float32Array;
    // Gradients of the linear and relu cases (tfjs has fused gradients only for those).
    if (c.act !== "linear" && c.act !== "relu") return [value];
    const g = tf.grads((x: tf.Tensor, y: tf.Tensor) =>
      tf.fused
        .matMul({ a: x as tf.Tensor3D, b: y as tf.Tensor3D, transposeA: c.ta ?? false, transposeB: c.tb ?? false, activation: c.act, ...(bias ? { bias } : {}) })
        .square()
        .sum(),
    )([a, b]);
    return [value, ...g.map((t) => t.dataSync() as Float32Array)];
  });
}

for (const gemm of ["default", "vendored"] as const) {
  describe.skipIf(!load.ok)(`native kernels (GEMM: ${gemm})`, () => {
    let previous: Record<string, string | undefined>;
    beforeAll(async () => {
      previous = { log: process.env.LEVANTER_LOG, gemm: process.env.LEVANTER_NATIVE_GEMM };
      process.env.LEVANTER_LOG = "silent";
      if (gemm === "vendored") process.env.LEVANTER_NATIVE_GEMM = "vendored";
      else delete process.env.LEVANTER_NATIVE_GEMM;
      const sel = await selectBackend({ force: "native", threads: 1 });
      // By default: the faster engine by the process's calibration.
      expect(sel.native?.gemm).toBe(gemm === "vendored" ? "vendored" : nativeGemmCalibration()!.pick);
    });
    afterAll(async () => {
      process.env.LEVANTER_LOG = previous.log;
      if (previous.gemm === undefined) delete process.env.LEVANTER_NATIVE_GEMM;
      else process.env.LEVANTER_NATIVE_GEMM = previous.gemm;
      await selectBackend({ force: "native", threads: 1 });
      await selectBackend({ force: "wasm", threads: 1 });
    });

    it("BatchMatMul: every flag, tail, rank, broadcast and empty dimension matches cpu (value and gradient)", async () => {
      await tf.setBackend("cpu");
      const broadcast = (c: Case) => c.a.slice(0, -2).join() !== c.b.slice(0, -2).join();
      const want = CASES.map((c) => ({ p: product(c), g: broadcast(c) ? undefined : gradsOf(c) }));
      await selectBackend({ force: "native", threads: 1 });
      for (const [i, c] of CASES.entries()) {
        const got = product(c);
        expect(got.shape, JSON.stringify(c)).toEqual(want[i]!.p.shape);
        expect(relErr(got.values, want[i]!.p.values), JSON.stringify(c)).toBeLessThan(1e-5);
        // tfjs' BatchMatMul gradient cannot reduce a broadcast batch (it fails on every backend).
        if (!want[i]!.g) continue;
        const g = gradsOf(c);
        for (let j = 0; j < 2; j++) expect(relErr(g[j]!, want[i]!.g![j]!), `grad ${j} ${JSON.stringify(c)}`).toBeLessThan(1e-5);
      }
    });

    it("_FusedMatMul: bias shapes and activations match cpu", async () => {
      await tf.setBackend("cpu");
      const want = FUSED.map(fused);
      await selectBackend({ force: "native", threads: 1 });
      for (const [i, c] of FUSED.entries()) {
        const got = fused(c);
        expect(got.length).toBe(want[i]!.length);
        for (let j = 0; j < got.length; j++) expect(relErr(got[j]!, want[i]![j]!), `${j} ${JSON.stringify(c)}`).toBeLessThan(1e-5);
      }
    });

    it("gives the same bits for 1, 2 and 3 threads", async () => {
      const big: Case[] = [
        { a: [203, 257], b: [257, 131] },
        { a: [257, 203], b: [131, 257], ta: true, tb: true },
        { a: [5, 67, 64], b: [5, 64, 67] },
        { a: [3, 130, 96], b: [96, 70] },
        { a: [40, 300], b: [300, 700] },
      ];
      const runs: Float32Array[][] = [];
      for (const threads of [1, 2, 3]) {
        const sel = await selectBackend({ force: "native", threads });
        expect(sel.threads).toBe(threads);
        runs.push(big.map((c) => product(c).values));
      }
      for (const run of runs.slice(1)) for (const [i, v] of run.entries()) expect(sameBits(v, runs[0]![i]!), JSON.stringify(big[i])).toBe(true);
    });

    it.skipIf(gemm !== "vendored")("vendored micro-kernels (scalar, AVX2, AVX-512 where present) give the same bits", async () => {
      await selectBackend({ force: "native", threads: 2 });
      const addon = (load as { addon: import("./addon.ts").NativeAddon }).addon;
      const c: Case = { a: [67, 300], b: [300, 45] };
      const runs: Float32Array[] = [];
      try {
        for (const isa of ["scalar", "avx2", "avx512"] as const) if (addon.setIsa(isa)) runs.push(product(c).values);
      } finally {
        addon.setIsa("auto");
      }
      expect(runs.length).toBeGreaterThanOrEqual(1);
      for (const r of runs.slice(1)) expect(sameBits(r, runs[0]!)).toBe(true);
    });
  });
}

describe("native backend selection", () => {
  let previous: string | undefined;
  beforeAll(() => {
    previous = process.env.LEVANTER_LOG;
    process.env.LEVANTER_LOG = "silent";
  });
  afterAll(() => {
    process.env.LEVANTER_LOG = previous;
    delete process.env.LEVANTER_NATIVE;
  });

  it.skipIf(!load.ok)("prefers native over wasm when the addon loads", async () => {
    const sel = await selectBackend({ threads: 1 });
    expect(["tensorflow-gpu", "tensorflow", "native"]).toContain(sel.name);
    if (sel.name === "native") expect(sel.tfBackend).toBe("wasm");
  });

  it("falls back to wasm with the addon absent (LEVANTER_NATIVE=off), and forcing native then fails clearly", async () => {
    process.env.LEVANTER_NATIVE = "off";
    try {
      const sel = await selectBackend({ threads: 1 });
      expect(sel.name).toBe("wasm");
      expect(sel.skipped.find((s) => s.name === "native")?.reason).toMatch(/LEVANTER_NATIVE=off/);
      // Training ops still work on plain wasm.
      const v = tf.tidy(
        () =>
          tf
            .matMul(seeded([5, 7], 1) as tf.Tensor2D, seeded([7, 3], 2) as tf.Tensor2D)
            .sum()
            .dataSync()[0]!,
      );
      expect(Number.isFinite(v)).toBe(true);
      await expect(selectBackend({ force: "native" })).rejects.toThrow(/backend "native" \(forced\) cannot be used: disabled/);
    } finally {
      delete process.env.LEVANTER_NATIVE;
    }
  });
});

describe.skipIf(!load.ok)("native non-GEMM kernels", () => {
  quietSuiteBackToWasm();

  async function onCpuAndNative<T>(fn: () => T): Promise<{ cpu: T; native: T }> {
    await tf.setBackend("cpu");
    const cpu = fn();
    await selectBackend({ force: "native", threads: 1 });
    return { cpu, native: fn() };
  }

  it("Softmax (last axis, incl. a causal −∞ mask and an empty batch) and Exp match cpu, value and gradient", async () => {
    const shapes = [
      [7, 13],
      [3, 5, 64],
      [1, 1],
      [0, 4],
    ];
    const r = await onCpuAndNative(() =>
      shapes.map((s, i) =>
        tf.tidy(() => {
          const mask =
            s.length === 3
              ? tf.linalg
                  .bandPart(tf.ones([s[1]!, s[2]!]), -1, 0)
                  .sub(1)
                  .mul(1e9)
              : tf.zeros(s.slice(-2));
          const x = seeded(s, 10 + i).add(mask);
          const w = seeded(s, 20 + i);
          const [gs] = tf.grads((y: tf.Tensor) => tf.softmax(y).mul(w).sum())([x]);
          const [ge] = tf.grads((y: tf.Tensor) => tf.exp(y.mul(0.1)).mul(w).sum())([x]);
          return [tf.softmax(x), gs!, tf.exp(x.mul(0.1)), ge!].map((t) => t.dataSync() as Float32Array);
        }),
      ),
    );
    for (const [i, outs] of r.native.entries()) for (const [j, v] of outs.entries()) expect(relErr(v, r.cpu[i]![j]!), `${shapes[i]} #${j}`).toBeLessThan(2e-6);
  });

  it("fused cross-entropy equals −Σ logSoftmax·oneHot (value and gradient), out-of-range targets included", async () => {
    const { nativeTokenCrossEntropy } = await import("./crossEntropy.ts");
    const rows = 37;
    const vocab = 257;
    const targets = Int32Array.from({ length: rows }, (_, i) => (i === 5 ? vocab + 3 : (i * 97) % vocab));
    const reference = () =>
      tf.tidy(() => {
        const x = seeded([rows, vocab], 30).mul(3);
        const t = tf.tensor1d(targets, "int32");
        const loss = (y: tf.Tensor) => tf.logSoftmax(y).mul(tf.oneHot(t, vocab).toFloat()).sum(-1).neg();
        const w = seeded([rows], 31);
        const [g] = tf.grads((y: tf.Tensor) => loss(y).mul(w).sum())([x]);
        return [loss(x), g!].map((v) => v.dataSync() as Float32Array);
      });
    await tf.setBackend("cpu");
    const want = reference();
    await selectBackend({ force: "native", threads: 1 });
    const got = tf.tidy(() => {
      const x = seeded([rows, vocab], 30).mul(3) as tf.Tensor2D;
      const t = tf.tensor1d(targets, "int32");
      const w = seeded([rows], 31);
      const [g] = tf.grads((y: tf.Tensor) =>
        nativeTokenCrossEntropy(y as tf.Tensor2D, t)
          .mul(w)
          .sum(),
      )([x]);
      return [nativeTokenCrossEntropy(x, t), g!].map((v) => v.dataSync() as Float32Array);
    });
    expect(got[0]![5]).toBe(0);
    for (let j = 0; j < 2; j++) expect(relErr(got[j]!, want[j]!), `#${j}`).toBeLessThan(2e-6);
  });

  it("fused AdamW gives the op-by-op update's bits (clipping, decay on and off)", async () => {
    const { AdamW } = await import("../../optim/adamw.ts");
    const run = () => {
      const params = new Map([
        ["w", tf.variable(seeded([33, 17], 40))],
        ["b", tf.variable(seeded([17], 41))],
      ]);
      const opt = new AdamW(params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1, maxGradNorm: 1, decayMask: (n) => n === "w" });
      const norms: number[] = [];
      for (let s = 0; s < 3; s++) {
        const grads = new Map([...params].map(([n, p]) => [n, tf.tidy(() => seeded(p.shape, 50 + s).mul(s === 1 ? 0.01 : 3))] as const));
        norms.push(opt.apply(grads, 1e-2));
        for (const g of grads.values()) g.dispose();
      }
      const out = [...params.values()].map((p) => p.dataSync() as Float32Array);
      const st = opt.state();
      opt.dispose();
      for (const p of params.values()) p.dispose();
      return { out, m: [...st.arrays.values()], norms };
    };
    await selectBackend({ force: "wasm", threads: 1 });
    const wasm = run();
    await selectBackend({ force: "native", threads: 1 });
    const native = run();
    for (let s = 0; s < 3; s++) expect(native.norms[s]! / wasm.norms[s]!).toBeCloseTo(1, 6);
    // The same float32 operations: identical bits unless the global norm's last bits differ.
    for (const [i, v] of native.out.entries()) expect(relErr(v, wasm.out[i]!), `param ${i}`).toBeLessThan(1e-6);
    for (const [i, v] of native.m.entries()) expect(relErr(v, wasm.m[i]!), `moment ${i}`).toBeLessThan(1e-6);
  });
  it("non-GEMM kernels split over several chunks give the same bits for 1, 2 and 3 threads", async () => {
    const { nativeGelu } = await import("./gelu.ts");
    const { nativeSwiglu } = await import("./swiglu.ts");
    const { nativeNorm } = await import("./norm.ts");
    const { nativeTokenCrossEntropy } = await import("./crossEntropy.ts");
    const { AdamW } = await import("../../optim/adamw.ts");
    // Sizes above one chunk (2^14 elements, or that many values of rows) of every kernel.
    const outputs = () =>
      tf.tidy(() => {
        const x = seeded([700, 48], 90).mul(2).add(0.3) as tf.Tensor2D;
        const s = seeded([48], 91);
        const b = seeded([48], 92);
        const w = seeded([700, 48], 93);
        const logits = seeded([300, 257], 94).mul(3) as tf.Tensor2D;
        const t = tf.tensor1d(
          Int32Array.from({ length: 300 }, (_, i) => (i * 31) % 257),
          "int32",
        );
        const outs: tf.Tensor[] = [
          nativeGelu(x),
          ...tf.grads((y: tf.Tensor) => nativeGelu(y).mul(w).sum())([x]),
          nativeSwiglu(x, w),
          ...tf.grads((g: tf.Tensor, u: tf.Tensor) => nativeSwiglu(g, u).mul(x).sum())([x, w]),
          ...tf.grads((y: tf.Tensor, ss: tf.Tensor, bb: tf.Tensor) =>
            nativeNorm(y as tf.Tensor2D, ss, bb, 1e-5)
              .mul(w)
              .sum(),
          )([x, s, b]),
          ...tf.grads((y: tf.Tensor, ss: tf.Tensor) =>
            nativeNorm(y as tf.Tensor2D, ss, undefined, 1e-5)
              .mul(w)
              .sum(),
          )([x, s]),
          tf.softmax(logits),
          tf.exp(logits.mul(0.1)),
          nativeTokenCrossEntropy(logits, t),
          ...tf.grads((y: tf.Tensor) => nativeTokenCrossEntropy(y as tf.Tensor2D, t).sum())([logits]),
        ];
        return outs.map((o) => o.dataSync() as Float32Array);
      });
    const adam = () => {
      const params = new Map([["w", tf.variable(seeded([40_000], 95))]]);
      const opt = new AdamW(params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1, maxGradNorm: 1, decayMask: () => true });
      const grads = new Map([["w", tf.tidy(() => seeded([40_000], 96))]]);
      const norm = opt.apply(grads, 1e-2);
      const out = params.get("w")!.dataSync() as Float32Array;
      opt.dispose();
      grads.get("w")!.dispose();
      params.get("w")!.dispose();
      return { out, norm };
    };
    const runs: { outs: Float32Array[]; adam: { out: Float32Array; norm: number } }[] = [];
    for (const threads of [1, 2, 3]) {
      await selectBackend({ force: "native", threads });
      runs.push({ outs: outputs(), adam: adam() });
    }
    for (const r of runs.slice(1)) {
      for (const [i, v] of r.outs.entries()) expect(sameBits(v, runs[0]!.outs[i]!), `output ${i}`).toBe(true);
      expect(sameBits(r.adam.out, runs[0]!.adam.out)).toBe(true);
      expect(r.adam.norm).toBe(runs[0]!.adam.norm);
    }
  });

  it("fused GELU, SwiGLU and layer / RMS norm match the op-by-op forms on cpu (value and every gradient)", async () => {
    const { nativeGelu } = await import("./gelu.ts");
    const { nativeSwiglu } = await import("./swiglu.ts");
    const swigluRef = (g: tf.Tensor, u: tf.Tensor) => g.mul(tf.sigmoid(g)).mul(u);
    const { nativeNorm } = await import("./norm.ts");
    const c2 = 2 * Math.sqrt(2 / Math.PI);
    const geluRef = (x: tf.Tensor) => x.mul(tf.sigmoid(x.add(x.mul(x).mul(x).mul(0.044715)).mul(c2)));
    const normRef = (x: tf.Tensor, s: tf.Tensor, b: tf.Tensor | undefined) => {
      const xc = b ? x.sub(x.mean(-1, true)) : x;
      const y = xc.mul(tf.rsqrt(xc.square().mean(-1, true).add(1e-5))).mul(s);
      return b ? y.add(b) : y;
    };
    const run = (native: boolean) =>
      tf.tidy(() => {
        const x = seeded([37, 48], 60).mul(2).add(0.5);
        const s = seeded([48], 61);
        const b = seeded([48], 62);
        const w = seeded([37, 48], 63);
        const gelu = native ? nativeGelu : geluRef;
        const norm = (xx: tf.Tensor, ss: tf.Tensor, bb?: tf.Tensor) => (native ? nativeNorm(xx as tf.Tensor2D, ss, bb, 1e-5) : normRef(xx, ss, bb));
        const outs: tf.Tensor[] = [gelu(x), ...tf.grads((y: tf.Tensor) => gelu(y).mul(w).sum())([x])];
        outs.push(norm(x, s, b), ...tf.grads((y: tf.Tensor, ss: tf.Tensor, bb: tf.Tensor) => norm(y, ss, bb).mul(w).sum())([x, s, b]));
        outs.push(norm(x, s), ...tf.grads((y: tf.Tensor, ss: tf.Tensor) => norm(y, ss).mul(w).sum())([x, s]));
        // SwiGLU on 37×48 (a vector tail of 4 per chunk) with gates across the sigmoid's range.
        const swiglu = native ? nativeSwiglu : swigluRef;
        const u = seeded([37, 48], 64);
        outs.push(swiglu(x, u), ...tf.grads((g: tf.Tensor, uu: tf.Tensor) => swiglu(g, uu).mul(w).sum())([x, u]));
        return outs.map((t) => t.dataSync() as Float32Array);
      });
    await tf.setBackend("cpu");
    const want = run(false);
    await selectBackend({ force: "native", threads: 1 });
    const got = run(true);
    expect(got.length).toBe(12);
    for (const [j, v] of got.entries()) expect(relErr(v, want[j]!), `output ${j}`).toBeLessThan(1e-5);
  });
});

describe.skipIf(!load.ok)("native GEMM pick", () => {
  it("is the faster engine by a calibration of a few milliseconds, run once per process", async () => {
    const c = nativeGemmCalibration()!;
    const addon = (load as { addon: { info(): { openblas: boolean } } }).addon;
    if (addon.info().openblas) {
      expect(c.openblas).toBeGreaterThan(0);
      expect(c.vendored).toBeGreaterThan(0);
      expect(c.pick).toBe(c.openblas! < c.vendored ? "openblas" : "vendored");
      // A few milliseconds each (generous: this machine may be loaded).
      expect(c.openblas! + c.vendored).toBeLessThan(1);
    } else {
      expect(c.pick).toBe("vendored");
    }
    // Cached: the same object, so the pick cannot change within the process.
    expect(nativeGemmCalibration()).toBe(c);
    const previous = process.env.LEVANTER_NATIVE_GEMM;
    try {
      process.env.LEVANTER_NATIVE_GEMM = "auto";
      expect((await selectBackend({ force: "native", threads: 1 })).native?.gemm).toBe(c.pick);
      process.env.LEVANTER_NATIVE_GEMM = "fastest";
      expect(loadNativeAddon()).toMatchObject({ ok: false, reason: expect.stringMatching(/LEVANTER_NATIVE_GEMM: expected openblas \| vendored \| auto, got "fastest"/) });
    } finally {
      if (previous === undefined) delete process.env.LEVANTER_NATIVE_GEMM;
      else process.env.LEVANTER_NATIVE_GEMM = previous;
      await selectBackend({ force: "wasm", threads: 1 });
    }
  });

  it("takes the engine a gang agreed on over its own pick (LEVANTER_NATIVE_GEMM still wins)", async () => {
    const addon = (load as { addon: { info(): { openblas: boolean } } }).addon;
    const other = nativeGemmCalibration()!.pick === "vendored" && addon.info().openblas ? "openblas" : "vendored";
    const previous = process.env.LEVANTER_NATIVE_GEMM;
    try {
      delete process.env.LEVANTER_NATIVE_GEMM;
      agreeOnNativeGemm(other);
      expect(nativeGemmEngine()).toBe(other);
      expect((await selectBackend({ force: "native", threads: 1 })).native?.gemm).toBe(other);
      process.env.LEVANTER_NATIVE_GEMM = "vendored";
      expect(nativeGemmEngine()).toBe("vendored");
    } finally {
      agreeOnNativeGemm(nativeGemmCalibration()!.pick);
      if (previous === undefined) delete process.env.LEVANTER_NATIVE_GEMM;
      else process.env.LEVANTER_NATIVE_GEMM = previous;
      await selectBackend({ force: "wasm", threads: 1 });
    }
  });
});
