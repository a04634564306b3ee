// The engine's KV cache: one preallocated float32 buffer per sequence, written in place at each position, allocated under a byte budget.
import { LevanterError } from "../errors.ts";

/** Shape of every sequence's cache: `[layer][keys | values][head][capacity][headDim]`. */
export interface KvLayout {
  nLayers: number;
  nHeads: number;
  headDim: number;
}

/**
 * One sequence's keys and values, preallocated for `capacity` positions (prompt + generated
 * tokens). A decode step writes position `length` in place; nothing is copied or concatenated.
 */
export class SeqKv {
  /** `[layer][0 = keys, 1 = values][head][capacity][headDim]`. */
  readonly data: Float32Array;
  /** Positions this buffer holds at most. */
  readonly capacity: number;
  /** Positions written (= the position of the next token). */
  length = 0;

  constructor(layout: KvLayout, capacity: number) {
    this.capacity = capacity;
    this.data = new Float32Array(2 * layout.nLayers * layout.nHeads * capacity * layout.headDim);
  }

  /** Offset of head `h`'s row at position 0 for layer `l`'s keys (`kv` 0) or values (`kv` 1); rows are `headDim` apart. */
  offset(layout: KvLayout, l: number, kv: 0 | 1, h: number): number {
    return ((l * 2 + kv) * layout.nHeads + h) * this.capacity * layout.headDim;
  }
}

/** Code `KV_BUDGET`: thrown by {@link KvPool.allocate} when the budget cannot hold the buffer (a caller bug: check {@link KvPool.fits} first). */
export class KvBudgetError extends LevanterError {
  override readonly name = "KvBudgetError";
  constructor(message: string) {
    super("KV_BUDGET", message);
  }
}

/**
 * Allocates {@link SeqKv} buffers while their bytes together stay within a budget; the engine
 * admits a request only when all of its samples' buffers fit, so the bound holds at all times.
 */
export class KvPool {
  readonly layout: KvLayout;
  /** Bytes the buffers may hold together. */
  readonly budgetBytes: number;
  /** Bytes of one cached position (keys and values of every layer). */
  readonly bytesPerToken: number;
  private allocated = 0;
  private readonly live = new Set<SeqKv>();

  constructor(layout: KvLayout, budgetBytes: number) {
    this.layout = layout;
    this.budgetBytes = budgetBytes;
    this.bytesPerToken = 2 * layout.nLayers * layout.nHeads * layout.headDim * 4;
  }

  /** Bytes of the buffers now allocated. */
  get allocatedBytes(): number {
    return this.allocated;
  }

  /** Buffers now allocated. */
  get liveBuffers(): number {
    return this.live.size;
  }

  /** Whether buffers of these capacities (positions each) fit beside what is allocated. */
  fits(capacities: number[]): boolean {
    return this.allocated + capacities.reduce((s, c) => s + c, 0) * this.bytesPerToken <= this.budgetBytes;
  }

  /** A zeroed buffer of `capacity` positions; throws {@link KvBudgetError} beyond the budget. */
  allocate(capacity: number): SeqKv {
    if (!this.fits([capacity])) throw new KvBudgetError(`KV pool: ${capacity} positions do not fit (${this.allocated} of ${this.budgetBytes} bytes in use)`);
    const kv = new SeqKv(this.layout, capacity);
    this.allocated += kv.data.byteLength;
    this.live.add(kv);
    return kv;
  }

  /** Copies `src`'s written positions into `dst` (same capacity): a prompt's cache shared by `n` samples. */
  copyInto(src: SeqKv, dst: SeqKv): void {
    if (src.capacity !== dst.capacity) throw new KvBudgetError(`KV pool: copy between capacities ${src.capacity} and ${dst.capacity}`);
    dst.data.set(src.data);
    dst.length = src.length;
  }

  /** Returns a buffer's bytes to the budget (idempotent). */
  free(kv: SeqKv): void {
    if (!this.live.delete(kv)) return;
    this.allocated -= kv.data.byteLength;
  }
}
