/**
 * Bugs, as opposed to expected failures: an `invariant` that does not hold or a value that should
 * be impossible. These throw plain `Error`s on purpose (an `IrisError` means "expected failure").
 */
export function invariant(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`invariant failed: ${message}`);
}

/** Exhaustiveness check for discriminated unions: a compile error when a case is missed. */
export function assertNever(value: never, what = "value"): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}
