/**
 * The gRPC status names: the closed set of codes an {@link IrisError} carries. The numeric value
 * of each name is its gRPC status code.
 */
export const IRIS_ERROR_CODES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

/** A gRPC status name, e.g. `"NOT_FOUND"`. */
export type IrisErrorCode = (typeof IRIS_ERROR_CODES)[number];

/** The numeric gRPC status code of a status name. */
export function grpcStatusOf(code: IrisErrorCode): number {
  return IRIS_ERROR_CODES.indexOf(code);
}

/** The status name of a numeric gRPC status code (`UNKNOWN` for codes outside the table). */
export function irisCodeOf(status: number): IrisErrorCode {
  return IRIS_ERROR_CODES[status] ?? "UNKNOWN";
}

/**
 * The error every iris API throws: a gRPC status name as `code`, a message for people, and the
 * underlying error (a remote status, a system error) as `cause`.
 *
 * When a remote call fails, the message is the remote one and the stack is the local call site.
 *
 * @example
 * // Inside a task: fail for good, without retries.
 * throw new IrisError("INVALID_ARGUMENT", "no such dataset", { retryable: false });
 *
 * @example
 * try { await client.job("missing").status(); }
 * catch (e) { if (e instanceof IrisError && e.code === "NOT_FOUND") { … } }
 */
export class IrisError extends Error {
  override readonly name = "IrisError";
  readonly code: IrisErrorCode;
  /**
   * Whether retrying can help (default true). Thrown from a task's module entrypoint with
   * `retryable: false`, it ends the attempt as `APP_ERROR` with this code and message, and no
   * retry budget retries it.
   */
  readonly retryable: boolean;

  constructor(code: IrisErrorCode, message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options?.retryable ?? true;
  }

  /** `CODE: message`, the form the CLI prints. */
  override toString(): string {
    return `${this.code}: ${this.message}`;
  }
}
