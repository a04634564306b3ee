// A plan's fingerprint: what a worker compares before it runs a shard, so that a module edited (or
// built differently) on the worker is refused instead of silently producing other data.
import { createHash } from "node:crypto";
import { pack } from "msgpackr";
import type { Stage } from "./planner.ts";

function describe(value: unknown, hash: (v: unknown) => string): unknown {
  if (typeof value === "function") return `fn:${value.toString()}`;
  if (typeof value === "bigint") return `bigint:${value.toString()}`;
  if (Array.isArray(value)) return value.map((v) => describe(v, hash));
  if (value !== null && typeof value === "object") {
    if (Symbol.asyncIterator in value || (Symbol.iterator in value && !Array.isArray(value))) return "iterable";
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      // The items of an in-memory source go in by content hash, not verbatim.
      out[k] = k === "items" && Array.isArray(v) ? `items:${v.length}:${hash(v)}` : describe(v, hash);
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

/** SHA-256 over the stages' inputs, operations (with function source text) and outputs. */
export function planFingerprint(stages: readonly Stage[]): string {
  const text = JSON.stringify(describe(stages.map((s) => ({ input: s.input, ops: s.ops, output: s.output })), hashItems));
  return createHash("sha256").update(text).digest("hex");
}
