// Canonical JSON (sorted keys) and the short hash that step identities are made of.
import { createHash } from "node:crypto";

/** A JSON value with no undefined, NaN or Infinity. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * JSON with object keys sorted at every level and no whitespace: two equal values always give the
 * same text, whatever order their keys were written in.
 */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
}

/** Hex sha256 of a string, cut to `length` characters. */
export function shortHash(text: string, length = 8): string {
  return createHash("sha256").update(text).digest("hex").slice(0, length);
}
