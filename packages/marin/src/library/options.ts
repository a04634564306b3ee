// The run-time check of a standard step's options: zod strict objects, so that a misspelled key is an error with a suggestion.
import { z } from "@marin/iris/toolkit";
import { formatZodIssues } from "@marin/iris/toolkit";
import { MarinError } from "../errors.ts";

/** The keys a standard step's options may have: `true` for a leaf, a nested spec for a section checked key by key. */
export interface OptionKeys {
  readonly [key: string]: true | OptionKeys;
}

/** The keys of a step's `resources` option. */
export const RESOURCE_KEYS: OptionKeys = { cpuMillis: true, memoryBytes: true, devices: true };

/** Edit distance between two short strings (for "did you mean"). */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const keep = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = keep;
    }
  }
  return row[b.length];
}

/** The known key closest to `key`, if it is close enough to be a likely typo. */
export function suggestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const d = k.toLowerCase() === key.toLowerCase() ? 0 : distance(key, k);
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

function schemaOf(keys: OptionKeys): z.ZodType {
  return z.strictObject(Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, v === true ? z.unknown().optional() : schemaOf(v).optional()])));
}

function keysAt(keys: OptionKeys, at: readonly PropertyKey[]): string[] {
  let cur: true | OptionKeys = keys;
  for (const p of at) {
    if (cur === true) return [];
    const next: true | OptionKeys | undefined = cur[String(p)];
    if (next === undefined) return [];
    cur = next;
  }
  return cur === true ? [] : Object.keys(cur);
}

/**
 * Checks the options object a standard step factory received (at run time: scripts are not always
 * typechecked): every key must be known, nested sections too. Throws INVALID_CONFIG naming each
 * unknown key by its path, with the nearest known key as a suggestion. Values are checked later by
 * the step's config schema, when the graph is resolved (before any step runs).
 */
export function checkOptions(factory: string, keys: OptionKeys, opts: unknown): void {
  if (opts === null || typeof opts !== "object" || Array.isArray(opts)) {
    throw new MarinError("INVALID_CONFIG", `${factory}: expected an options object, got ${opts === null ? "null" : Array.isArray(opts) ? "an array" : typeof opts}`);
  }
  const name = (opts as { name?: unknown }).name;
  const parsed = schemaOf(keys).safeParse(opts);
  if (parsed.success) return;
  const lines = formatZodIssues(parsed.error, {
    root: "options",
    separator: "\n  ",
    trimInvalidInput: true,
    line: (issue, at) => {
      if (issue.code !== "unrecognized_keys") return undefined;
      const known = keysAt(keys, at);
      return issue.keys
        .map((k) => {
          const s = suggestKey(k, known);
          return `unknown key ${[...at, k].join(".")}${s ? ` (did you mean ${s}?)` : ` (known: ${known.join(", ")})`}`;
        })
        .join("\n  ");
    },
  });
  const label = `${factory}${typeof name === "string" ? ` (step ${name})` : ""}`;
  throw new MarinError("INVALID_CONFIG", `${label}: invalid options:\n  ${lines}`);
}

/** The keys of a zod object schema, as leaves (for {@link checkOptions}). */
export function leavesOf(schema: { shape: Record<string, unknown> }): OptionKeys {
  return Object.fromEntries(Object.keys(schema.shape).map((k) => [k, true as const]));
}
