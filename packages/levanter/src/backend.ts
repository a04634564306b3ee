// Backend selection and the wasm workarounds (see shared/reference/tfjs-on-node.md). Nothing here
// runs at import time: callers invoke selectBackend() (or setBackend()) explicitly.
import * as tf from "@tensorflow/tfjs";
import { toInteger } from "@marin/iris/toolkit";
import { LevanterError } from "./errors.ts";
import { log } from "./internal/log.ts";
import os from "node:os";
import { installFastBatchMatMul, setWasmThreads, wasmThreads } from "./kernels/batchMatMul.ts";
import { loadNativeAddon, type NativeInfo } from "./kernels/native/addon.ts";
import { installNativeKernels, nativeKernelsInstalled, uninstallNativeKernels } from "./kernels/native/register.ts";

/** The backends levanter knows, in the order {@link selectBackend} tries them. */
export const BACKEND_NAMES = ["tensorflow-gpu", "tensorflow", "native", "wasm", "cpu"] as const;

/** One of {@link BACKEND_NAMES}; `LEVANTER_BACKEND` takes the same values. */
export type TfBackendName = (typeof BACKEND_NAMES)[number];

/** What {@link selectBackend} chose, and why each earlier candidate was skipped. */
export interface BackendSelection {
  name: TfBackendName;
  /** tfjs' own name for the active backend (`tf.getBackend()`). */
  tfBackend: string;
  skipped: { name: TfBackendName; reason: string }[];
  /** Threads running the native kernels or the wasm backend's matrix products (1 on other backends). */
  threads: number;
  /** On `native`: the GEMM engine and micro-kernel in use. */
  native?: Pick<NativeInfo, "gemm" | "isa" | "openblas">;
}

/** Options for {@link selectBackend}. */
export interface SelectBackendOptions {
  /** Force one backend; defaults to `LEVANTER_BACKEND` from the environment, else automatic. */
  force?: TfBackendName;
  /**
   * Threads for the native kernels or the wasm backend's matrix products: defaults to
   * `LEVANTER_THREADS`, else the number of cores. 1 keeps everything on the calling thread.
   * Results are bitwise identical for every value. Ignored by the other backends.
   */
  threads?: number;
}

// Specifiers live in variables so tsc needs no types for packages that may be absent.
const NATIVE_GPU = "@tensorflow/tfjs-node-gpu";
const NATIVE_CPU = "@tensorflow/tfjs-node";

async function tryNative(specifier: string): Promise<void> {
  await import(specifier);
  // tfjs-node registers "tensorflow" on the tfjs-core it resolves; if that is another copy than
  // ours, our ops would never see it.
  if (!tf.findBackendFactory("tensorflow")) {
    throw new Error(`${specifier} loaded but registered no "tensorflow" backend on this tfjs-core instance`);
  }
  if (!(await tf.setBackend("tensorflow"))) throw new Error(`the "tensorflow" backend failed to initialise`);
}

let requestedThreads = 1;

async function startWasm(): Promise<void> {
  await import("@tensorflow/tfjs-backend-wasm"); // registers the "wasm" factory (tfjs' only way)
  if (!(await tf.setBackend("wasm"))) throw new Error(`the "wasm" backend failed to initialise`);
  installWasmFixes();
}

async function tryWasm(): Promise<void> {
  uninstallNativeKernels(); // plain wasm, even after an earlier "native" selection in this process
  await startWasm();
  setWasmThreads(requestedThreads);
}

// levanter's native kernels (native/, an N-API addon) registered over the wasm backend: they work
// on its heap in place, so every kernel they do not replace keeps running as wasm.
async function tryNativeKernels(): Promise<void> {
  const load = loadNativeAddon();
  if (!load.ok) throw new Error(load.reason);
  await startWasm();
  installNativeKernels(load.addon);
  load.addon.setThreads(requestedThreads);
  setWasmThreads(1); // the addon runs the products; no wasm GEMM workers
}

/** Whether the `native` backend is active: its kernels registered and tfjs on wasm. */
export function nativeActive(): boolean {
  return nativeKernelsInstalled() && tf.getBackend() === "wasm";
}

async function tryCpu(): Promise<void> {
  if (!(await tf.setBackend("cpu"))) throw new Error(`the "cpu" backend failed to initialise`);
}

const attempts: Record<TfBackendName, () => Promise<void>> = {
  "tensorflow-gpu": () => tryNative(NATIVE_GPU),
  tensorflow: () => tryNative(NATIVE_CPU),
  native: tryNativeKernels,
  wasm: tryWasm,
  cpu: tryCpu,
};

