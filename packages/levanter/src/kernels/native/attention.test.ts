// The fused causal attention kernels against the model's op-by-op attention on the pure-JS cpu
// backend (value and gradient; odd head sizes, one-token sequences, an empty batch), and their
// bits for 1, 2 and 3 threads.
import * as tf from "@tensorflow/tfjs";
import { describe, expect, it } from "vitest";
import { selectBackend } from "../../backend.ts";
import { loadNativeAddon } from "./addon.ts";
import { relErr, sameBits, quietSuiteBackToWasm } from "./testing.ts";
import { nativeCausalAttention } from "./attention.ts";

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
  const mask = tf.linalg.bandPart(tf.ones([t, t]), -1, 0).sub(1).mul(1e9);
  const heads = qkv.reshape([b, t, 3 * nh, dh]).transpose([0, 2, 1, 3]);
  const [q, k, v] = tf.split(heads, 3, 1).map((x) => x.reshape([b * nh, t, dh]) as tf.Tensor3D) as [tf.Tensor3D, tf.Tensor3D, tf.Tensor3D];
  const scores = tf.matMul(q, k.transpose([0, 2, 1])).mul(1 / Math.sqrt(dh)).add(mask);
  const att = tf.matMul(tf.softmax(scores, -1), v);
  return att.reshape([b, nh, t, dh]).transpose([0, 2, 1, 3]).reshape([b * t, nh * dh]) as tf.Tensor2D;
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
