// A BatchMatMul kernel for tfjs-backend-wasm that runs every float32 product on a SIMD
// WebAssembly routine (matmul.wat): in place on the backend's heap, or split over a thread pool
// (gemmPool.ts). tfjs-wasm sends every batched or transposed product to a scalar loop at
// ~1.2 GFLOP/s (attention's q·kᵀ and att·v and their gradients); matmul.wat runs those 8–19
// GFLOP/s, and plain rank-2 products as fast as tfjs' XNNPACK path (21–25 GFLOP/s here) with the
// same bits. Using one routine for everything makes results independent of the thread count.
import { tf } from "../../tf.ts";
import { GemmPool } from "../gemmPool.ts";
import type { MatmulExports } from "../gemmPool.ts";
import { MATMUL_WASM_BASE64 } from "../matmulWasm.ts";
import { geometry } from "../matmulGeometry.ts";

interface WasmBackendInternals {
  wasm: { asm: Record<string, unknown>; _malloc(bytes: number): number; _free(ptr: number): void };
  dataIdMap: { get(dataId: object): { memoryOffset: number } | undefined };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

let compiled: WebAssembly.Module | undefined;
/** Per tfjs-wasm module: its heap and matmul.wat instantiated on it (null: it exports no memory). */
const heaps = new WeakMap<object, { memory: WebAssembly.Memory; ex: MatmulExports } | null>();
let pool: GemmPool | undefined;

// Below this many FLOPs a product runs on the calling thread: waking the workers costs tens of µs.
const POOL_MIN_FLOPS = 1 << 21;

/**
 * Sets how many threads run the wasm backend's matrix products (1 = the calling thread only,
 * on tfjs' heap). With 2 or more, products of at least ~2 MFLOP are split over a worker pool.
 * Results are bitwise identical for every thread count.
 */
export function setWasmThreads(threads: number): void {
  if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`threads must be a positive integer, got ${threads}`);
  if (pool?.threads === threads || (threads === 1 && !pool)) return;
  pool?.close();
  pool = threads >= 2 ? new GemmPool(threads) : undefined;
}

/** Threads the wasm matrix products currently use. */
export function wasmThreads(): number {
  return pool?.threads ?? 1;
}

// Found once per tfjs-wasm module (scanning its exports on every product would sit on the hot path).
function heapOf(be: WasmBackendInternals): { memory: WebAssembly.Memory; ex: MatmulExports } | null {
  let h = heaps.get(be.wasm);
  if (h === undefined) {
    const memory = Object.values(be.wasm.asm).find((v): v is WebAssembly.Memory => v instanceof WebAssembly.Memory);
    if (memory) {
      compiled ??= new WebAssembly.Module(Buffer.from(MATMUL_WASM_BASE64, "base64"));
      h = { memory, ex: new WebAssembly.Instance(compiled, { env: { memory } }).exports as unknown as MatmulExports };
    } else h = null;
    heaps.set(be.wasm, h);
  }
  return h;
}

/**
 * Replaces wasm's BatchMatMul with one that runs float32 products on matmul.wat, split over the
 * {@link setWasmThreads} pool when they are large enough; other dtypes and batch shapes that
 * broadcast other than from a single matrix go to the original kernel (`orig`).
 */
export function wasmBatchMatMul(orig: tf.KernelFunc): tf.KernelFunc {
  return (args) => {
    const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
    const { transposeA, transposeB } = args.attrs as unknown as { transposeA: boolean; transposeB: boolean };
    const g = geometry(a, b, transposeA, transposeB);
    if (!g) return orig(args); // its error message names the shapes
    const { outBatch, batches, m, n, k } = g;
    // Batch counts of A and B as the pool sees them: 1 when broadcast from one matrix.
    const nA = g.strideA === 0 ? 1 : batches;
    const nB = g.strideB === 0 ? 1 : batches;
    const pooled = pool !== undefined && 2 * batches * m * k * n >= POOL_MIN_FLOPS;
    const be = args.backend as unknown as WasmBackendInternals;
    const heap = heapOf(be);
    if (!heap) return orig(args);
    const ex = heap.ex;
    const out = be.makeOutput([...outBatch, m, n], "float32");
    if (m * n === 0 || batches === 0) return out;
    const pa = be.dataIdMap.get(a.dataId)!.memoryOffset;
    const pb = be.dataIdMap.get(b.dataId)!.memoryOffset;
    const pc = be.dataIdMap.get(out.dataId)!.memoryOffset;
    const strideA = nA === 1 ? 0 : m * k * 4;
    const strideB = nB === 1 ? 0 : k * n * 4;
    const sai = transposeA ? 1 : k;
    const sak = transposeA ? m : 1;
    const sbk = transposeB ? 1 : n;
    const sbj = transposeB ? k : 1;
    if (pooled) {
      runPooled(pool!, heap.memory, { pa, pb, pc, m, k, n, sai, sak, sbk, sbj, batches, nA, nB });
      return out;
    }
    // B is packed into panels (once when it is broadcast, else per batch) in scratch memory.
    const scratch = be.wasm._malloc(packedBytes(k, n));
    try {
      for (let i = 0; i < batches; i++) {
        if (i === 0 || strideB !== 0) ex.pack(pb + i * strideB, scratch, k, n, sbk, sbj);
        ex.matmul(pa + i * strideA, scratch, pc + i * m * n * 4, m, k, n, sai, sak);
      }
    } finally {
      be.wasm._free(scratch);
    }
    return out;
  };
}

interface PooledProduct {
  pa: number;
  pb: number;
  pc: number;
  m: number;
  k: number;
  n: number;
  sai: number;
  sak: number;
  sbk: number;
  sbj: number;
  batches: number;
  nA: number;
  nB: number;
}

const align16 = (x: number) => (x + 15) & ~15;
/** Bytes of a k×n B packed into 8-column panels. */
const packedBytes = (k: number, n: number) => Math.max(1, Math.ceil(n / 8)) * 8 * k * 4;

// Copies the operands from tfjs' heap into the pool's shared memory, runs the product there, and
// copies the result back.
function runPooled(p: GemmPool, heap: WebAssembly.Memory, q: PooledProduct): void {
  const { m, k, n, batches } = q;
  const nBatchesB = q.nB === 1 ? 1 : batches;
  const bytesA = (q.nA === 1 ? 1 : batches) * m * k * 4;
  const bytesB = nBatchesB * k * n * 4;
  const bytesC = batches * m * n * 4;
  const panel = packedBytes(k, n);
  const offA = 64;
  const offB = align16(offA + bytesA);
  const offP = align16(offB + bytesB);
  const offC = align16(offP + nBatchesB * panel);
  const shared = p.reserve(offC + bytesC);
  const src = new Uint8Array(heap.buffer);
  shared.set(src.subarray(q.pa, q.pa + bytesA), offA);
  shared.set(src.subarray(q.pb, q.pb + bytesB), offB);
  for (let i = 0; i < nBatchesB; i++) p.pack(offB + i * k * n * 4, offP + i * panel, k, n, q.sbk, q.sbj);
  p.run({
    a: offA,
    b: offP,
    c: offC,
    m,
    k,
    n,
    sai: q.sai,
    sak: q.sak,
    batches,
    strideA: q.nA === 1 ? 0 : m * k * 4,
    strideB: q.nB === 1 ? 0 : panel,
    strideC: m * n * 4,
  });
  new Uint8Array(heap.buffer).set(shared.subarray(offC, offC + bytesC), q.pc);
}
