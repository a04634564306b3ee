/** The closed set of codes a {@link ZephyrError} carries. */
export const ZEPHYR_ERROR_CODES = ["INVALID_ARGUMENT", "BAD_RECORD", "USER_FUNCTION", "FINGERPRINT_MISMATCH", "MISSING_DEPENDENCY", "IO", "SHARD_FAILED", "INTERNAL"] as const;

/** What kind of failure a {@link ZephyrError} is. */
export type ZephyrErrorCode = (typeof ZEPHYR_ERROR_CODES)[number];

/**
 * The error every @marin/zephyr API throws for an expected failure: a typed `code`, a message for
 * people that names what was wrong, and the underlying error as `cause`.
 */
export class ZephyrError extends Error {
  override readonly name = "ZephyrError";
  readonly code: ZephyrErrorCode;

  constructor(code: ZephyrErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}
