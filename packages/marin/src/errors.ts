// MarinError and its closed set of codes: the one error type @marin/marin throws for expected failures.

/** The closed set of codes a {@link MarinError} carries. */
export const MARIN_ERROR_CODES = ["INVALID_CONFIG", "INVALID_GRAPH", "STEP_FAILED", "DEP_FAILED", "LEASE_LOST", "FINGERPRINT_MISMATCH", "NOT_FOUND", "INTERNAL"] as const;

/** What kind of failure a {@link MarinError} is. */
export type MarinErrorCode = (typeof MARIN_ERROR_CODES)[number];

/**
 * The codes of deterministic failures: trying again with the same script, config and files gives
 * the same error. An iris task that throws one ends without a retry (iris reads `retryable`).
 */
const DETERMINISTIC: ReadonlySet<MarinErrorCode> = new Set<MarinErrorCode>(["INVALID_CONFIG", "INVALID_GRAPH", "FINGERPRINT_MISMATCH", "NOT_FOUND"]);

/**
 * The error every @marin/marin API throws for an expected failure: a typed `code`, a message for
 * people that names what was wrong, and the underlying error as `cause`.
 */
export class MarinError extends Error {
  override readonly name = "MarinError";
  readonly code: MarinErrorCode;
  /** Whether trying again could succeed; decided by the code (false for bad config, a bad graph, an identity mismatch, a missing script or step). */
  readonly retryable: boolean;

  constructor(code: MarinErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.retryable = !DETERMINISTIC.has(code);
  }
}
