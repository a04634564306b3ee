// Per-kernel time of a piece of work on the active backend (tf.profile, aggregated by kernel), and
// the matMul rate that calibrates throughput benchmarks.
import { tf } from "../tf.ts";

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

/**
 * Measures the active backend's rank-2 matMul rate for `[m,k]·[k,n]`, in GFLOP/s of wall time and
 * of this process's CPU time: a calibration figure for throughput benchmarks on shared machines
 * (tfjs-on-node.md measured 22.9 GFLOP/s for `[1024,128]·[128,512]` on wasm, unloaded).
 */
export function measureMatMulGflops(m = 1024, k = 128, n = 512, reps = 20): { wall: number; cpu: number } {
  return tf.tidy(() => {
    const a = tf.randomNormal([m, k]) as tf.Tensor2D;
    const b = tf.randomNormal([k, n]) as tf.Tensor2D;
    tf.matMul(a, b).dataSync(); // warm-up
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) tf.tidy(() => void tf.matMul(a, b).dataSync());
    const seconds = (performance.now() - t0) / 1000;
    const c = process.cpuUsage(c0);
    const flops = 2 * m * k * n * reps;
    return { wall: flops / seconds / 1e9, cpu: flops / ((c.user + c.system) / 1e6) / 1e9 };
  });
}
