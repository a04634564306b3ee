// The reduce side's external merge: a k-way merge of sorted spill segments with bounded fan-in.
// When a partition has more segments than the fan-in allows, consecutive groups of segments are
// merged into intermediate runs (frames copied as bytes, never decoded) until one final merge
// fits; memory is the fan-in times one read block, whatever the data size.
import { randomUUID } from "node:crypto";
import { closeSync, openSync, rmSync, statSync, writeSync } from "node:fs";
import path from "node:path";
import { ZephyrError } from "../errors.ts";
import { FrameCursor } from "./spillRun.ts";
import type { SpillSegment } from "./spillRun.ts";

/** Options of the reduce side of a shuffle. */
export interface MergeOptions {
  /** Directory for intermediate runs of multi-pass merges; they are removed as soon as merged. */
  tmpDir: string;
  /** Bytes of read buffers the merge may hold (default 64 MiB); sets the block size and fan-in. */
  memoryBudgetBytes?: number;
  /** Most segments merged at once (default 32, at least 2). */
  maxFanIn?: number;
}

/** Default reduce-side budget, like the map side's. */
export const DEFAULT_MERGE_MEMORY_BYTES = 64 * 1024 * 1024;
const MIN_BLOCK_BYTES = 64 * 1024;
const MAX_BLOCK_BYTES = 8 * 1024 * 1024;
const WRITE_BLOCK_BYTES = 1 << 20;

interface MergePlan {
  fanIn: number;
  blockBytes: number;
}

function planMerge(options: MergeOptions): MergePlan {
  const budget = options.memoryBudgetBytes ?? DEFAULT_MERGE_MEMORY_BYTES;
  const maxFanIn = options.maxFanIn ?? 32;
  if (!Number.isInteger(maxFanIn) || maxFanIn < 2) {
    throw new ZephyrError("INVALID_ARGUMENT", `merge.maxFanIn: expected an integer ≥ 2, got ${maxFanIn}`);
  }
  if (!Number.isFinite(budget) || budget < 4 * MIN_BLOCK_BYTES) {
    throw new ZephyrError("INVALID_ARGUMENT", `merge.memoryBudgetBytes: expected at least ${4 * MIN_BLOCK_BYTES}, got ${budget}`);
  }
  // One block per input plus one for output (intermediate passes) and one of slack for a group.
  const fanIn = Math.max(2, Math.min(maxFanIn, Math.floor(budget / MIN_BLOCK_BYTES) - 2));
  const blockBytes = Math.min(MAX_BLOCK_BYTES, Math.max(MIN_BLOCK_BYTES, Math.floor(budget / (fanIn + 2))));
  return { fanIn, blockBytes };
}

/** Orders two positioned cursors by (hash, key bytes, tag, input index). */
function compareCursors(a: FrameCursor, ai: number, b: FrameCursor, bi: number): number {
  if (a.hash !== b.hash) return a.hash < b.hash ? -1 : 1;
  const c = a.buf.compare(b.buf, b.keyStart, b.keyEnd, a.keyStart, a.keyEnd);
  if (c !== 0) return c;
  if (a.tag !== b.tag) return a.tag - b.tag;
  return ai - bi;
}

/**
 * Merges sorted segments, one frame at a time. `next()` returns the cursor holding the smallest
 * frame; its frame stays valid until the following `next()`. Ties go to the earlier input, so the
 * merge is stable: records with equal keys keep (tag, input order, order within input).
 */
export class SegmentMerger {
  private readonly cursors: FrameCursor[] = [];
  private readonly heap: number[] = [];
  private last = -1;

