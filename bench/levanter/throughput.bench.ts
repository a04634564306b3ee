// Training throughput (tokens/s) and MFU of levanter's transformer on every TensorFlow.js backend
// that loads here, for the two reference models of issue 4 and a Llama-shaped one (issue 31). One training step = forward, backward
// (explicit-transpose matMul gradients) and an AdamW update, exactly as trainLm runs it.
//
// native (levanter's N-API kernels; once with the GEMM its calibration picks, the default, then once
// with the system OpenBLAS and once with the vendored GEMM forced)
// and wasm run once per thread count (`--threads`, default 1 and the number of cores), with the
// same bits for every count. Then a per-kernel profile of one native step, and — when
// /usr/bin/python3 can import torch (`apt-get install python3-torch libopenblas0-pthread`) — the
// same model trained by PyTorch (torchPeer.py) at the same thread counts, with ours/PyTorch.
//
// MFU is model FLOPs (3 × matMul FLOPs per token, see flopsPerToken) per second against a
// documented constant: the native 2-core SGEMM peak of ~188 GFLOP/s measured on the reference
// 2-core Zen 4 VM (shared/reference/tfjs-on-node.md §8); the single-threaded wasm backend can use
// one core, whose native peak is ~100 GFLOP/s (also printed).
//
// Usage: pnpm bench levanter/throughput [-- --steps N --backends native,wasm,cpu --threads 1,2 --models small,large,llama --cpu-large --no-torch]
import { spawnSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  AdamW,
  BACKEND_NAMES,
  Rng,
  ModelConfigSchema,
  TransformerLm,
  defaultDecayMask,
  nativeGemmCalibration,
  profileKernels,
  resolveModelConfig,
  selectBackend,
  setWasmThreads,
  type TfBackendName,
} from "@marin/levanter";
import { integerFlag } from "@marin/iris/toolkit";
import { computeGradients, measureMatMulGflops, trainingFlopsPerToken } from "@marin/levanter/internals";

const PEAK_2CORE = 188e9;
const PEAK_1CORE = 100e9;
// Reference figures from tfjs-on-node.md §8 (2-core Zen 4, unloaded), wasm with the matMul fix.
const BASELINE: Record<string, number> = { small: 3024, large: 641 };

const args = process.argv.slice(2);
const arg = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const backends = (arg("backends")?.split(",") ?? [...BACKEND_NAMES]) as TfBackendName[];
const stepsOverride = arg("steps") !== undefined ? integerFlag("steps", 0, { min: 1 }) : undefined;
const threadCounts = arg("threads")?.split(",").map(Number) ?? [...new Set([1, os.availableParallelism()])];

// llama: the large model's size in the Llama shape (grouped-query attention 8/2, rotary
// positions, SwiGLU of width 688 = levanter's default for dModel 256, RMSNorm, untied head).
const models = {
  small: { nLayers: 2, dModel: 128, nHeads: 4, seqLen: 64 },
  large: { nLayers: 4, dModel: 256, nHeads: 8, seqLen: 64 },
  llama: { nLayers: 4, dModel: 256, nHeads: 8, nKvHeads: 2, seqLen: 64, positions: "rope", norm: "rms", activation: "swiglu", dFF: 688, tieEmbeddings: false },
} as const;
const only = arg("models")?.split(",");
const chosen = Object.fromEntries(Object.entries(models).filter(([k]) => !only || only.includes(k)));
const BATCH = 16;

process.env.LEVANTER_LOG ??= "warn";
console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"})`,
);
console.log("backend  threads  model  params     ms/step  cpu-ms/step  tokens/s  tok/cpu-s  GFLOP/s  MFU(188)  MFU(1 core)  baseline tok/s");

/** tokens/s and tokens per CPU-second by `${variant}/${threads}/${model}` (variant: backend, or native/<gemm>). */
const results = new Map<string, number>();
const resultsCpu = new Map<string, number>();

