// Logical plan → physical stages. Per-record operations fuse into the open stage; groupBy,
// deduplicate, join, reshard, reduce and take (its global half) close it. Filters and projections
// directly after a Parquet read move into the reader.
import { ZephyrError } from "../errors.ts";
import type { ColumnFilter } from "./columnFilter.ts";
import { planFingerprint } from "./fingerprint.ts";
import type { LogicalPlan, OpSpec, SourceSpec, UserFn } from "./ops.ts";
import { PER_RECORD_KINDS } from "./ops.ts";

/** A per-record operation of a stage (`fold` is the per-shard half of `reduce`). */
export type FusedOp =
  | Extract<OpSpec, { kind: "map" | "filter" | "where" | "select" | "flatMap" | "mapShard" | "window" | "take" }>
  | { readonly kind: "fold"; readonly step: UserFn; readonly init: { readonly value: unknown } | undefined };

/** How a stage gets its records. */
export type StageInput =
  | { readonly kind: "source"; readonly source: SourceSpec }
  | { readonly kind: "shuffle"; readonly from: number; readonly mode: "group" | "dedup"; readonly reducer?: UserFn; readonly shards?: number; readonly loop?: StageLoop }
  | { readonly kind: "join"; readonly left: number; readonly right: number; readonly joinKind: "inner" | "left"; readonly shards?: number }
  | { readonly kind: "reshard"; readonly from: number; readonly shards: number }
  | { readonly kind: "gather"; readonly from: number; readonly combine?: { readonly fn: UserFn; readonly hasInit: boolean } };

/**
 * A stage that reruns on its own output until a round adds nothing to the user counter
 * `counter` (its first round reads the stage `from`; it scatters by the same key each round).
 */
export interface StageLoop {
  readonly counter: string;
  readonly roundsCounter: string;
  readonly maxRounds: number;
}

/** Where a stage's records go. */
export type StageOutput = { readonly kind: "scatter"; readonly key: UserFn } | { readonly kind: "chunks" } | { readonly kind: "sink" };

/** One physical stage: every shard reads its input, runs the fused operations, and writes its output. */
export interface Stage {
  /** Index in the plan (stages run in this order). */
  readonly id: number;
  /** Input → operations → output, as `explain()` prints it. */
  readonly name: string;
  /** How the stage gets its records. */
  readonly input: StageInput;
  /** The per-record operations fused into the stage. */
  readonly ops: readonly FusedOp[];
  /** Where the stage's records go. */
  readonly output: StageOutput;
}

/** A Dataset's physical plan: stages in the order they run (the last one feeds the sink). */
export interface DatasetPlan {
  /** The stages, in the order they run. */
  readonly stages: readonly Stage[];
  /** Hash of every stage's inputs, operations (kinds, parameters, function arity) and outputs. */
  readonly fingerprint: string;
  /** The stages as text, one line each. */
  explain(): string;
}

function sourceLabel(s: SourceSpec): string {
  switch (s.kind) {
    case "list":
      return `fromList(${s.items.length} items, ${s.shards} shards)`;
    case "iterable":
      return "fromIterable";
    case "files":
      return `fromFiles(${s.patterns.join(", ")})`;
    case "jsonl":
    case "text":
      return `${s.kind === "jsonl" ? "readJsonl" : "readText"}(${s.patterns.join(", ")}${s.onBadRecord === "skip" ? ", skip bad records" : ""}${s.invalidUtf8 === "replace" ? ", replace invalid UTF-8" : ""})`;
    case "parquet": {
      const extra = [s.columns ? `columns=[${s.columns.join(",")}]` : "", s.filter ? `filter=${JSON.stringify(s.filter)}` : ""].filter(Boolean);
      return `readParquet(${[s.patterns.join(", "), ...extra].join(", ")})`;
    }
  }
}

function opLabel(op: FusedOp): string {
  switch (op.kind) {
    case "window":
      return `window(${op.size})`;
    case "take":
      return `take(${op.n})`;
    case "select":
      return `select(${op.columns.join(",")})`;
    case "where":
      return `filter(${JSON.stringify(op.filter)})`;
    case "fold":
      return "reduce(per shard)";
    default:
      return op.kind;
  }
}

function inputLabel(input: StageInput): string {
  switch (input.kind) {
    case "source":
      return sourceLabel(input.source);
    case "shuffle":
      if (input.loop) return `repeat groupBy(from stage ${input.from}, then itself, until ${input.loop.counter} stays 0)`;
      return input.mode === "group" ? `groupBy(from stage ${input.from})` : `deduplicate(from stage ${input.from})`;
    case "join":
      return `${input.joinKind} join(stage ${input.left} ⋈ stage ${input.right})`;
    case "reshard":
      return `reshard(${input.shards}, from stage ${input.from})`;
    case "gather":
      return `gather(from stage ${input.from}${input.combine ? ", reduce" : ""})`;
  }
}

function outputLabel(output: StageOutput): string {
  return output.kind === "scatter" ? "scatter by key" : output.kind === "chunks" ? "spill" : "sink";
}

