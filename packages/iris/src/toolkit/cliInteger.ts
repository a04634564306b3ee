// Whole numbers from the command line (flags, environment): strict digits only, so `1e3`, `0x10`,
// `1.5` and `` are refused rather than read as something else.
import { InvalidArgumentError } from "commander";

export interface IntegerRange {
  /** Smallest accepted value (default: any). */
  min?: number;
  /** Largest accepted value (default: any). */
  max?: number;
  /** What the message says was expected (default: from the range, `an integer ≥ 1`). */
  expected?: string;
}

/** `an integer`, `an integer ≥ 1`, `an integer in 0..65535`, `an integer ≤ 9`. */
export function describeIntegerRange(r: IntegerRange): string {
  if (r.expected !== undefined) return r.expected;
  const lo = r.min !== undefined && r.min > Number.MIN_SAFE_INTEGER;
  const hi = r.max !== undefined && r.max < Number.MAX_SAFE_INTEGER;
  if (lo && hi) return `an integer in ${r.min}..${r.max}`;
  if (lo) return `an integer ≥ ${r.min}`;
  if (hi) return `an integer ≤ ${r.max}`;
  return "an integer";
}

/** The integer `text` spells within `range`; undefined when it does not. */
export function toInteger(text: string, range: IntegerRange = {}): number | undefined {
  const t = text.trim();
  if (!/^[-+]?\d+$/.test(t)) return undefined;
  const n = Number(t);
  if (!Number.isSafeInteger(n)) return undefined;
  if (range.min !== undefined && n < range.min) return undefined;
  if (range.max !== undefined && n > range.max) return undefined;
  return n;
}

/**
 * A commander `argParser` for an integer flag: throws `InvalidArgumentError` (which commander
 * prints with the flag's name) `expected an integer ≥ 1, got 0`.
 */
export function integerArg(range: IntegerRange = {}): (text: string) => number {
  return (text) => {
    const n = toInteger(text, range);
    if (n === undefined) throw new InvalidArgumentError(`expected ${describeIntegerRange(range)}, got ${text}`);
    return n;
  };
}

/**
 * An integer flag of a script that reads `process.argv` itself (`--runs 5`): `fallback` when the
 * flag is absent; an Error naming the flag when its value is missing or not an integer in range.
 */
export function integerFlag(name: string, fallback: number, range: IntegerRange = {}, argv: readonly string[] = process.argv): number {
  const flag = name.startsWith("-") ? name : `--${name}`;
  const i = argv.indexOf(flag);
  if (i < 0) return fallback;
  const text = argv[i + 1];
  const n = text === undefined ? undefined : toInteger(text, range);
  if (n === undefined) throw new Error(`${flag}: expected ${describeIntegerRange(range)}, got ${text === undefined ? "nothing" : text}`);
  return n;
}
