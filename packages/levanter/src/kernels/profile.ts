// Per-kernel time of a piece of work on the active backend (tf.profile, aggregated by kernel).
import * as tf from "@tensorflow/tfjs";

/** One kernel's share of a profiled run. */
export interface KernelTime {
  kernel: string;
  ms: number;
  calls: number;
}

/**
 * Runs `fn` under `tf.profile` and returns its kernels' time by kernel name, largest first.
 * customGrad wrappers ("forward") are left out: the kernels they run are listed themselves.
 */
export async function profileKernels(fn: () => void): Promise<{ kernels: KernelTime[]; wallMs: number }> {
  const t0 = performance.now();
  const prof = await tf.profile(() => fn());
  const wallMs = performance.now() - t0;
  const agg = new Map<string, KernelTime>();
  for (const k of prof.kernels) {
    if (k.name === "forward") continue;
    const a = agg.get(k.name) ?? { kernel: k.name, ms: 0, calls: 0 };
    a.ms += Number(k.kernelTimeMs);
    a.calls++;
    agg.set(k.name, a);
  }
  return { kernels: [...agg.values()].sort((a, b) => b.ms - a.ms), wallMs };
}
