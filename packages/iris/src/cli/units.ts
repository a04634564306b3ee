// Parsers for the values people type on the iris command line. Each throws commander's
// InvalidArgumentError, so commander reports `error: option '--memory <size>' argument '2X' is
// invalid. expected …` and exits 1.
import { InvalidArgumentError } from "commander";
import type { Constraint } from "../jobSpec.ts";

const SIZE = /^(\d+(?:\.\d+)?|\.\d+)\s*([kmgtp]?)(i?)(b?)$/i;
const POWERS: Record<string, number> = { "": 0, k: 1, m: 2, g: 3, t: 4, p: 5 };

/**
 * A memory size in bytes: `1073741824`, `512M`, `2G`, `1.5Gi`, `2GB`. Suffixes are binary
 * (K = 1024, like Docker's `--memory`), with or without `i` and `B`.
 */
export function parseSize(text: string): number {
  const m = SIZE.exec(text.trim());
  if (!m) throw new InvalidArgumentError(`expected a size such as 512M, 2G or 1073741824, got "${text}"`);
  const bytes = Math.floor(Number(m[1]) * 1024 ** POWERS[m[2].toLowerCase()]);
  if (!Number.isSafeInteger(bytes)) throw new InvalidArgumentError(`size "${text}" is too large`);
  return bytes;
}

/** CPU as cores (`0.5`, `2`) or millicores (`250m`), returned in millicores. */
export function parseCpu(text: string): number {
  const t = text.trim();
  const milli = /^(\d+)m$/.exec(t);
  if (milli) return Number(milli[1]);
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(t)) {
    throw new InvalidArgumentError(`expected cores such as 0.5 or 2, or millicores such as 250m, got "${text}"`);
  }
  return Math.round(Number(t) * 1000);
}

/** A duration in seconds (`30`, `0.5`), returned in milliseconds. */
export function parseSeconds(text: string): number {
  const t = text.trim();
  const n = Number(t);
  if (t === "" || !Number.isFinite(n) || n <= 0) {
    throw new InvalidArgumentError(`expected a positive number of seconds, got "${text}"`);
  }
  return Math.round(n * 1000);
}

/** JSON text (`--args '{"n": 3}'`), parsed. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new InvalidArgumentError(`expected JSON, got ${JSON.stringify(text)} (${(e as Error).message})`);
  }
}

/** `key=value` (the value may itself contain `=`). */
export function parseKeyValue(text: string): [key: string, value: string] {
  const i = text.indexOf("=");
  if (i <= 0) throw new InvalidArgumentError(`expected key=value, got "${text}"`);
  return [text.slice(0, i), text.slice(i + 1)];
}

/** A commander reducer collecting repeated `key=value` options into a record. */
export function collectKeyValue(text: string, previous: Record<string, string> | undefined): Record<string, string> {
  const [k, v] = parseKeyValue(text);
  return { ...previous, [k]: v };
}

/** A commander reducer collecting a repeated option into a list. */
export function collect<T>(parse: (text: string) => T): (text: string, previous: T[] | undefined) => T[] {
  return (text, previous) => [...(previous ?? []), parse(text)];
}

const CONSTRAINT = /^([^\s=!<>]+)\s*(?:(!=|==|=|>|<)\s*(.*)|\s+in\s+(.+))$/i;

/**
 * A constraint on worker attributes: `zone=us-east` (EQ), `zone!=eu` (NE), `gpu` (EXISTS),
 * `zone in us-east,us-west` (IN), `rank>3` (GT), `rank<3` (LT).
 */
export function parseConstraint(text: string): Constraint {
  const t = text.trim();
  if (/^[^\s=!<>]+$/.test(t)) return { key: t, op: "EXISTS" };
  const m = CONSTRAINT.exec(t);
  if (!m) {
    throw new InvalidArgumentError(`expected key=value, key!=value, key>N, key<N, "key in a,b" or key, got "${text}"`);
  }
  const [, key, op, value, list] = m;
  if (list !== undefined)
    return {
      key,
      op: "IN",
      values: list
        .split(",")
        .map((v) => v.trim())
        .filter((v) => v !== ""),
    };
  if (op === ">" || op === "<") {
    if (!Number.isFinite(Number(value)) || value.trim() === "") {
      throw new InvalidArgumentError(`expected a number after ${op} in "${text}"`);
    }
    return { key, op: op === ">" ? "GT" : "LT", value: value.trim() };
  }
  return { key, op: op === "!=" ? "NE" : "EQ", value };
}