/** Top-level column names a filter reads. */
function filterColumns(f: ColumnFilter, into: Set<string>): Set<string> {
  for (const [k, v] of Object.entries(f)) {
    if (k === "$and" || k === "$or" || k === "$nor") for (const sub of v as ColumnFilter[]) filterColumns(sub, into);
    else into.add(k);
  }
  return into;
}

/**
 * Folds the leading `select`s and declarative filters after a Parquet read into the read spec.
 * Stops at the first other operation: a user function could read a column a projection drops. A
 * filter on a column an earlier `select` dropped is not pushed (the reader would still see it).
 */
function pushdown(source: SourceSpec, ops: readonly OpSpec[]): { source: SourceSpec; rest: readonly OpSpec[] } {
  if (source.kind !== "parquet") return { source, rest: ops };
  let columns = source.columns;
  let filter = source.filter;
  let i = 0;
  for (; i < ops.length; i++) {
    const op = ops[i];
    if (op.kind === "select") {
      columns = columns ? columns.filter((c) => op.columns.includes(c)) : [...op.columns];
    } else if (op.kind === "where") {
      if (columns && [...filterColumns(op.filter, new Set())].some((c) => !columns!.includes(c))) break;
      filter = filter ? { $and: [filter, op.filter] } : op.filter;
    } else {
      break;
    }
  }
  if (i === 0) return { source, rest: ops };
  return { source: { ...source, columns, filter }, rest: ops.slice(i) };
}

class Builder {
  readonly stages: Stage[] = [];

  /** Plans `lp` and returns its last stage, still open (its output not yet decided). */
  build(lp: LogicalPlan): { input: StageInput; ops: FusedOp[] } {
    const { source, rest } = pushdown(lp.source, lp.ops);
    let open: { input: StageInput; ops: FusedOp[] } = { input: { kind: "source", source }, ops: [] };
    for (const op of rest) {
      if (PER_RECORD_KINDS.has(op.kind)) {
        open.ops.push(op as FusedOp);
        if (op.kind === "take") open = { input: { kind: "gather", from: this.close(open, { kind: "chunks" }) }, ops: [op] };
        continue;
      }
      switch (op.kind) {
        case "reshard":
          open = { input: { kind: "reshard", from: this.close(open, { kind: "chunks" }), shards: op.shards }, ops: [] };
          break;
        case "groupBy":
          open = { input: { kind: "shuffle", mode: "group", from: this.close(open, { kind: "scatter", key: op.key }), reducer: op.reducer, shards: op.shards }, ops: [] };
          break;
        case "deduplicate":
          open = { input: { kind: "shuffle", mode: "dedup", from: this.close(open, { kind: "scatter", key: op.key }), shards: op.shards }, ops: [] };
          break;
        case "iterate": {
          open.ops.push({ kind: "flatMap", fn: op.emit });
          const first = this.close(open, { kind: "scatter", key: op.key });
          const loop: StageLoop = { counter: op.counter, roundsCounter: op.roundsCounter, maxRounds: op.maxRounds };
          const body = this.close(
            { input: { kind: "shuffle", mode: "group", from: first, reducer: op.step, loop }, ops: [{ kind: "flatMap", fn: op.emit }] },
            { kind: "scatter", key: op.key },
          );
          open = { input: { kind: "shuffle", mode: "group", from: body, reducer: op.finish }, ops: [] };
          break;
        }
        case "reduce": {
          open.ops.push({ kind: "fold", step: op.step, init: op.init });
          const from = this.close(open, { kind: "chunks" });
          open = { input: { kind: "gather", from, combine: { fn: op.combine, hasInit: op.init !== undefined } }, ops: [] };
          break;
        }
        case "join": {
          const right = this.close(this.build(op.other), { kind: "scatter", key: op.key });
          const left = this.close(open, { kind: "scatter", key: op.key });
          open = { input: { kind: "join", left, right, joinKind: op.joinKind, shards: op.shards }, ops: [] };
          break;
        }
        default:
          throw new ZephyrError("INTERNAL", `planner: unknown operation ${(op as OpSpec).kind}`);
      }
    }
    return open;
  }

  close(open: { input: StageInput; ops: FusedOp[] }, output: StageOutput): number {
    const id = this.stages.length;
    const name = [inputLabel(open.input), ...open.ops.map(opLabel), outputLabel(output)].join(" → ");
    this.stages.push({ id, name, input: open.input, ops: open.ops, output });
    return id;
  }
}

/** Plans a logical plan into stages (no I/O: globs are expanded when the plan runs). */
export function planStages(lp: LogicalPlan): DatasetPlan {
  const b = new Builder();
  b.close(b.build(lp), { kind: "sink" });
  const stages = b.stages;
  const fingerprint = planFingerprint(stages);
  return {
    stages,
    fingerprint,
    explain: () => [`plan ${fingerprint.slice(0, 12)}: ${stages.length} stage${stages.length === 1 ? "" : "s"}`, ...stages.map((s) => `  stage ${s.id}: ${s.name}`)].join("\n"),
  };
}