function reasonOf(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  // tfjs-node(-gpu) installed without its libtensorflow binding (pnpm skips its download script).
  if (/tfjs_binding\.node\) can not be found/.test(msg)) return "installed without its native binding (libtensorflow not downloaded)";
  if (/Cannot find (package|module) '@tensorflow\/tfjs-node/.test(msg)) return "not installed";
  return msg.split("\n")[0]!.slice(0, 300);
}

/**
 * Picks and activates the fastest TensorFlow.js backend that loads: tfjs-node-gpu (optional
 * dependency), tfjs-node (if a user installed it), `native` (levanter's N-API kernels over the
 * wasm backend, when the addon was built), wasm (with {@link installWasmFixes}), then the pure-JS
 * cpu backend. `LEVANTER_BACKEND` (or `force`) pins one and fails if it cannot load.
 * Logs one structured line with the choice and the reason each earlier candidate was skipped.
 *
 * @example const { name } = await selectBackend(); // "wasm" on a machine without libtensorflow
 */
export async function selectBackend(opts: SelectBackendOptions = {}): Promise<BackendSelection> {
  // tfjs prints banners and kernel warnings unless PROD; our logs say what matters.
  tf.env().set("PROD", true);
  const envForce = process.env.LEVANTER_BACKEND?.trim();
  const force = opts.force ?? (envForce ? parseBackendName(envForce) : undefined);
  const envThreads = process.env.LEVANTER_THREADS?.trim();
  requestedThreads = opts.threads ?? (envThreads ? parseThreads(envThreads) : os.availableParallelism());
  const skipped: BackendSelection["skipped"] = [];
  for (const name of BACKEND_NAMES) {
    if (force && name !== force) continue;
    try {
      await attempts[name]();
      const info = name === "native" ? loadNativeAddon() : undefined;
      const ni = info?.ok ? info.addon.info() : undefined;
      const threads = ni ? ni.threads : name === "wasm" ? wasmThreads() : 1;
      const native = ni ? { gemm: ni.gemm, isa: ni.isa, openblas: ni.openblas } : undefined;
      const selection: BackendSelection = { name, tfBackend: tf.getBackend(), skipped, threads, ...(native ? { native } : {}) };
      log("info", "backend selected", { backend: name, forced: force !== undefined, threads, ...(native ? { native } : {}), skipped });
      return selection;
    } catch (e) {
      if (force) {
        throw new LevanterError("BACKEND_UNAVAILABLE", `backend "${name}" (forced) cannot be used: ${reasonOf(e)}`, { cause: e });
      }
      skipped.push({ name, reason: reasonOf(e) });
    }
  }
  throw new LevanterError("BACKEND_UNAVAILABLE", `no TensorFlow.js backend could be initialised: ${JSON.stringify(skipped)}`);
}

/** Validates a backend name (e.g. from `LEVANTER_BACKEND`), throwing `INVALID_CONFIG` naming the choices. */
export function parseBackendName(raw: string): TfBackendName {
  if ((BACKEND_NAMES as readonly string[]).includes(raw)) return raw as TfBackendName;
  throw new LevanterError("INVALID_CONFIG", `LEVANTER_BACKEND: expected one of ${BACKEND_NAMES.join(" | ")}, got "${raw}"`);
}

function parseThreads(raw: string): number {
  const n = toInteger(raw, { min: 1, max: 256 });
  if (n !== undefined) return n;
  throw new LevanterError("INVALID_CONFIG", `LEVANTER_THREADS: expected an integer from 1 to 256, got "${raw}"`);
}

/**
 * Registers what the wasm backend lacks: a JS `UnsortedSegmentSum` kernel, so that `tf.gather`
 * (embedding lookups) has a gradient. Idempotent. The other two wasm fixes are ops the model uses
 * on every backend: {@link matMul2d} and {@link oneHotFloat}.
 */
export function installWasmFixes(): void {
  installFastGather();
  installFastSlice();
  installSharedIdentity();
  installFastBatchMatMul();
  if (tf.getKernel("UnsortedSegmentSum", "wasm")) return;
  tf.registerKernel({
    kernelName: "UnsortedSegmentSum",
    backendName: "wasm",
    kernelFunc: ({ inputs, attrs, backend }) => {
      const be = backend as unknown as WasmBackendLike;
      const { x, segmentIds } = inputs as { x: tf.TensorInfo; segmentIds: tf.TensorInfo };
      const numSegments = (attrs as unknown as { numSegments: number }).numSegments;
      const row = tf.util.sizeFromShape(x.shape.slice(1));
      const src = be.readSync(x.dataId) as Float32Array;
      const ids = be.readSync(segmentIds.dataId) as Int32Array;
      const out = be.makeOutput([numSegments, ...x.shape.slice(1)], x.dtype);
      const dst = be.typedArrayFromHeap(out) as Float32Array;
      dst.fill(0);
      for (let i = 0; i < ids.length; i++) {
        const s = ids[i]!;
        if (s < 0 || s >= numSegments) continue; // TF semantics: out-of-range ids are dropped
        const d = s * row, o = i * row;
        for (let j = 0; j < row; j++) dst[d + j]! += src[o + j]!;
      }
      return out;
    },
  });
}

