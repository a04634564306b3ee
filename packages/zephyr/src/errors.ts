// ZephyrError: the typed error of every zephyr API, its closed set of codes, and which codes a retry cannot fix.
/** The closed set of codes a {@link ZephyrError} carries. */
export const ZEPHYR_ERROR_CODES = ["INVALID_ARGUMENT", "BAD_RECORD", "USER_FUNCTION", "FINGERPRINT_MISMATCH", "MISSING_DEPENDENCY", "IO", "SHARD_FAILED", "INTERNAL"] as const;

/** What kind of failure a {@link ZephyrError} is. */
export type ZephyrErrorCode = (typeof ZEPHYR_ERROR_CODES)[number];

// Failures that would fail the same way on a retry: bad code, bad data, bad arguments, a worker
// that rebuilt another plan, a package that is not installed.
const DETERMINISTIC: ReadonlySet<ZephyrErrorCode> = new Set(["USER_FUNCTION", "BAD_RECORD", "INVALID_ARGUMENT", "FINGERPRINT_MISMATCH", "MISSING_DEPENDENCY"]);

/**
 * The error every @marin/zephyr API throws for an expected failure: a typed `code`, a message for
 * people that names what was wrong, and the underlying error as `cause`.
 */
export class ZephyrError extends Error {
  /** Always `"ZephyrError"`. */
  override readonly name = "ZephyrError";
  /** What kind of failure this is (one of {@link ZEPHYR_ERROR_CODES}). */
  readonly code: ZephyrErrorCode;
  /**
   * Whether running the shard again could succeed, decided by `code`: false for `USER_FUNCTION`,
   * `BAD_RECORD`, `INVALID_ARGUMENT`, `FINGERPRINT_MISMATCH` and `MISSING_DEPENDENCY` (zephyr never
   * retries those, and an iris task that throws one ends without retry), true for the others.
   */
  readonly retryable: boolean;

  constructor(code: ZephyrErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.retryable = !DETERMINISTIC.has(code);
  }
}
