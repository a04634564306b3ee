/** The closed set of codes a {@link LevanterError} carries. */
export const LEVANTER_ERROR_CODES = [
  "INVALID_CONFIG",
  "BACKEND_UNAVAILABLE",
  "CHECKPOINT_NOT_FOUND",
  "CHECKPOINT_CORRUPT",
  "DATA",
  "NON_FINITE_LOSS",
  "DISTRIBUTED",
  "PEER_FAILED",
  "ENGINE_BUSY",
  "INVALID_REQUEST",
  "KV_BUDGET",
  "INTERNAL",
] as const;

/** What kind of failure a {@link LevanterError} is. */
export type LevanterErrorCode = (typeof LEVANTER_ERROR_CODES)[number];

// Failures that a rerun of the same task would hit again: configuration, data and checkpoint errors.
const DETERMINISTIC: ReadonlySet<LevanterErrorCode> = new Set(["INVALID_CONFIG", "DATA", "CHECKPOINT_NOT_FOUND", "CHECKPOINT_CORRUPT", "INVALID_REQUEST"]);

/**
 * The error every @marin/levanter API throws for an expected failure: a typed `code`, a message for
 * people that names what was wrong, and the underlying error as `cause`. `retryable` is false for
 * the deterministic codes (INVALID_CONFIG, DATA, CHECKPOINT_NOT_FOUND, CHECKPOINT_CORRUPT,
 * INVALID_REQUEST): an iris
 * task that throws one ends `APP_ERROR` and is never retried (a gang fails at once).
 */
export class LevanterError extends Error {
  // A subclass (EngineBusyError, …) names itself; the code is what callers branch on.
  override readonly name: string = "LevanterError";
  readonly code: LevanterErrorCode;
  readonly retryable: boolean;

  constructor(code: LevanterErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.retryable = !DETERMINISTIC.has(code);
  }
}
