// The fused causal attention kernels against the model's op-by-op attention on the pure-JS cpu
// backend (value and gradient; odd head sizes, one-token sequences, an empty batch; grouped-query
// heads and rotary positions), and their bits for 1, 2 and 3 threads.
import { tf } from "../../tf.ts";
import { describe, expect, it } from "vitest";
import { selectBackend } from "../../backend.ts";
import { loadNativeAddon } from "./addon.ts";
import { relErr, sameBits, quietSuiteBackToWasm } from "./testing.ts";
import { nativeCausalAttention, nativeRotary } from "./attention.ts";

const load = loadNativeAddon();

// [batch, seq, heads, headDim]: head sizes below, at and between the 8- and 32-wide blocks.
const SHAPES: [number, number, number, number][] = [
  [3, 7, 2, 5],
  [2, 64, 4, 32],
  [1, 19, 3, 40],
  [2, 33, 1, 16],
  [1, 1, 1, 1],
  [0, 8, 2, 4],
];

// The transformer's own op-by-op attention (models/transformer.ts), on qkv [B·T, 3·H·dh].
function reference(qkv: tf.Tensor2D, b: number, t: number, nh: number, dh: number): tf.Tensor2D {
  const mask = tf.linalg
    .bandPart(tf.ones([t, t]), -1, 0)
    .sub(1)
    .mul(1e9);
  const heads = qkv.reshape([b, t, 3 * nh, dh]).transpose([0, 2, 1, 3]);
  const [q, k, v] = tf.split(heads, 3, 1).map((x) => x.reshape([b * nh, t, dh]) as tf.Tensor3D) as [tf.Tensor3D, tf.Tensor3D, tf.Tensor3D];
  const scores = tf
    .matMul(q, k.transpose([0, 2, 1]))
    .mul(1 / Math.sqrt(dh))
    .add(mask);
  const att = tf.matMul(tf.softmax(scores, -1), v);
  return att
    .reshape([b, nh, t, dh])
    .transpose([0, 2, 1, 3])
    .reshape([b * t, nh * dh]) as tf.Tensor2D;
}

function run(native: boolean, [b, t, h, dh]: [number, number, number, number]): Float32Array[] {
  return tf.tidy(() => {
    const qkv = tf.randomNormal([b * t, 3 * h * dh], 0, 1.5, "float32", 70 + t) as tf.Tensor2D;
    const w = tf.randomNormal([b * t, h * dh], 0, 1, "float32", 80 + t);
    const f = (x: tf.Tensor) => (native ? nativeCausalAttention(x as tf.Tensor2D, b, h) : reference(x as tf.Tensor2D, b, t, h, dh));
    const [g] = tf.grads((x: tf.Tensor) => f(x).mul(w).sum())([qkv]);
    return [f(qkv), g!].map((x) => x.dataSync() as Float32Array);
  });
}

describe.skipIf(!load.ok)("native fused causal attention", () => {
  quietSuiteBackToWasm();

  it("matches the op-by-op attention on cpu, value and gradient, for odd and empty shapes", async () => {
    await tf.setBackend("cpu");
    const want = SHAPES.map((s) => run(false, s));
    await selectBackend({ force: "native", threads: 1 });
    for (const [i, s] of SHAPES.entries()) {
      const got = run(true, s);
      expect(got[0]!.length, `${s}`).toBe(want[i]![0]!.length);
      for (let j = 0; j < 2; j++) expect(relErr(got[j]!, want[i]![j]!), `${s} #${j}`).toBeLessThan(2e-5);
    }
  });

  it("gives the same bits for 1, 2 and 3 threads", async () => {
    const runs: Float32Array[][] = [];
    for (const threads of [1, 2, 3]) {
      await selectBackend({ force: "native", threads });
      runs.push(SHAPES.slice(0, 3).flatMap((s) => run(true, s)));
    }
    for (const r of runs.slice(1)) for (const [i, v] of r.entries()) expect(sameBits(v, runs[0]![i]!), `output ${i}`).toBe(true);
  });

  it("rejects a qkv that is not [batch·seq, 3·heads·headDim]", async () => {
    await selectBackend({ force: "native", threads: 1 });
    expect(() => tf.tidy(() => nativeCausalAttention(tf.zeros([6, 10]) as tf.Tensor2D, 2, 2))).toThrow(/not \[batch·seq, 3·heads·headDim\]/);
  });
});

