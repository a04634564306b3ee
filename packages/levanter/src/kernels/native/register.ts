// The registration list of levanter's native kernels, installed over the tfjs wasm backend (they
// read and write its heap in place, so every other wasm kernel keeps working on the same
// tensors), and the switch that restores the kernels they replaced.
import * as tf from "@tensorflow/tfjs";
import type { NativeAddon } from "./addon.ts";
import { nativeBatchMatMul, nativeFusedMatMul } from "./batchMatMul.ts";

/** One native kernel: the tfjs kernel it replaces on wasm, built around the replaced one. */
export interface NativeKernel {
  kernelName: string;
  make(addon: NativeAddon, fallback: tf.KernelFunc): tf.KernelFunc;
}

/** Every kernel the native backend registers (one file per kernel family under this folder). */
export const NATIVE_KERNELS: NativeKernel[] = [
  { kernelName: "BatchMatMul", make: nativeBatchMatMul },
  { kernelName: "_FusedMatMul", make: nativeFusedMatMul },
];

const replaced = new Map<string, tf.KernelConfig>();

/** Whether the native kernels are currently registered over wasm. */
export function nativeKernelsInstalled(): boolean {
  return replaced.size > 0;
}

/** Registers {@link NATIVE_KERNELS} over the wasm backend (idempotent). Returns the kernel names. */
export function installNativeKernels(addon: NativeAddon): string[] {
  if (replaced.size > 0) return [...replaced.keys()];
  for (const k of NATIVE_KERNELS) {
    const orig = tf.getKernel(k.kernelName, "wasm");
    if (!orig) continue;
    replaced.set(k.kernelName, orig);
    tf.unregisterKernel(k.kernelName, "wasm");
    tf.registerKernel({ ...orig, kernelFunc: k.make(addon, orig.kernelFunc) });
  }
  return [...replaced.keys()];
}

/** Restores the wasm kernels that {@link installNativeKernels} replaced (plain wasm again). */
export function uninstallNativeKernels(): void {
  for (const [name, orig] of replaced) {
    tf.unregisterKernel(name, "wasm");
    tf.registerKernel(orig);
  }
  replaced.clear();
}
