// Fused per-record operations, run as synchronous loops over batches: one call per operation per
// batch, no promise or generator per record. Only `mapShard` (whose user function consumes an
// async iterable) crosses an async boundary per record.
import { batchesOf } from "./batches.ts";
import { ZephyrError } from "../errors.ts";
import { matchesFilter } from "../plan/columnFilter.ts";
import type { TaskContext } from "../plan/ops.ts";
import type { FusedOp } from "../plan/planner.ts";

/** Where a user function ran, for error messages. */
export interface StageWhere {
  readonly stageId: number;
  readonly stageName: string;
  readonly shard: number;
  readonly numShards: number;
}

const EMPTY: unknown[] = [];

function preview(record: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(record, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)) ?? String(record);
  } catch {
    text = String(record);
  }
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** The error for a user function that threw: names the stage, the shard and the record's position. */
export function userFunctionError(where: StageWhere, label: string, position: number | undefined, record: unknown, cause: unknown): ZephyrError {
  if (cause instanceof ZephyrError && cause.code === "USER_FUNCTION") return cause;
  const msg = cause instanceof Error ? cause.message : String(cause);
  const pos = position === undefined ? "" : ` on record #${position} of its input (${preview(record)})`;
  return new ZephyrError("USER_FUNCTION", `stage ${where.stageId} [${where.stageName}], shard ${where.shard} of ${where.numShards}: ${label} threw${pos}: ${msg}`, { cause });
}

interface Step {
  process(batch: unknown[]): unknown[];
  finish(): unknown[];
}

/** A run of per-record operations compiled into batch loops. */
export class Segment {
  private readonly steps: Step[];
  /** Set once a `take` has all it needs: the driver stops reading input. */
  stopped = false;

  constructor(steps: Step[]) {
    this.steps = steps;
  }

  /** Runs one input batch through every operation. */
  process(batch: unknown[]): unknown[] {
    let b = batch;
    const steps = this.steps;
    for (let i = 0; i < steps.length && b.length > 0; i++) b = steps[i].process(b);
    return b;
  }

  /** Flushes buffered state (windows, folds) through the remaining operations. */
  finish(): unknown[] {
    let out: unknown[] = EMPTY;
    const steps = this.steps;
    for (let i = 0; i < steps.length; i++) {
      let b = out.length > 0 ? steps[i].process(out) : EMPTY;
      const tail = steps[i].finish();
      if (tail.length > 0) b = b.length > 0 ? b.concat(tail) : tail;
      out = b;
    }
    return out;
  }
}

