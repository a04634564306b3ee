// An op, not a registered kernel: the model's rank-2 products, shaped for wasm's fast GEMM (same
// values as tf.matMul on every backend).
import { tf } from "../../tf.ts";
import { nativeActive } from "../native/register.ts";

/**
 * A rank-2 matMul whose gradient uses explicit transposes instead of matMul's transpose flags:
 * wasm runs only flag-free rank-2 matMuls on its fast GEMM, which makes backward ~4× faster there.
 * Same values as `tf.matMul` on every backend. Reshape `[B,T,D]` to `[B·T,D]` before calling.
 */
export const matMul2d = tf.customGrad((a, b, save) => {
  (save as tf.GradSaveFunc)([a as tf.Tensor, b as tf.Tensor]);
  return {
    value: tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D),
    gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
      const g = dy as tf.Tensor2D;
      const [sa, sb] = saved as [tf.Tensor2D, tf.Tensor2D];
      // The native GEMM takes transpose flags at full speed: no Transpose kernels needed.
      if (nativeActive()) return [tf.matMul(g, sb, false, true), tf.matMul(sa, g, true, false)];
      // dW = aᵀ·dy, or (dyᵀ·a)ᵀ when that transposes fewer elements (a wide `a`, as in an MLP's
      // down projection): wasm's Transpose is memory-bound.
      const [m, k] = sa.shape;
      const n = g.shape[1];
      const dW = m * k <= m * n + k * n ? tf.matMul(sa.transpose(), g) : tf.matMul(g.transpose(), sa).transpose();
      return [tf.matMul(g, sb.transpose()), dW];
    },
  };
}) as (a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D;