// [batch, seq, heads, kvHeads, headDim]: groups of 1, 2, 3 and 4 query heads per key/value head.
const GQA_SHAPES: [number, number, number, number, number][] = [
  [2, 9, 4, 2, 6],
  [1, 33, 6, 2, 16],
  [2, 17, 4, 1, 10],
  [3, 5, 3, 3, 4],
  [1, 1, 2, 1, 2],
  [0, 8, 4, 2, 4],
];

// Hugging Face's rotate-half tables, as the model builds them ([seq, dh], each half repeated).
function ropeTables(t: number, dh: number, theta = 10000): [tf.Tensor2D, tf.Tensor2D] {
  const cos = new Float32Array(t * dh);
  const sin = new Float32Array(t * dh);
  for (let p = 0; p < t; p++) {
    for (let j = 0; j < dh / 2; j++) {
      const a = p / Math.pow(theta, (2 * j) / dh);
      cos[p * dh + j] = cos[p * dh + j + dh / 2] = Math.cos(a);
      sin[p * dh + j] = sin[p * dh + j + dh / 2] = Math.sin(a);
    }
  }
  return [tf.tensor2d(cos, [t, dh]), tf.tensor2d(sin, [t, dh])];
}

// The transformer's op-by-op grouped-query attention with rotary positions (models/transformer.ts).
function gqaReference(qkv: tf.Tensor2D, b: number, t: number, nh: number, nkv: number, dh: number, rope: boolean): tf.Tensor2D {
  const mask = tf.linalg
    .bandPart(tf.ones([t, t]), -1, 0)
    .sub(1)
    .mul(1e9);
  const heads = qkv.reshape([b, t, nh + 2 * nkv, dh]).transpose([0, 2, 1, 3]);
  const [q4, k4, v4] = tf.split(heads, [nh, nkv, nkv], 1);
  let q = q4!.reshape([b * nh, t, dh]) as tf.Tensor3D;
  let k = k4!.reshape([b * nkv, t, dh]) as tf.Tensor3D;
  if (rope) {
    const [cos, sin] = ropeTables(t, dh);
    const rot = (x: tf.Tensor3D) => {
      const n = x.shape[0];
      const x1 = x.slice([0, 0, 0], [n, t, dh / 2]);
      const x2 = x.slice([0, 0, dh / 2], [n, t, dh / 2]);
      return x.mul(cos).add(tf.concat([x2.neg(), x1], -1).mul(sin)) as tf.Tensor3D;
    };
    q = rot(q);
    k = rot(k);
  }
  const g = nh / nkv;
  const rep = (x: tf.Tensor3D) =>
    x
      .reshape([b * nkv, 1, t * dh])
      .tile([1, g, 1])
      .reshape([b * nh, t, dh]) as tf.Tensor3D;
  const scores = tf
    .matMul(q, rep(k).transpose([0, 2, 1]))
    .mul(1 / Math.sqrt(dh))
    .add(mask);
  const att = tf.matMul(tf.softmax(scores, -1), rep(v4!.reshape([b * nkv, t, dh]) as tf.Tensor3D));
  return att
    .reshape([b, nh, t, dh])
    .transpose([0, 2, 1, 3])
    .reshape([b * t, nh * dh]) as tf.Tensor2D;
}

function runGqa(native: boolean, [b, t, h, hkv, dh]: [number, number, number, number, number], rope: boolean): Float32Array[] {
  return tf.tidy(() => {
    const qkv = tf.randomNormal([b * t, (h + 2 * hkv) * dh], 0, 1.5, "float32", 170 + t) as tf.Tensor2D;
    const w = tf.randomNormal([b * t, h * dh], 0, 1, "float32", 180 + t);
    const f = (x: tf.Tensor) => {
      if (!native) return gqaReference(x as tf.Tensor2D, b, t, h, hkv, dh, rope);
      // Tables longer than the sequence, as the model's (seqLen rows) are.
      const [cos, sin] = ropeTables(t + 5, dh);
      const y = rope ? nativeRotary(x as tf.Tensor2D, cos, sin, b, h, hkv) : (x as tf.Tensor2D);
      return nativeCausalAttention(y, b, h, hkv);
    };
    const [g] = tf.grads((x: tf.Tensor) => f(x).mul(w).sum())([qkv]);
    return [f(qkv), g!].map((x) => x.dataSync() as Float32Array);
  });
}

