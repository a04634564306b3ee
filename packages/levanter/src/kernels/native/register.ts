// The registration list of levanter's native kernels, installed over the tfjs wasm backend (they
// read and write its heap in place, so every other wasm kernel keeps working on the same
// tensors), and the switch that restores the kernels they replaced.
import { tf } from "../../tf.ts";
import type { NativeAddon } from "./addon.ts";
import { ADAMW_KERNEL, nativeAdamW } from "./adamw.ts";
import { SWIGLU_GRAD_KERNEL, SWIGLU_KERNEL, nativeSwigluGradKernel, nativeSwigluKernel } from "./swiglu.ts";
import { ATTENTION_GRAD_KERNEL, ATTENTION_KERNEL, ROTARY_KERNEL, nativeAttentionGradKernel, nativeAttentionKernel, nativeRotaryKernel } from "./attention.ts";
import { nativeBatchMatMul } from "./batchMatMul.ts";
import { nativeBinary } from "./binary.ts";
import { CROSS_ENTROPY_GRAD_KERNEL, CROSS_ENTROPY_KERNEL, nativeCrossEntropy, nativeCrossEntropyGrad } from "./crossEntropy.ts";
import { nativeExp } from "./exp.ts";
import { nativeFusedMatMul } from "./fusedMatMul.ts";
import { GELU_GRAD_KERNEL, GELU_KERNEL, nativeGeluGradKernel, nativeGeluKernel } from "./gelu.ts";
import { NORM_GRAD_KERNEL, NORM_KERNEL, nativeNormGradKernel, nativeNormKernel } from "./norm.ts";
import { nativeUnsortedSegmentSum } from "./segmentSum.ts";
import { nativeSoftmax } from "./softmax.ts";
import { nativeSum } from "./sum.ts";

/**
 * One native kernel: a tfjs kernel it replaces on wasm (built around the replaced one, which
 * runs what it does not take), or a levanter kernel of its own (`fallback` undefined).
 */
export interface NativeKernel {
  kernelName: string;
  make(addon: NativeAddon, fallback: tf.KernelFunc): tf.KernelFunc;
}

const own = (make: (addon: NativeAddon) => tf.KernelFunc) => (addon: NativeAddon) => make(addon);

/** Every kernel the native backend registers (one file per kernel family under this folder). */
export const NATIVE_KERNELS: NativeKernel[] = [
  { kernelName: "BatchMatMul", make: nativeBatchMatMul },
  { kernelName: "_FusedMatMul", make: nativeFusedMatMul },
  { kernelName: "Softmax", make: nativeSoftmax },
  { kernelName: "Exp", make: nativeExp },
  { kernelName: "Add", make: nativeBinary("Add") },
  { kernelName: "Sub", make: nativeBinary("Sub") },
  { kernelName: "Multiply", make: nativeBinary("Multiply") },
  { kernelName: "RealDiv", make: nativeBinary("RealDiv") },
  { kernelName: "UnsortedSegmentSum", make: nativeUnsortedSegmentSum },
  { kernelName: "Sum", make: nativeSum },
  { kernelName: ADAMW_KERNEL, make: own(nativeAdamW) },
  { kernelName: ATTENTION_KERNEL, make: own(nativeAttentionKernel) },
  { kernelName: ATTENTION_GRAD_KERNEL, make: own(nativeAttentionGradKernel) },
  { kernelName: ROTARY_KERNEL, make: own(nativeRotaryKernel) },
  { kernelName: SWIGLU_KERNEL, make: own(nativeSwigluKernel) },
  { kernelName: SWIGLU_GRAD_KERNEL, make: own(nativeSwigluGradKernel) },
  { kernelName: CROSS_ENTROPY_KERNEL, make: own(nativeCrossEntropy) },
  { kernelName: CROSS_ENTROPY_GRAD_KERNEL, make: own(nativeCrossEntropyGrad) },
  { kernelName: GELU_KERNEL, make: own(nativeGeluKernel) },
  { kernelName: GELU_GRAD_KERNEL, make: own(nativeGeluGradKernel) },
  { kernelName: NORM_KERNEL, make: own(nativeNormKernel) },
  { kernelName: NORM_GRAD_KERNEL, make: own(nativeNormGradKernel) },
];

/** Kernel name → what was registered before (null: nothing, a levanter kernel of its own). */
const replaced = new Map<string, tf.KernelConfig | null>();
let active: NativeAddon | undefined;

/** Whether the native kernels are currently registered over wasm. */
export function nativeKernelsInstalled(): boolean {
  return replaced.size > 0;
}

/** The addon whose kernels are registered, if any. */
export function activeNativeAddon(): NativeAddon | undefined {
  return active;
}

/** Registers {@link NATIVE_KERNELS} over the wasm backend (idempotent). Returns the kernel names. */
export function installNativeKernels(addon: NativeAddon): string[] {
  if (replaced.size > 0) return [...replaced.keys()];
  const missing: tf.KernelFunc = () => {
    throw new Error("levanter native: kernel has no fallback");
  };
  for (const k of NATIVE_KERNELS) {
    const orig = tf.getKernel(k.kernelName, "wasm");
    replaced.set(k.kernelName, orig ?? null);
    if (orig) tf.unregisterKernel(k.kernelName, "wasm");
    tf.registerKernel({ ...(orig ?? { kernelName: k.kernelName, backendName: "wasm" }), kernelFunc: k.make(addon, orig?.kernelFunc ?? missing) });
  }
  active = addon;
  return [...replaced.keys()];
}

/** Restores the wasm kernels that {@link installNativeKernels} replaced (plain wasm again). */
export function uninstallNativeKernels(): void {
  for (const [name, orig] of replaced) {
    tf.unregisterKernel(name, "wasm");
    if (orig) tf.registerKernel(orig);
  }
  replaced.clear();
  active = undefined;
}

/** Whether the `native` backend is active: its kernels registered and tfjs on wasm. */
export function nativeActive(): boolean {
  return nativeKernelsInstalled() && tf.getBackend() === "wasm";
}
