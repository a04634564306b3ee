// wasm's Identity copies its input; autodiff and customGrad run one per saved or passed-through
// tensor (~170 per small-model step). Sharing the buffer by reference count, as the cpu backend
// does, is safe because kernels never write to their inputs.
import type * as tf from "@tensorflow/tfjs";

/** Identity built around wasm's own (`orig`, which still copies strings). */
export function wasmSharedIdentity(orig: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo };
    if (x.dtype === "string") return orig(args);
    (args.backend as unknown as { incRef(dataId: object): void }).incRef(x.dataId);
    return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
  };
}
