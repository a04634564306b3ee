// resolveGraph: steps → a graph with identities, output paths and resolved configs.
import path from "node:path";
import { formatZodIssues } from "@marin/iris/toolkit";
import { MarinError } from "../errors.ts";
import { canonicalJson, shortHash } from "./canonical.ts";
import type { JsonValue } from "./canonical.ts";
import { isIgnored, isOutputRef, isStep } from "./step.ts";
import type { Step } from "./step.ts";

/** What a step's hash is computed over; recorded in `info.json` so `explain` can diff it. */
export interface StepIdentity {
  /** The config with references as `{ $dep: "<name>-<hash>", $sub? }` and ignored fields left out. */
  config: JsonValue;
  version: string | null;
  /** `<name>-<hash>` of every dependency that counts for identity, sorted. */
  deps: string[];
}

/** A step placed in a graph: its identity, output path and resolved config. */
export interface ResolvedStep {
  readonly step: Step<any>;
  readonly name: string;
  readonly hash: string;
  /** `<name>-<hash>`. */
  readonly id: string;
  readonly identity: StepIdentity;
  /** `<prefix>/<name>-<hash>` (absolute). */
  readonly outputPath: string;
  /** Every step this one reads (including ones referenced only inside `ignore`). */
  readonly deps: ResolvedStep[];
  /** The config `fn` receives: references replaced by absolute paths, `ignore` unwrapped. */
  readonly config: unknown;
  /** A hash of `fn`'s source (see {@link codeHashOf}): recorded with the output; not part of identity. */
  readonly codeHash: string;
}

/**
 * A hash of a step function's source text (runs of whitespace collapsed, so reformatting is not a
 * change). Recorded in the status when the step succeeds, so that a cached output whose function
 * has changed since can be pointed out; identity stays config + version.
 */
export function codeHashOf(fn: (...args: never[]) => unknown): string {
  return shortHash(Function.prototype.toString.call(fn).replace(/\s+/g, " "), 16);
}

/** The steps reachable from an experiment's returned steps, in a topological order. */
export interface StepGraph {
  readonly prefix: string;
  readonly steps: ResolvedStep[];
  readonly byName: ReadonlyMap<string, ResolvedStep>;
}

interface Identified {
  step: Step<any>;
  hash: string;
  id: string;
  identity: StepIdentity;
  deps: Step<any>[];
}

const HASH_LENGTH = 8;

function describePath(p: (string | number)[]): string {
  if (p.length === 0) return "config";
  return p.map((s, i) => (typeof s === "number" ? `[${s}]` : i === 0 ? s : `.${s}`)).join("");
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "object") return (v as object).constructor?.name ?? "object";
  return typeof v;
}

/**
 * Computes step identities (memoised per step object, independent of any prefix), then places
 * them under `prefix`.
 */
export class GraphBuilder {
  private readonly memo = new Map<Step<any>, Identified>();
  private readonly visiting = new Set<Step<any>>();

