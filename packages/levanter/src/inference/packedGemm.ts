// The engine's projections: levanter's SIMD matmul.wat on its own WebAssembly memory, with every weight packed once at load (no tfjs op, no per-call packing).
import type { MatmulExports } from "../kernels/gemmPool.ts";
import { MATMUL_WASM_BASE64 } from "../kernels/matmulWasm.ts";

const PAGE = 65536;
/** Bytes of memory the packed weights may take at most (wasm32 addresses 4 GiB; leave room for rows). */
const MAX_WEIGHT_BYTES = 2 ** 31;

/** A weight packed into a {@link PackedGemm}'s memory. */
export interface PackedWeight {
  /** Rows of the weight (the product's inner dimension). */
  k: number;
  /** Columns (outputs per row). */
  n: number;
  /** Byte offset of its panels. */
  offset: number;
}

/** The layout of a weight's values: `w[kk, j] = values[kk·sbk + j·sbj]` (row-major `[k, n]`: sbk = n, sbj = 1). */
export interface WeightSource {
  values: Float32Array;
  k: number;
  n: number;
  sbk: number;
  sbj: number;
}

const align16 = (x: number) => (x + 15) & ~15;
const panelBytes = (k: number, n: number) => Math.max(1, Math.ceil(n / 8)) * 8 * k * 4;

/**
 * Rank-2 products `x [m, k] · W [k, n]` on matmul.wat (the routine tfjs' wasm BatchMatMul runs
 * here, so the same bits as the model's projections on wasm; each output sums its k products in
 * order, so a row's result does not depend on the other rows). The weights are packed once into
 * panels in a private memory — a copy as large as the weights — and each product copies only its
 * rows in and its outputs out.
 */
export class PackedGemm {
  private readonly memory: WebAssembly.Memory;
  private readonly ex: MatmulExports;
  private heap: Float32Array;
  /** First byte after the packed weights: rows and outputs go here. */
  private readonly scratch: number;

  private constructor(memory: WebAssembly.Memory, ex: MatmulExports, scratch: number) {
    this.memory = memory;
    this.ex = ex;
    this.heap = new Float32Array(memory.buffer);
    this.scratch = scratch;
  }

  /**
   * Packs `weights` (in order; the result's weights correspond). Undefined where WebAssembly SIMD
   * is unavailable or the weights would not fit a wasm32 memory: callers then use tfjs.
   */
  static create(weights: WeightSource[]): { gemm: PackedGemm; packed: PackedWeight[] } | undefined {
    const total = weights.reduce((s, w) => s + align16(panelBytes(w.k, w.n)), 0);
    const largest = Math.max(0, ...weights.map((w) => w.values.byteLength));
    if (total + largest > MAX_WEIGHT_BYTES) return undefined;
    let memory: WebAssembly.Memory;
    let ex: MatmulExports;
    try {
      memory = new WebAssembly.Memory({ initial: Math.ceil((64 + total + largest + PAGE) / PAGE) });
      const mod = new WebAssembly.Module(Buffer.from(MATMUL_WASM_BASE64, "base64"));
      ex = new WebAssembly.Instance(mod, { env: { memory } }).exports as unknown as MatmulExports;
    } catch {
      return undefined;
    }
    const heap = new Float32Array(memory.buffer);
    const packed: PackedWeight[] = [];
    let at = 64;
    const staging = align16(64 + total);
    for (const w of weights) {
      heap.set(w.values, staging / 4);
      ex.pack(staging, at, w.k, w.n, w.sbk, w.sbj);
      packed.push({ k: w.k, n: w.n, offset: at });
      at += align16(panelBytes(w.k, w.n));
    }
    return { gemm: new PackedGemm(memory, ex, align16(at)), packed };
  }

  /**
   * `a [m, k] · B` for a B given as values (`B[kk, j] = b[kk·sbk + j·sbj]`, k×n), packed for this
   * product only: attention's Q·Kᵀ and P·V. A new `[m, n]` array.
   */
  product(a: Float32Array, m: number, b: Float32Array, k: number, n: number, sbk: number, sbj: number): Float32Array {
    const pa = this.scratch;
    const pb = align16(pa + m * k * 4);
    const pp = align16(pb + b.length * 4);
    const pc = align16(pp + panelBytes(k, n));
    this.reserve(pc + m * n * 4);
    this.heap.set(a.subarray(0, m * k), pa / 4);
    this.heap.set(b, pb / 4);
    this.ex.pack(pb, pp, k, n, sbk, sbj);
    this.ex.matmul(pa, pp, pc, m, k, n, k, 1);
    return this.heap.slice(pc / 4, pc / 4 + m * n);
  }

  private reserve(end: number): void {
    if (end > this.memory.buffer.byteLength) {
      this.memory.grow(Math.ceil((end - this.memory.buffer.byteLength) / PAGE));
      this.heap = new Float32Array(this.memory.buffer);
    }
  }

  /** `x [m, w.k] · w` as a new `[m, w.n]` array. */
  run(w: PackedWeight, x: Float32Array, m: number): Float32Array {
    const a = this.scratch;
    const c = align16(a + m * w.k * 4);
    this.reserve(c + m * w.n * 4);
    this.heap.set(x.subarray(0, m * w.k), a / 4);
    this.ex.matmul(a, w.offset, c, m, w.k, w.n, w.k, 1);
    return this.heap.slice(c / 4, c / 4 + m * w.n);
  }
}
