// Loads levanter's native kernel addon (native/, built by node-gyp at install) and describes
// its N-API surface. The `.node` file is found from the package root, so this works from src/
// and from a compiled dist/ alike. LEVANTER_NATIVE=off makes the loader behave as if the addon
// were absent (the fallback path's test switch). The GEMM engine is the faster of the vendored GEMM
// and the system OpenBLAS (where the build linked it) on this machine, by a calibration of a few
// milliseconds run once per process; LEVANTER_NATIVE_GEMM=vendored|openblas forces one (auto: the
// calibration).
import { createRequire } from "node:module";
import path from "node:path";

/** Activation codes of the native GEMM epilogue (tfjs `_FusedMatMul` names). */
export const NATIVE_ACT = { linear: 0, relu: 1, relu6: 2, leakyrelu: 3, sigmoid: 4, elu: 5 } as const;

/** What the addon reports about itself. */
export interface NativeInfo {
  /** Whether the build linked the system OpenBLAS. */
  openblas: boolean;
  /** The GEMM engine in use. */
  gemm: "openblas" | "vendored";
  /** The vendored GEMM's micro-kernel. */
  isa: "scalar" | "avx2" | "avx512";
  threads: number;
}

/**
 * The addon's functions. Pointers are byte offsets into `heap` (the tfjs wasm heap's
 * ArrayBuffer, taken after every allocation since growth replaces it); -1 means "none".
 */
export interface NativeAddon {
  info(): NativeInfo;
  setThreads(threads: number): void;
  setGemm(engine: "openblas" | "vendored"): boolean;
  setIsa(isa: "auto" | "scalar" | "avx2" | "avx512"): boolean;
  matmul(
    heap: ArrayBufferLike,
    a: number,
    b: number,
    c: number,
    batches: number,
    m: number,
    n: number,
    k: number,
    transA: boolean,
    transB: boolean,
    strideA: number,
    strideB: number,
    bias: number,
    biasMode: number,
    biasStride: number,
    act: number,
    alpha: number,
  ): void;
  [op: string]: unknown;
}

/** The outcome of {@link loadNativeAddon}: the addon, or why it could not be used. */
export type NativeLoad = { ok: true; addon: NativeAddon; path: string } | { ok: false; reason: string };

let cached: NativeLoad | undefined;
let calibration: GemmCalibration | undefined;
/** The engine a data-parallel gang agreed on (rank 0's), overriding this process's calibration. */
let agreed: "openblas" | "vendored" | undefined;

/** How the GEMM engine was picked: each engine's best time on the calibration products (seconds). */
export interface GemmCalibration {
  vendored: number;
  /** Absent where the build has no OpenBLAS (then nothing was timed but the vendored GEMM). */
  openblas?: number;
  /** The faster engine (the vendored GEMM on a tie or without OpenBLAS). */
  pick: "openblas" | "vendored";
}

/**
 * The calibration behind the default GEMM pick: run on first use, then cached for the process
 * (the pick never changes within a process, so results stay bitwise stable across thread counts
 * and runs of the same process). Undefined where the addon does not load.
 */
export function nativeGemmCalibration(): GemmCalibration | undefined {
  const load = loadNativeAddon();
  if (!load.ok) return undefined;
  return calibrate(load.addon);
}

function calibrate(addon: NativeAddon): GemmCalibration {
  if (calibration) return calibration;
  const fn = addon.gemmCalibrate as (() => { vendored: number; openblas?: number }) | undefined;
  if (!addon.info().openblas || typeof fn !== "function") {
    calibration = { vendored: 0, pick: "vendored" };
    return calibration;
  }
  const t = fn();
  calibration = {
    vendored: t.vendored,
    ...(t.openblas !== undefined ? { openblas: t.openblas } : {}),
    pick: t.openblas !== undefined && t.openblas < t.vendored ? "openblas" : "vendored",
  };
  return calibration;
}

/**
 * Makes this process use `engine` instead of its own calibration's pick (LEVANTER_NATIVE_GEMM still
 * wins): the ranks of a data-parallel gang each calibrate, and two engines that time close on a
 * machine could be picked differently by different ranks, whose gradients then differ in the last
 * bits; the gang takes rank 0's pick so that N ranks keep giving one rank's bits.
 */
export function agreeOnNativeGemm(engine: "openblas" | "vendored"): void {
  agreed = engine;
  if (cached?.ok) loadNativeAddon();
}

/** The GEMM engine this process multiplies with, or undefined where the addon does not load. */
export function nativeGemmEngine(): "openblas" | "vendored" | undefined {
  const load = loadNativeAddon();
  return load.ok ? load.addon.info().gemm : undefined;
}

/** Where the built addon lives: `<package root>/native/build/Release/levanter_native.node`. */
export function nativeAddonPath(): string {
  const require = createRequire(import.meta.url);
  const root = path.dirname(require.resolve("@marin/levanter/package.json"));
  return path.join(root, "native", "build", "Release", "levanter_native.node");
}

/** Loads the addon once (or reports why not); honours LEVANTER_NATIVE=off and LEVANTER_NATIVE_GEMM. */
export function loadNativeAddon(): NativeLoad {
  if (process.env.LEVANTER_NATIVE?.trim() === "off") return { ok: false, reason: "disabled by LEVANTER_NATIVE=off" };
  if (!cached) cached = loadOnce();
  if (cached.ok) {
    const asked = process.env.LEVANTER_NATIVE_GEMM?.trim() || "auto";
    if (asked !== "vendored" && asked !== "openblas" && asked !== "auto") {
      return { ok: false, reason: `LEVANTER_NATIVE_GEMM: expected openblas | vendored | auto, got "${asked}"` };
    }
    const want = asked === "auto" ? (agreed ?? calibrate(cached.addon).pick) : asked;
    if (!cached.addon.setGemm(want)) return { ok: false, reason: `LEVANTER_NATIVE_GEMM=${want}: this build has no OpenBLAS` };
  }
  return cached;
}

function loadOnce(): NativeLoad {
  let file = "";
  try {
    file = nativeAddonPath();
    // OpenBLAS reads this when the addon loads it: levanter splits products itself and calls it
    // single-threaded, so OpenBLAS's own thread pool would only burn CPU.
    process.env.OPENBLAS_NUM_THREADS ??= "1";
    const addon = createRequire(import.meta.url)(file) as NativeAddon;
    return { ok: true, addon, path: file };
  } catch (e) {
    const msg = e instanceof Error ? e.message.split("\n")[0]! : String(e);
    const missing = /Cannot find module/.test(msg);
    return {
      ok: false,
      reason: missing ? `addon not built (${file}; run \`pnpm --filter @marin/levanter build:native\`)` : `addon failed to load: ${msg}`,
    };
  }
}