const FAST_GATHER = Symbol.for("levanter.fastGather");

// wasm's GatherV2 takes ~6.5 ms for the 1,024-row embedding lookup of a training step; copying
// rows from the heap takes well under 1. Only the plain case (axis 0, no batch dims, float32 rows,
// int32 ids, all in range) is handled here; everything else goes to the original kernel.
function installFastGather(): void {
  const orig = tf.getKernel("GatherV2", "wasm");
  if (!orig || (orig as unknown as Record<symbol, boolean>)[FAST_GATHER]) return;
  const kernelFunc: tf.KernelFunc = (args) => {
    const { x, indices } = args.inputs as { x: tf.TensorInfo; indices: tf.TensorInfo };
    const { axis, batchDims } = args.attrs as unknown as { axis: number; batchDims: number };
    if ((axis === 0 || axis === -x.shape.length) && batchDims === 0 && x.dtype === "float32" && indices.dtype === "int32" && x.shape.length >= 1) {
      const be = args.backend as unknown as WasmBackendLike;
      const rows = x.shape[0]!;
      const row = tf.util.sizeFromShape(x.shape.slice(1));
      const ids = be.typedArrayFromHeap(indices) as Int32Array;
      let inRange = true;
      for (let i = 0; i < ids.length; i++) if (ids[i]! < 0 || ids[i]! >= rows) inRange = false;
      if (inRange) {
        const out = be.makeOutput([...indices.shape, ...x.shape.slice(1)], "float32");
        // Views are taken after makeOutput: an allocation may grow (and move) the heap.
        const src = be.typedArrayFromHeap(x) as Float32Array;
        const dst = be.typedArrayFromHeap(out) as Float32Array;
        const idv = be.typedArrayFromHeap(indices) as Int32Array;
        for (let i = 0; i < idv.length; i++) dst.set(src.subarray(idv[i]! * row, (idv[i]! + 1) * row), i * row);
        return out;
      }
    }
    return orig.kernelFunc(args);
  };
  tf.unregisterKernel("GatherV2", "wasm");
  tf.registerKernel({ ...orig, kernelFunc, [FAST_GATHER]: true } as tf.KernelConfig);
}

const SHARED_IDENTITY = Symbol.for("levanter.sharedIdentity");

// wasm's Identity copies its input; autodiff and customGrad run one per saved or passed-through
// tensor (~170 per small-model step). Sharing the buffer by reference count, as the cpu backend
// does, is safe because kernels never write to their inputs.
function installSharedIdentity(): void {
  const orig = tf.getKernel("Identity", "wasm");
  if (!orig || (orig as unknown as Record<symbol, boolean>)[SHARED_IDENTITY]) return;
  const kernelFunc: tf.KernelFunc = (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo };
    if (x.dtype === "string") return orig.kernelFunc(args);
    (args.backend as unknown as { incRef(dataId: object): void }).incRef(x.dataId);
    return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
  };
  tf.unregisterKernel("Identity", "wasm");
  tf.registerKernel({ ...orig, kernelFunc, [SHARED_IDENTITY]: true } as tf.KernelConfig);
}

const FAST_SLICE = Symbol.for("levanter.fastSlice");

