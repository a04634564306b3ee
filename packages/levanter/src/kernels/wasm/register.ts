// The registration list of levanter's wasm kernels: what tfjs-backend-wasm lacks (a kernel it has
// none of) and faster versions of kernels it has (each built around the replaced one, which runs
// what it does not take). One file per kernel under this folder; the backend selection
// (backend.ts) calls installWasmFixes() when it starts wasm, before any native kernel goes over.
import { tf } from "../../tf.ts";
import { wasmBatchMatMul } from "./batchMatMul.ts";
import { wasmGather } from "./gather.ts";
import { wasmSharedIdentity } from "./identity.ts";
import { wasmUnsortedSegmentSum } from "./segmentSum.ts";
import { wasmSlice, wasmSplitV } from "./slice.ts";

/**
 * One wasm kernel: it replaces wasm's kernel of that name (`make` gets the original), or, with
 * `replaces: false`, adds one that wasm lacks (registered only while none is).
 */
export type WasmKernel = { kernelName: string; replaces: true; make(original: tf.KernelFunc): tf.KernelFunc } | { kernelName: string; replaces: false; make(): tf.KernelFunc };

/** Every kernel levanter registers on the wasm backend, in registration order. */
export const WASM_KERNELS: WasmKernel[] = [
  { kernelName: "GatherV2", replaces: true, make: wasmGather },
  { kernelName: "Slice", replaces: true, make: wasmSlice },
  { kernelName: "SplitV", replaces: true, make: wasmSplitV },
  { kernelName: "Identity", replaces: true, make: wasmSharedIdentity },
  { kernelName: "BatchMatMul", replaces: true, make: wasmBatchMatMul },
  { kernelName: "UnsortedSegmentSum", replaces: false, make: () => wasmUnsortedSegmentSum },
];

// Marks a kernel config levanter registered, so a second install leaves it (and a native kernel
// registered over it, which copies the config) alone.
const MARK = Symbol.for("levanter.wasmKernel");

/**
 * Registers {@link WASM_KERNELS} on the wasm backend. Idempotent: a kernel already replaced is
 * left as it is (also when a native kernel now runs over it).
 */
export function installWasmFixes(): void {
  for (const k of WASM_KERNELS) {
    const orig = tf.getKernel(k.kernelName, "wasm");
    if (k.replaces) {
      if (!orig || (orig as unknown as Record<symbol, boolean>)[MARK]) continue;
      tf.unregisterKernel(k.kernelName, "wasm");
      tf.registerKernel({ ...orig, kernelFunc: k.make(orig.kernelFunc), [MARK]: true } as tf.KernelConfig);
    } else if (!orig) {
      tf.registerKernel({ kernelName: k.kernelName, backendName: "wasm", kernelFunc: k.make() });
    }
  }
}
