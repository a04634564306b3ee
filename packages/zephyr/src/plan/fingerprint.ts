// A plan's fingerprint and a run's identity: what the coordinator computes once and every worker
// reproduces before it runs a shard, so that a module edited (or built differently) on the worker
// is refused instead of silently producing other data. Knows stages only by shape (the planner
// imports this module, not the other way round).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { pack } from "msgpackr";
import { ZephyrError } from "../errors.ts";

/** What a fingerprint reads of a stage (a planner `Stage` has these and more). */
export interface FingerprintedStage {
  readonly input: unknown;
  readonly ops: unknown;
  readonly output: unknown;
}

/** Where a `definePipeline` plan comes from, as far as its identity goes. */
export interface FingerprintedOrigin {
  readonly url: string;
  readonly name: string;
  readonly args: unknown;
}

function describe(value: unknown, hash: (v: unknown) => string, bodies: boolean): unknown {
  // By default not the function's text: transpilers (tsx, vitest) print the same source
  // differently, so text would differ between a coordinator and its workers. A pipeline's function
  // bodies are covered by the hash of its module file instead (see originFingerprint); a plain
  // plan, which runs in one process, hashes the text (see planFingerprint).
  if (typeof value === "function") return bodies ? `fn/${value.length}/${createHash("sha256").update(value.toString()).digest("hex")}` : `fn/${value.length}`;
  if (typeof value === "bigint") return `bigint:${value.toString()}`;
  if (Array.isArray(value)) return value.map((v) => describe(v, hash, bodies));
  if (value !== null && typeof value === "object") {
    if (Symbol.asyncIterator in value || (Symbol.iterator in value && !Array.isArray(value))) return "iterable";
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      // The items of an in-memory source go in by content hash, not verbatim.
      out[k] = k === "items" && Array.isArray(v) ? `items:${v.length}:${hash(v)}` : describe(v, hash, bodies);
    }
    return out;
  }
  return value;
}

function hashItems(items: unknown): string {
  let bytes: Uint8Array;
  try {
    bytes = pack(items);
  } catch {
    bytes = Buffer.from(String(JSON.stringify(items, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))));
  }
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * SHA-256 over the stages' inputs, operations (kinds, parameters, function arity) and outputs.
 * With `functionBodies`, also the source text of every function (for plans that are not
 * `definePipeline`s: their outputs' commit markers then change when a function is edited, so
 * `skipExisting` does not keep shards an older version of the code wrote). Values a function
 * captures from its scope are not seen.
 */
export function planFingerprint(stages: readonly FingerprintedStage[], options: { functionBodies?: boolean } = {}): string {
  const text = JSON.stringify(
    describe(
      stages.map((s) => ({ input: s.input, ops: s.ops, output: s.output })),
      hashItems,
      options.functionBodies ?? false,
    ),
  );
  return createHash("sha256").update(text).digest("hex");
}

const moduleHashes = new Map<string, string>();

/** SHA-256 of a module file's source text (cached per process). */
function moduleHash(url: string): string {
  let h = moduleHashes.get(url);
  if (h === undefined) {
    let text: Buffer | string;
    try {
      text = readFileSync(url.startsWith("file:") ? fileURLToPath(url) : url);
    } catch {
      text = `unreadable:${url}`;
    }
    h = createHash("sha256").update(text).digest("hex");
    moduleHashes.set(url, h);
  }
  return h;
}

/**
 * The fingerprint a worker must reproduce for a `definePipeline` plan: the plan's structure, the
 * source text of the module that defines it (so an edited module is refused), its name and args.
 */
function originFingerprint(planFingerprint: string, origin: FingerprintedOrigin): string {
  return createHash("sha256")
    .update(JSON.stringify([planFingerprint, moduleHash(origin.url), origin.name, origin.args]))
    .digest("hex");
}

/**
 * A run's identity, what its outputs are tied to and what its workers must reproduce. For a
 * pipeline: the plan's structure plus its module's text, name and arguments, which reach closures
 * the structure cannot see. For a plain plan (one process, never rebuilt): its structure and its
 * functions' text. The coordinator computes it once per run and hands it to backends and tasks.
 */
export function runIdentity(plan: { readonly stages: readonly FingerprintedStage[]; readonly fingerprint: string }, origin: FingerprintedOrigin | undefined): string {
  return origin ? originFingerprint(plan.fingerprint, origin) : planFingerprint(plan.stages, { functionBodies: true });
}

/**
 * What a worker runs before any shard of a plan it rebuilt from `origin`: throws
 * `FINGERPRINT_MISMATCH` unless the rebuilt plan has the coordinator's identity `expected`.
 */
export function checkRunIdentity(plan: { readonly stages: readonly FingerprintedStage[]; readonly fingerprint: string }, origin: FingerprintedOrigin, expected: string): void {
  const got = runIdentity(plan, origin);
  if (got === expected) return;
  throw new ZephyrError(
    "FINGERPRINT_MISMATCH",
    `pipeline ${origin.name} of ${origin.url} rebuilt on this worker has fingerprint ${got.slice(0, 12)}, the coordinator's is ${expected.slice(0, 12)}: the module or its arguments differ between coordinator and worker (is the build function deterministic?); refusing to run`,
  );
}