// wasm's Slice (and SplitV, which calls it directly) copies the whole input out of the heap with
// readSync before slicing: splitting attention's fused q/k/v costs ~7 ms. These read through a
// heap view instead (numeric dtypes; strings go to the original kernels).
function installFastSlice(): void {
  const slice = tf.getKernel("Slice", "wasm");
  const split = tf.getKernel("SplitV", "wasm");
  if (!slice || !split || (slice as unknown as Record<symbol, boolean>)[FAST_SLICE]) return;
  const sliceFunc: tf.KernelFunc = (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo };
    if (x.dtype === "string") return slice.kernelFunc(args);
    const { begin, size } = args.attrs as unknown as { begin: number | number[]; size: number | number[] };
    const [b, sz] = tf.slice_util.parseSliceParams(x as tf.Tensor, begin, size);
    return sliceFromHeap(args.backend as unknown as WasmBackendLike, x, b, sz);
  };
  const splitFunc: tf.KernelFunc = (args) => {
    const { x } = args.inputs as { x: tf.TensorInfo };
    if (x.dtype === "string") return split.kernelFunc(args);
    const { numOrSizeSplits, axis } = args.attrs as unknown as { numOrSizeSplits: number | number[]; axis: number };
    const ax = tf.util.parseAxisParam(axis, x.shape)[0]!;
    const sizes = tf.backend_util.prepareSplitSize(x as tf.Tensor, numOrSizeSplits, ax);
    const begin = new Array<number>(x.shape.length).fill(0);
    return sizes.map((n) => {
      const sz = [...x.shape];
      sz[ax] = n;
      const out = sliceFromHeap(args.backend as unknown as WasmBackendLike, x, [...begin], sz);
      begin[ax]! += n;
      return out;
    });
  };
  tf.unregisterKernel("Slice", "wasm");
  tf.registerKernel({ ...slice, kernelFunc: sliceFunc, [FAST_SLICE]: true } as tf.KernelConfig);
  tf.unregisterKernel("SplitV", "wasm");
  tf.registerKernel({ ...split, kernelFunc: splitFunc } as tf.KernelConfig);
}

// Copies x[begin : begin+size] (any rank) as runs along the last axis.
function sliceFromHeap(be: WasmBackendLike, x: tf.TensorInfo, begin: number[], size: number[]): tf.TensorInfo {
  const out = be.makeOutput(size, x.dtype);
  // Views are taken after makeOutput: an allocation may grow (and move) the heap.
  const src = be.typedArrayFromHeap(x);
  const dst = be.typedArrayFromHeap(out);
  const rank = x.shape.length;
  const total = tf.util.sizeFromShape(size);
  if (total === 0) return out;
  if (rank === 0) {
    dst.set(src.subarray(0, 1));
    return out;
  }
  const strides = tf.util.computeStrides(x.shape);
  if (tf.slice_util.isSliceContinous(x.shape, begin, size)) {
    const off = tf.slice_util.computeFlatOffset(begin, strides);
    dst.set(src.subarray(off, off + total));
    return out;
  }
  const run = size[rank - 1]!;
  const idx = new Array<number>(rank - 1).fill(0);
  for (let o = 0; o < total; o += run) {
    let off = begin[rank - 1]!;
    for (let d = 0; d < rank - 1; d++) off += (begin[d]! + idx[d]!) * strides[d]!;
    dst.set(src.subarray(off, off + run), o);
    for (let d = rank - 2; d >= 0; d--) {
      if (++idx[d]! < size[d]!) break;
      idx[d] = 0;
    }
  }
  return out;
}

interface WasmBackendLike {
  readSync(dataId: object): tf.TypedArray;
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  typedArrayFromHeap(t: tf.TensorInfo): tf.TypedArray;
}

/**
 * A rank-2 matMul whose gradient uses explicit transposes instead of matMul's transpose flags:
 * wasm runs only flag-free rank-2 matMuls on its fast GEMM, which makes backward ~4× faster there.
 * Same values as `tf.matMul` on every backend. Reshape `[B,T,D]` to `[B·T,D]` before calling.
 */
export const matMul2d = tf.customGrad((a, b, save) => {
  (save as tf.GradSaveFunc)([a as tf.Tensor, b as tf.Tensor]);
  return {
    value: tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D),
    gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => {
      const g = dy as tf.Tensor2D;
      const [sa, sb] = saved as [tf.Tensor2D, tf.Tensor2D];
      // The native GEMM takes transpose flags at full speed: no Transpose kernels needed.
      if (nativeActive()) return [tf.matMul(g, sb, false, true), tf.matMul(sa, g, true, false)];
      // dW = aᵀ·dy, or (dyᵀ·a)ᵀ when that transposes fewer elements (a wide `a`, as in an MLP's
      // down projection): wasm's Transpose is memory-bound.
      const [m, k] = sa.shape;
      const n = g.shape[1];
      const dW = m * k <= m * n + k * n ? tf.matMul(sa.transpose(), g) : tf.matMul(g.transpose(), sa).transpose();
      return [tf.matMul(g, sb.transpose()), dW];
    },
  };
}) as (a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D;

/**
 * A float32 one-hot that is correct on wasm: wasm's float32 `oneHot` returns integer bit
 * patterns (which silently zeroes a cross-entropy loss), so build it as int32 and cast.
 */
export function oneHotFloat(ids: tf.Tensor, depth: number): tf.Tensor {
  return tf.tidy(() => tf.oneHot(ids.toInt(), depth).toFloat());
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
