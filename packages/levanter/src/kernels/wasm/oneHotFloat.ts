// An op, not a registered kernel: the float32 one-hot the loss uses on every backend, working
// around wasm's float32 oneHot.
import { tf } from "../../tf.ts";

/**
 * A float32 one-hot that is correct on wasm: wasm's float32 `oneHot` returns integer bit
 * patterns (which silently zeroes a cross-entropy loss), so build it as int32 and cast.
 */
export function oneHotFloat(ids: tf.Tensor, depth: number): tf.Tensor {
  return tf.tidy(() => tf.oneHot(ids.toInt(), depth).toFloat());
}
