// ZephyrError's code, cause and retryable flag.
import { describe, expect, it } from "vitest";
import { ZEPHYR_ERROR_CODES, ZephyrError } from "./errors.ts";

describe("ZephyrError", () => {
  it("carries a typed code and its cause", () => {
    const cause = new Error("disk full");
    const e = new ZephyrError("INTERNAL", "could not write", { cause });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe("ZephyrError");
    expect(e.code).toBe("INTERNAL");
    expect(e.cause).toBe(cause);
  });

  it("is retryable unless its code names a failure a retry cannot fix", () => {
    const notRetryable = ZEPHYR_ERROR_CODES.filter((c) => !new ZephyrError(c, "x").retryable);
    expect(notRetryable.sort()).toEqual(["BAD_RECORD", "FINGERPRINT_MISMATCH", "INVALID_ARGUMENT", "MISSING_DEPENDENCY", "USER_FUNCTION"]);
  });
});