  /** The identity of one step (and, recursively, of everything it references). */
  identify(step: Step<any>): Identified {
    const hit = this.memo.get(step);
    if (hit) return hit;
    if (this.visiting.has(step)) throw new MarinError("INVALID_GRAPH", `dependency cycle through step ${step.name}`);
    this.visiting.add(step);
    const deps: Step<any>[] = [];
    const idDeps = new Set<string>();
    const walk = (v: unknown, at: (string | number)[], counted: boolean): JsonValue | undefined => {
      if (v === null || typeof v === "string" || typeof v === "boolean") return v;
      if (typeof v === "number") {
        if (!Number.isFinite(v)) {
          throw new MarinError("INVALID_CONFIG", `step ${step.name}: ${describePath(at)}: expected a finite number, got ${v}`);
        }
        return Object.is(v, -0) ? 0 : v;
      }
      if (v === undefined) return undefined;
      if (isOutputRef(v)) {
        const dep = this.identify(v.step);
        if (!deps.includes(v.step)) deps.push(v.step);
        if (counted) idDeps.add(dep.id);
        return v.subPath === undefined ? { $dep: dep.id } : { $dep: dep.id, $sub: v.subPath };
      }
      if (isIgnored(v)) {
        walk(v.value, at, false);
        return undefined;
      }
      if (isStep(v)) {
        throw new MarinError("INVALID_CONFIG", `step ${step.name}: ${describePath(at)}: a step inside a config must be wrapped in outputOf(step)`);
      }
      if (Array.isArray(v)) {
        return v.map((e, i) => {
          at.push(i);
          const r = walk(e, at, counted);
          at.pop();
          return r === undefined ? { $ignored: true } : r;
        });
      }
      if (typeof v === "object") {
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) {
          throw new MarinError("INVALID_CONFIG", `step ${step.name}: ${describePath(at)}: expected plain data, got ${typeName(v)}`);
        }
        const out: Record<string, JsonValue> = {};
        for (const k in v) {
          at.push(k);
          const r = walk((v as Record<string, unknown>)[k], at, counted);
          at.pop();
          if (r !== undefined) out[k] = r;
        }
        return out;
      }
      throw new MarinError("INVALID_CONFIG", `step ${step.name}: ${describePath(at)}: expected plain data, got ${typeName(v)}`);
    };
    const config = walk(step.config, [], true) ?? null;
    const identity: StepIdentity = { config, version: step.version ?? null, deps: [...idDeps].sort() };
    const hash = shortHash(canonicalJson(identity as unknown as JsonValue), HASH_LENGTH);
    const result: Identified = { step, hash, id: `${step.name}-${hash}`, identity, deps };
    this.visiting.delete(step);
    this.memo.set(step, result);
    return result;
  }

  /** Every step reachable from `roots`, deduplicated by id, topologically ordered, placed under `prefix`. */
  build(roots: readonly Step<any>[], prefix: string): StepGraph {
    const absPrefix = path.resolve(prefix);
    const byId = new Map<string, ResolvedStep>();
    const byName = new Map<string, ResolvedStep>();
    const ordered: ResolvedStep[] = [];
    const place = (step: Step<any>): ResolvedStep => {
      const ident = this.identify(step);
      const existing = byId.get(ident.id);
      if (existing) return existing;
      const deps = ident.deps.map(place);
      const outputPath = path.join(absPrefix, ident.id);
      const resolveValue = (v: unknown): unknown => {
        if (isOutputRef(v)) {
          const dep = byId.get(this.identify(v.step).id)!;
          return v.subPath === undefined ? dep.outputPath : path.join(dep.outputPath, v.subPath);
        }
        if (isIgnored(v)) return resolveValue(v.value);
        if (Array.isArray(v)) return v.map(resolveValue);
        if (v !== null && typeof v === "object") {
          return Object.fromEntries(
            Object.entries(v)
              .filter(([, e]) => e !== undefined)
              .map(([k, e]) => [k, resolveValue(e)]),
          );
        }
        return v;
      };
      let config = resolveValue(step.config);
      if (step.schema) {
        const parsed = step.schema.safeParse(config);
        if (!parsed.success) {
          const lines = formatZodIssues(parsed.error, { path: describePath, root: describePath([]), separator: "\n  ", trimInvalidInput: true, input: config, missing: "missing" });
          throw new MarinError("INVALID_CONFIG", `step ${step.name}: invalid config:\n  ${lines}`);
        }
        config = parsed.data;
      }
      const resolved: ResolvedStep = {
        step,
        name: step.name,
        hash: ident.hash,
        id: ident.id,
        identity: ident.identity,
        outputPath,
        deps,
        config,
        codeHash: codeHashOf(step.fn),
      };
      const clash = byName.get(step.name);
      if (clash) {
        throw new MarinError("INVALID_GRAPH", `two different steps are named ${step.name} (${clash.id} and ${ident.id}); give them distinct names`);
      }
      byId.set(ident.id, resolved);
      byName.set(step.name, resolved);
      ordered.push(resolved);
      return resolved;
    };
    for (const r of roots) {
      if (!isStep(r)) throw new MarinError("INVALID_GRAPH", `expected steps made by defineStep, got ${typeName(r)}`);
      place(r);
    }
    return { prefix: absPrefix, steps: ordered, byName };
  }
}

/** Resolves the graph of `roots` under `prefix` (see {@link GraphBuilder}). */
export function resolveGraph(roots: readonly Step<any>[], prefix: string): StepGraph {
  return new GraphBuilder().build(roots, prefix);
}
