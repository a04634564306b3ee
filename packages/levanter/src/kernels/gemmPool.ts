// A pool of worker threads that run matmul.wat on one shared WebAssembly memory, so a single
// training process uses every core for its matrix products. tfjs-backend-wasm is single-threaded
// under Node (its own threaded build cannot start there), and a tfjs kernel must return
// synchronously: the calling thread copies the operands in, hands each worker a slice of the
// output (whole batches, or blocks of rows), computes its own slice, and blocks on Atomics.wait
// until the workers are done. Each output element is summed in the same order whatever the
// thread count, so results are bitwise identical for any number of threads.
import { Worker } from "node:worker_threads";
import { MATMUL_SHARED_WASM_BASE64 } from "./matmulWasm.ts";

/** One product C[b] = A'[b]·B[b] for b < batches, B packed, in the shared memory (byte offsets/strides). */
export interface GemmTask {
  a: number;
  b: number;
  c: number;
  m: number;
  k: number;
  n: number;
  /** Element strides of A' (see matmul.wat). */
  sai: number;
  sak: number;
  batches: number;
  strideA: number;
  strideB: number;
  strideC: number;
}

/** What matmul.wat exports (either memory variant). */
export interface MatmulExports {
  matmul(a: number, b: number, c: number, m: number, k: number, n: number, sai: number, sak: number): void;
  pack(src: number, dst: number, k: number, n: number, sbk: number, sbj: number): void;
}

const SLOT = 16; // Int32 words per worker: [seq, done, a, b, c, m, k, n, sai, sak, batches, sA, sB, sC, failed, -]
const PAGE = 65536;
const WAIT_LIMIT_MS = 120_000;

// Plain JS, evaluated in each worker: no TypeScript loader is needed there.
const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { module, memory, control, slot } = workerData;
const ex = new WebAssembly.Instance(module, { env: { memory } }).exports;
const c = new Int32Array(control);
const base = slot * ${SLOT};
let seen = 0;
for (;;) {
  Atomics.wait(c, base, seen);
  seen = Atomics.load(c, base);
  if (seen < 0) break;
  try {
    const [a, b, cc, m, k, n, sai, sak, batches, sA, sB, sC] = c.subarray(base + 2, base + 14);
    for (let i = 0; i < batches; i++) ex.matmul(a + i * sA, b + i * sB, cc + i * sC, m, k, n, sai, sak);
  } catch (e) {
    Atomics.store(c, base + 14, 1);
  }
  Atomics.store(c, base + 1, seen);
  Atomics.notify(c, base + 1);
}
`;

/** A fixed set of worker threads sharing one memory with the calling thread. */
export class GemmPool {
  readonly threads: number;
  readonly memory: WebAssembly.Memory;
  private readonly ex: MatmulExports;
  private readonly workers: Worker[];
  private readonly control: Int32Array;
  private seq = 0;
  private closed = false;

  /** Starts `threads - 1` workers (the calling thread is the last one). */
  constructor(threads: number) {
    if (!Number.isInteger(threads) || threads < 2) throw new RangeError(`GemmPool needs at least 2 threads, got ${threads}`);
    this.threads = threads;
    this.memory = new WebAssembly.Memory({ initial: 256, maximum: 65536, shared: true });
    const module = new WebAssembly.Module(Buffer.from(MATMUL_SHARED_WASM_BASE64, "base64"));
    this.ex = new WebAssembly.Instance(module, { env: { memory: this.memory } }).exports as unknown as MatmulExports;
    const control = new SharedArrayBuffer(4 * SLOT * (threads - 1));
    this.control = new Int32Array(control);
    this.workers = Array.from({ length: threads - 1 }, (_, slot) => {
      // execArgv: [] — plain JS needs no loader; inheriting `--import tsx` would start one per worker.
      const w = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { module, memory: this.memory, control, slot } });
      w.unref(); // an idle pool never keeps the process alive
      return w;
    });
  }

  /** Grows the shared memory to at least `bytes` and returns a byte view of it. */
  reserve(bytes: number): Uint8Array {
    const have = this.memory.buffer.byteLength;
    if (bytes > have) this.memory.grow(Math.ceil((bytes - have) / PAGE));
    return new Uint8Array(this.memory.buffer);
  }

  /** Packs a k×n B at `src` into panels at `dst` (see matmul.wat), on the calling thread. */
  pack(src: number, dst: number, k: number, n: number, sbk: number, sbj: number): void {
    this.ex.pack(src, dst, k, n, sbk, sbj);
  }

  /** Runs `task`, split over the pool; returns when every slice is done. */
  run(task: GemmTask): void {
    if (this.closed) throw new Error("GemmPool is closed");
    const parts = split(task, this.threads);
    const ctl = this.control;
    const seq = ++this.seq;
    for (let w = 1; w < parts.length; w++) {
      const p = parts[w]!;
      const base = (w - 1) * SLOT;
      ctl.set([p.a, p.b, p.c, p.m, p.k, p.n, p.sai, p.sak, p.batches, p.strideA, p.strideB, p.strideC, 0], base + 2);
      Atomics.store(ctl, base, seq);
      Atomics.notify(ctl, base);
    }
    const own = parts[0]!;
    for (let i = 0; i < own.batches; i++) {
      this.ex.matmul(own.a + i * own.strideA, own.b + i * own.strideB, own.c + i * own.strideC, own.m, own.k, own.n, own.sai, own.sak);
    }
    for (let w = 1; w < parts.length; w++) {
      const base = (w - 1) * SLOT;
      const deadline = Date.now() + WAIT_LIMIT_MS;
      let done: number;
      while ((done = Atomics.load(ctl, base + 1)) !== seq) {
        if (Date.now() > deadline) throw new Error(`GemmPool: worker ${w} did not finish within ${WAIT_LIMIT_MS / 1000} s`);
        Atomics.wait(ctl, base + 1, done, 1000);
      }
      if (Atomics.load(ctl, base + 14) !== 0) throw new Error(`GemmPool: worker ${w} failed (out-of-bounds memory access?)`);
    }
  }

  /** Stops the workers. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (let w = 0; w < this.workers.length; w++) {
      Atomics.store(this.control, w * SLOT, -1);
      Atomics.notify(this.control, w * SLOT);
    }
    for (const w of this.workers) void w.terminate();
  }
}

// Whole batches per thread when there are enough of them, else blocks of rows (multiples of 4,
// the kernel's block height). Never more slices than there is work for.
function split(t: GemmTask, threads: number): GemmTask[] {
  const parts: GemmTask[] = [];
  if (t.batches >= threads) {
    const per = Math.ceil(t.batches / threads);
    for (let b0 = 0; b0 < t.batches; b0 += per) {
      const nb = Math.min(per, t.batches - b0);
      parts.push({ ...t, a: t.a + b0 * t.strideA, b: t.b + b0 * t.strideB, c: t.c + b0 * t.strideC, batches: nb });
    }
    return parts;
  }
  const rows = Math.max(4, Math.ceil(t.m / threads / 4) * 4);
  for (let i0 = 0; i0 < t.m; i0 += rows) {
    const m = Math.min(rows, t.m - i0);
    parts.push({ ...t, a: t.a + i0 * t.sai * 4, c: t.c + i0 * t.n * 4, m });
  }
  return parts;
}
