// Access to the tfjs wasm backend's heap for native kernels: the memory, and where a tensor lives.
import type * as tf from "@tensorflow/tfjs";

/** The parts of tfjs-backend-wasm's BackendWasm that the native kernels use. */
export interface WasmBackendInternals {
  wasm: { asm: Record<string, unknown> };
  dataIdMap: { get(dataId: object): { memoryOffset: number } | undefined };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  readSync(dataId: object): tf.TypedArray;
  typedArrayFromHeap(t: tf.TensorInfo): tf.TypedArray;
}

const memories = new WeakMap<object, WebAssembly.Memory | null>();

/** The wasm module's memory (null when it exports none); found once per module. */
export function wasmMemory(be: WasmBackendInternals): WebAssembly.Memory | null {
  let m = memories.get(be.wasm);
  if (m === undefined) {
    m = Object.values(be.wasm.asm).find((v): v is WebAssembly.Memory => v instanceof WebAssembly.Memory) ?? null;
    memories.set(be.wasm, m);
  }
  return m;
}

/** Byte offset of a tensor's data in the wasm heap. */
export function offsetOf(be: WasmBackendInternals, t: tf.TensorInfo): number {
  const d = be.dataIdMap.get(t.dataId);
  if (!d) throw new Error("levanter native: tensor not on the wasm backend");
  return d.memoryOffset;
}
