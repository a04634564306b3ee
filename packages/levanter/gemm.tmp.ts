import * as tf from "@tensorflow/tfjs";
import { selectBackend } from "./src/backend.ts";
for (const gemm of ["openblas", "vendored"]) {
  process.env.LEVANTER_NATIVE_GEMM = gemm;
  for (const threads of [1, 2]) {
    await selectBackend({ force: "native", threads });
    const out: string[] = [];
    for (const [m, k, n] of [[1024, 128, 512], [1024, 256, 1024], [1024, 1024, 256]]) {
      const a = tf.randomNormal([m!, k!]), b = tf.randomNormal([k!, n!]);
      for (let i = 0; i < 3; i++) tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D).dispose();
      const reps = 30;
      const c0 = process.cpuUsage(); const t0 = performance.now();
      for (let i = 0; i < reps; i++) tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D).dispose();
      const s = (performance.now() - t0) / 1000; const cu = process.cpuUsage(c0);
      const fl = 2 * m! * k! * n! * reps;
      out.push(`${m}x${k}x${n}: ${(fl / s / 1e9).toFixed(1)} wall, ${(fl / ((cu.user + cu.system) / 1e6) / 1e9).toFixed(1)} /cpu-s`);
      a.dispose(); b.dispose();
    }
    console.log(gemm, threads, out.join(" | "));
  }
}