  constructor(segments: readonly SpillSegment[], blockBytes: number) {
    try {
      for (const s of segments) this.cursors.push(new FrameCursor(s, blockBytes));
      for (let i = 0; i < this.cursors.length; i++) if (this.cursors[i].advance()) this.push(i);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** The cursor at the next frame in merge order, or undefined when all inputs are exhausted. */
  next(): FrameCursor | undefined {
    if (this.last >= 0) {
      const i = this.last;
      this.last = -1;
      if (this.cursors[i].advance()) this.push(i);
    }
    if (this.heap.length === 0) return undefined;
    const top = this.heap[0];
    const end = this.heap.pop() as number;
    if (this.heap.length > 0) {
      this.heap[0] = end;
      this.siftDown(0);
    }
    this.last = top;
    return this.cursors[top];
  }

  /** Closes every input file (also when the merge is abandoned early). */
  close(): void {
    for (const c of this.cursors) c.close();
  }

  private less(i: number, j: number): boolean {
    return compareCursors(this.cursors[i], i, this.cursors[j], j) < 0;
  }

  private push(i: number): void {
    const h = this.heap;
    let k = h.push(i) - 1;
    while (k > 0) {
      const parent = (k - 1) >> 1;
      if (!this.less(h[k], h[parent])) break;
      [h[k], h[parent]] = [h[parent], h[k]];
      k = parent;
    }
  }

  private siftDown(k: number): void {
    const h = this.heap;
    for (;;) {
      const l = 2 * k + 1;
      if (l >= h.length) return;
      const r = l + 1;
      const m = r < h.length && this.less(h[r], h[l]) ? r : l;
      if (!this.less(h[m], h[k])) return;
      [h[k], h[m]] = [h[m], h[k]];
      k = m;
    }
  }
}

/**
 * A merge of any number of segments under a memory budget: reduces the inputs with intermediate
 * passes until at most `fanIn` remain, then streams the final merge. Call {@link close} when done
 * (also on early exit) to close files and delete intermediate runs.
 */
export class ExternalMerge {
  private readonly owned = new Set<string>();
  private readonly merger: SegmentMerger;
  /** Intermediate passes that ran (0 when the inputs fit one merge). */
  readonly passes: number;

  constructor(segments: readonly SpillSegment[], options: MergeOptions) {
    const plan = planMerge(options);
    let inputs = [...segments];
    let passes = 0;
    try {
      while (inputs.length > plan.fanIn) {
        passes++;
        inputs = this.mergePass(inputs, plan, options.tmpDir);
      }
      this.merger = new SegmentMerger(inputs, plan.blockBytes);
    } catch (err) {
      this.removeOwned();
      throw err;
    }
    this.passes = passes;
  }

  /** See {@link SegmentMerger.next}. */
  next(): FrameCursor | undefined {
    return this.merger.next();
  }

  /** Closes inputs and removes intermediate runs. Idempotent. */
  close(): void {
    this.merger.close();
    this.removeOwned();
  }

  private removeOwned(): void {
    for (const p of this.owned) rmSync(p, { force: true });
    this.owned.clear();
  }

  /** Merges consecutive groups of `fanIn` segments into one intermediate run each (keeps order). */
  private mergePass(inputs: SpillSegment[], plan: MergePlan, tmpDir: string): SpillSegment[] {
    // Groups of about equal size, so no pass leaves a long tail for the next one.
    const groups = Math.ceil(inputs.length / plan.fanIn);
    const per = Math.ceil(inputs.length / groups);
    const out: SpillSegment[] = [];
    for (let g = 0; g < inputs.length; g += per) {
      const group = inputs.slice(g, g + per);
      if (group.length === 1) {
        out.push(group[0]);
        continue;
      }
      const target = path.join(tmpDir, `merge-${randomUUID()}.spill`);
      this.owned.add(target);
      const merger = new SegmentMerger(group, plan.blockBytes);
      try {
        writeMerged(merger, target);
      } finally {
        merger.close();
      }
      for (const s of group) {
        if (this.owned.delete(s.path)) rmSync(s.path, { force: true });
      }
      out.push({ path: target, start: 0, end: statSync(target).size });
    }
    return out;
  }
}

function writeMerged(merger: SegmentMerger, target: string): void {
  let fd: number;
  try {
    fd = openSync(target, "w");
  } catch (cause) {
    throw new ZephyrError("IO", `creating merge run ${target} failed`, { cause });
  }
  try {
    const out = Buffer.allocUnsafe(WRITE_BLOCK_BYTES);
    let pos = 0;
    const flush = (buf: Buffer, start: number, end: number): void => {
      let at = start;
      while (at < end) at += writeSync(fd, buf, at, end - at);
    };
    for (let c = merger.next(); c !== undefined; c = merger.next()) {
      const len = c.frameEnd - c.frameStart;
      if (pos + len > out.length) {
        flush(out, 0, pos);
        pos = 0;
      }
      if (len > out.length) flush(c.buf, c.frameStart, c.frameEnd);
      else {
        c.buf.copy(out, pos, c.frameStart, c.frameEnd);
        pos += len;
      }
    }
    flush(out, 0, pos);
  } catch (cause) {
    throw cause instanceof ZephyrError ? cause : new ZephyrError("IO", `writing merge run ${target} failed`, { cause });
  } finally {
    closeSync(fd);
  }
}