function compileStep(op: Exclude<FusedOp, { kind: "mapShard" }>, index: number, ctx: TaskContext, where: StageWhere, segment: { stopped: boolean }): Step {
  const label = `${op.kind} (operation ${index + 1} of the stage)`;
  let seen = 0;
  switch (op.kind) {
    case "map": {
      const fn = op.fn as (r: unknown, c: TaskContext) => unknown;
      return {
        process(b) {
          const n = b.length;
          const out = new Array<unknown>(n);
          let i = 0;
          try {
            for (; i < n; i++) out[i] = fn(b[i], ctx);
          } catch (e) {
            throw userFunctionError(where, label, seen + i, b[i], e);
          }
          seen += n;
          return out;
        },
        finish: () => EMPTY,
      };
    }
    case "filter": {
      const fn = op.fn as (r: unknown, c: TaskContext) => unknown;
      return {
        process(b) {
          const n = b.length;
          const out: unknown[] = [];
          let i = 0;
          try {
            for (; i < n; i++) if (fn(b[i], ctx)) out.push(b[i]);
          } catch (e) {
            throw userFunctionError(where, label, seen + i, b[i], e);
          }
          seen += n;
          return out;
        },
        finish: () => EMPTY,
      };
    }
    case "where": {
      const filter = op.filter;
      return { process: (b) => b.filter((r) => matchesFilter(r, filter)), finish: () => EMPTY };
    }
    case "select": {
      const cols = op.columns;
      return {
        process: (b) =>
          b.map((r) => {
            const o: Record<string, unknown> = {};
            for (const c of cols) if (c in (r as object)) o[c] = (r as Record<string, unknown>)[c];
            return o;
          }),
        finish: () => EMPTY,
      };
    }
    case "flatMap": {
      const fn = op.fn as (r: unknown, c: TaskContext) => Iterable<unknown>;
      return {
        process(b) {
          const n = b.length;
          const out: unknown[] = [];
          let i = 0;
          try {
            for (; i < n; i++) {
              const items = fn(b[i], ctx);
              if (Array.isArray(items)) for (let j = 0; j < items.length; j++) out.push(items[j]);
              else for (const x of items) out.push(x);
            }
          } catch (e) {
            throw userFunctionError(where, label, seen + i, b[i], e);
          }
          seen += n;
          return out;
        },
        finish: () => EMPTY,
      };
    }
    case "window": {
      const size = op.size;
      let cur: unknown[] = [];
      return {
        process(b) {
          const out: unknown[] = [];
          for (let i = 0; i < b.length; i++) {
            cur.push(b[i]);
            if (cur.length === size) {
              out.push(cur);
              cur = [];
            }
          }
          return out;
        },
        finish() {
          if (cur.length === 0) return EMPTY;
          const last = cur;
          cur = [];
          return [last];
        },
      };
    }
    case "take": {
      let left = op.n;
      if (left === 0) segment.stopped = true;
      return {
        process(b) {
          if (left <= 0) return EMPTY;
          const out = b.length <= left ? b : b.slice(0, left);
          left -= out.length;
          if (left === 0) segment.stopped = true;
          return out;
        },
        finish: () => EMPTY,
      };
    }
    case "fold": {
      const step = op.step as (acc: unknown, r: unknown) => unknown;
      let has = op.init !== undefined;
      let acc = op.init?.value;
      return {
        process(b) {
          let i = 0;
          try {
            if (!has) {
              acc = b[0];
              has = true;
              i = 1;
            }
            for (; i < b.length; i++) acc = step(acc, b[i]);
          } catch (e) {
            throw userFunctionError(where, "reduce", seen + i, b[i], e);
          }
          seen += b.length;
          return EMPTY;
        },
        finish: () => (has ? [acc] : EMPTY),
      };
    }
  }
}

async function* segmentStream(input: AsyncIterable<unknown[]>, seg: Segment): AsyncGenerator<unknown[], void, undefined> {
  if (!seg.stopped) {
    for await (const batch of input) {
      const out = seg.process(batch);
      if (out.length > 0) yield out;
      if (seg.stopped) break;
    }
  }
  const tail = seg.finish();
  if (tail.length > 0) yield tail;
}

async function* records(input: AsyncIterable<unknown[]>): AsyncGenerator<unknown, void, undefined> {
  for await (const batch of input) yield* batch;
}

async function* mapShardStream(
  input: AsyncIterable<unknown[]>,
  fn: (r: AsyncIterable<unknown>, c: TaskContext) => Iterable<unknown> | AsyncIterable<unknown>,
  ctx: TaskContext,
  where: StageWhere,
  label: string,
): AsyncGenerator<unknown[], void, undefined> {
  try {
    yield* batchesOf(fn(records(input), ctx));
  } catch (e) {
    if (e instanceof ZephyrError) throw e;
    throw userFunctionError(where, label, undefined, undefined, e);
  }
}

/**
 * Applies a stage's fused operations to a stream of batches. Consecutive per-record operations
 * become one {@link Segment}; each `mapShard` sits between segments.
 */
export function applyOps(input: AsyncIterable<unknown[]>, ops: readonly FusedOp[], ctx: TaskContext, where: StageWhere): AsyncIterable<unknown[]> {
  let stream = input;
  let steps: Step[] = [];
  let seg = new Segment(steps);
  const flush = (): void => {
    if (steps.length > 0) stream = segmentStream(stream, seg);
    steps = [];
    seg = new Segment(steps);
  };
  ops.forEach((op, i) => {
    if (op.kind === "mapShard") {
      flush();
      stream = mapShardStream(stream, op.fn as never, ctx, where, `mapShard (operation ${i + 1} of the stage)`);
    } else {
      steps.push(compileStep(op, i, ctx, where, seg));
    }
  });
  flush();
  return stream;
}
