// What the wasm kernels here use of tfjs-backend-wasm's backend object (not in its public types).
import type * as tf from "@tensorflow/tfjs";

/** The wasm backend's heap access: typed views are taken after every allocation (the heap may move). */
export interface WasmBackendLike {
  readSync(dataId: object): tf.TypedArray;
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  typedArrayFromHeap(t: tf.TensorInfo): tf.TypedArray;
}