// native/auto: the engine the calibration picks (the default); then each engine forced.
const variants = backends.flatMap((b) => (b === "native" ? ["native/auto", "native/openblas", "native/vendored"] : [b]));
for (const variant of variants) {
  const [backend, gemm] = variant.split("/") as [TfBackendName, string | undefined];
  if (gemm) process.env.LEVANTER_NATIVE_GEMM = gemm;
  else delete process.env.LEVANTER_NATIVE_GEMM;
  try {
    await selectBackend({ force: backend, threads: 1 });
  } catch (e) {
    console.log(`${variant.padEnd(8)} skipped: ${(e as Error).message.slice(0, 160)}`);
    continue;
  }
  // Calibration (one thread): on a shared machine, compare this with the unloaded 22.9 GFLOP/s
  // that tfjs' own wasm matMul reached on the reference VM.
  if (variant === "native/auto") {
    const c = nativeGemmCalibration();
    console.log(
      `native   GEMM pick: ${c?.pick} (calibration: vendored ${((c?.vendored ?? 0) * 1e3).toFixed(2)} ms, openblas ${c?.openblas !== undefined ? (c.openblas * 1e3).toFixed(2) + " ms" : "absent"})`,
    );
  }
  if (backend !== "cpu") {
    const g = measureMatMulGflops();
    console.log(
      `${variant.padEnd(8)} calibration: 1-thread matMul [1024,128]·[128,512] ${g.wall.toFixed(1)} GFLOP/s wall, ${g.cpu.toFixed(1)} per CPU-second (reference wasm, unloaded: 22.9)`,
    );
  }
  for (const threads of backend === "wasm" || backend === "native" ? threadCounts : [1]) {
    if (backend === "wasm") setWasmThreads(threads);
    if (backend === "native") await selectBackend({ force: "native", threads });
    for (const [label, m] of Object.entries(chosen)) {
      if (backend === "cpu" && label !== "small" && !args.includes("--cpu-large")) {
        console.log(`${variant.padEnd(8)} ${label.padEnd(6)} skipped: minutes per step on the pure-JS backend (pass --cpu-large)`);
        continue;
      }
      const cfg = resolveModelConfig(ModelConfigSchema.parse(m), 257);
      let seed = 12345;
      const ids = Int32Array.from({ length: BATCH * cfg.seqLen }, () => (seed = (seed * 1103515245 + 12345) >>> 0) % 257);
      const targets = ids.map((_, i) => ids[(i + 1) % ids.length]!);
      const model = TransformerLm.init(cfg, new Rng(0));
      const opt = new AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1, maxGradNorm: 1, decayMask: defaultDecayMask });
      const step = () => {
        const { grads } = computeGradients(model, ids, targets, BATCH);
        opt.apply(grads, 1e-3);
        for (const g of grads.values()) g.dispose();
      };
      const slow = backend === "cpu";
      const steps = stepsOverride ?? (slow ? 1 : label === "small" ? 10 : 5);
      if (!slow) step(); // warm-up (kernel setup, first allocations); cpu has nothing to warm up

      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < steps; i++) step();
      const ms = (performance.now() - t0) / steps;
      const cu = process.cpuUsage(c0);
      const cpuMs = (cu.user + cu.system) / 1000 / steps;
      const tokens = BATCH * cfg.seqLen;
      const tps = (tokens / ms) * 1000;
      results.set(`${variant}/${threads}/${label}`, tps);
      resultsCpu.set(`${variant}/${threads}/${label}`, (tokens / cpuMs) * 1000);
      const flops = trainingFlopsPerToken(cfg) * tps;
      console.log(
        [
          variant.padEnd(8),
          String(threads).padStart(7),
          label.padEnd(6),
          String(model.parameterCount()).padStart(9),
          ms.toFixed(0).padStart(9),
          cpuMs.toFixed(0).padStart(12),
          tps.toFixed(0).padStart(9),
          ((tokens / cpuMs) * 1000).toFixed(0).padStart(10),
          (flops / 1e9).toFixed(2).padStart(8),
          `${((flops / PEAK_2CORE) * 100).toFixed(2)}%`.padStart(9),
          `${((flops / PEAK_1CORE) * 100).toFixed(2)}%`.padStart(12),
          (backend === "wasm" ? String(BASELINE[label]) : "-").padStart(15),
        ].join(" "),
      );
      model.dispose();
      opt.dispose();
    }
  }
}