describe.skipIf(!load.ok)("native fused attention: grouped-query heads and rotary positions", () => {
  quietSuiteBackToWasm();

  for (const rope of [false, true]) {
    it(`matches the op-by-op attention on cpu, value and gradient (${rope ? "rotary" : "no positions"})`, async () => {
      await tf.setBackend("cpu");
      const want = GQA_SHAPES.map((s) => runGqa(false, s, rope));
      await selectBackend({ force: "native", threads: 1 });
      for (const [i, s] of GQA_SHAPES.entries()) {
        const got = runGqa(true, s, rope);
        expect(got[0]!.length, `${s}`).toBe(want[i]![0]!.length);
        for (let j = 0; j < 2; j++) expect(relErr(got[j]!, want[i]![j]!), `${s} #${j}`).toBeLessThan(2e-5);
      }
    });
  }

  it("the rotary kernel gives the op-by-op rotation's bits on wasm, value and gradient", async () => {
    await selectBackend({ force: "native", threads: 1 });
    const [b, t, h, hkv, dh] = [2, 7, 4, 2, 8];
    const run = (native: boolean) =>
      tf.tidy(() => {
        const [cos, sin] = ropeTables(t, dh);
        const x = tf.randomNormal([b * t, (h + 2 * hkv) * dh], 0, 1, "float32", 5) as tf.Tensor2D;
        const w = tf.randomNormal([b * t, (h + 2 * hkv) * dh], 0, 1, "float32", 6);
        const f = (a: tf.Tensor) => {
          if (native) return nativeRotary(a as tf.Tensor2D, cos, sin, b, h, hkv);
          const heads = a.reshape([b, t, h + 2 * hkv, dh]).transpose([0, 2, 1, 3]);
          const [qk, v] = tf.split(heads, [h + hkv, hkv], 1);
          const n = b * (h + hkv);
          const x3 = qk!.reshape([b, h + hkv, t, dh]);
          const x1 = x3.slice([0, 0, 0, 0], [b, h + hkv, t, dh / 2]);
          const x2 = x3.slice([0, 0, 0, dh / 2], [b, h + hkv, t, dh / 2]);
          const r = x3.mul(cos).add(tf.concat([x2.neg(), x1], -1).mul(sin));
          expect(n).toBe(b * (h + hkv));
          return tf
            .concat([r, v!], 1)
            .transpose([0, 2, 1, 3])
            .reshape([b * t, (h + 2 * hkv) * dh]);
        };
        const [g] = tf.grads((a: tf.Tensor) => f(a).mul(w).sum())([x]);
        return [f(x), g!].map((y) => y.dataSync() as Float32Array);
      });
    const got = run(true);
    const want = run(false);
    expect(sameBits(got[0]!, want[0]!), "value").toBe(true);
    expect(relErr(got[1]!, want[1]!), "gradient").toBeLessThan(1e-6);
  });

  it("gives the same bits for 1, 2 and 3 threads", async () => {
    const runs: Float32Array[][] = [];
    for (const threads of [1, 2, 3]) {
      await selectBackend({ force: "native", threads });
      runs.push(GQA_SHAPES.slice(0, 4).flatMap((s) => runGqa(true, s, true)));
    }
    for (const r of runs.slice(1)) for (const [i, v] of r.entries()) expect(sameBits(v, runs[0]![i]!), `output ${i}`).toBe(true);
  });

  it("rejects a key/value head count that does not divide the heads, and short rotary tables", async () => {
    await selectBackend({ force: "native", threads: 1 });
    expect(() => tf.tidy(() => nativeCausalAttention(tf.zeros([6, 28]) as tf.Tensor2D, 2, 4, 3))).toThrow(/kvHeads 3/);
    const [cos, sin] = ropeTables(2, 4);
    expect(() => tf.tidy(() => nativeRotary(tf.zeros([6, 32]) as tf.Tensor2D, cos, sin, 2, 4, 2))).toThrow(/not \[≥3, 4\]/);
  });
});