// Per-kernel profile of one native training step (small model, one thread).
if (variants.includes("native/openblas")) {
  try {
    delete process.env.LEVANTER_NATIVE_GEMM;
    await selectBackend({ force: "native", threads: 1 });
    const cfg = resolveModelConfig(ModelConfigSchema.parse(models.small), 257);
    const ids = Int32Array.from({ length: BATCH * cfg.seqLen }, (_, i) => (i * 7919) % 257);
    const targets = ids.map((_, i) => ids[(i + 1) % ids.length]!);
    const model = TransformerLm.init(cfg, new Rng(0));
    const opt = new AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1, maxGradNorm: 1, decayMask: defaultDecayMask });
    const step = () => {
      const { grads } = computeGradients(model, ids, targets, BATCH);
      opt.apply(grads, 1e-3);
      for (const g of grads.values()) g.dispose();
    };
    step();
    const { kernels, wallMs } = await profileKernels(step);
    const total = kernels.reduce((t, k) => t + k.ms, 0);
    console.log(`\nper-kernel profile, one native step (small, 1 thread, OpenBLAS): ${total.toFixed(1)} ms in kernels of ${wallMs.toFixed(1)} ms profiled wall`);
    for (const k of kernels.slice(0, 14))
      console.log(`  ${k.kernel.padEnd(26)} ${k.ms.toFixed(1).padStart(7)} ms ${String(k.calls).padStart(4)} calls ${((k.ms / total) * 100).toFixed(1).padStart(5)} %`);
    model.dispose();
    opt.dispose();
  } catch (e) {
    console.log(`profile skipped: ${(e as Error).message.slice(0, 160)}`);
  }
}

// The PyTorch peer: same model, optimizer, batch and sequence, in the same run.
const python = "/usr/bin/python3";
const hasTorch = !args.includes("--no-torch") && spawnSync(python, ["-c", "import torch"], { stdio: "ignore" }).status === 0;
if (!hasTorch) {
  console.log("\nPyTorch peer skipped: /usr/bin/python3 cannot import torch (apt-get install python3-torch libopenblas0-pthread)");
} else {
  const peer = path.join(path.dirname(fileURLToPath(import.meta.url)), "torchPeer.py");
  console.log("\nPyTorch peer (torchPeer.py), same shapes, AdamW, batch 16");
  console.log("ours/PyTorch in tokens/s, and in tokens per CPU-second (fairer on a shared machine)");
  console.log("model  threads   ms/step  cpu-ms/step  tokens/s  native/auto        native/openblas    native/vendored    wasm");
  for (const [label, m] of Object.entries(chosen)) {
    for (const threads of threadCounts) {
      const steps = stepsOverride ?? (label === "small" ? 10 : 5);
      const llama = "nKvHeads" in m ? ["--llama", "--kv-heads", String(m.nKvHeads), "--ffn", String(m.dFF)] : [];
      const r = spawnSync(
        python,
        [
          peer,
          "--layers",
          String(m.nLayers),
          "--d",
          String(m.dModel),
          "--heads",
          String(m.nHeads),
          "--seq",
          String(m.seqLen),
          "--batch",
          String(BATCH),
          "--steps",
          String(steps),
          "--threads",
          String(threads),
          ...llama,
        ],
        {
          encoding: "utf8",
          env: { ...process.env, OPENBLAS_NUM_THREADS: String(threads), OMP_NUM_THREADS: String(threads) },
        },
      );
      if (r.status !== 0) {
        console.log(`${label.padEnd(6)} ${String(threads).padStart(7)} failed: ${(r.stderr || "").trim().split("\n").pop()?.slice(0, 160)}`);
        continue;
      }
      const t = JSON.parse(r.stdout.trim().split("\n").pop()!) as { ms_per_step: number; cpu_ms_per_step: number; tokens_per_s: number };
      const ratio = (v: string) => {
        const ours = results.get(`${v}/${threads}/${label}`);
        const oursCpu = resultsCpu.get(`${v}/${threads}/${label}`);
        const peerCpu = (BATCH * m.seqLen * 1000) / t.cpu_ms_per_step;
        return ours && oursCpu ? `${(ours / t.tokens_per_s).toFixed(2)}× / ${(oursCpu / peerCpu).toFixed(2)}×` : "-";
      };
      console.log(
        [
          label.padEnd(6),
          String(threads).padStart(7),
          t.ms_per_step.toFixed(0).padStart(9),
          t.cpu_ms_per_step.toFixed(0).padStart(12),
          t.tokens_per_s.toFixed(0).padStart(9),
          ratio("native/auto").padStart(16),
          ratio("native/openblas").padStart(18),
          ratio("native/vendored").padStart(18),
          ratio("wasm").padStart(16),
        ].join(" "),
      );
    }
  }
}
