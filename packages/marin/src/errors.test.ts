// MarinError's code, name, cause, and whether its code makes it retryable.
import { describe, expect, it } from "vitest";
import { MARIN_ERROR_CODES, MarinError } from "./errors.ts";

describe("MarinError", () => {
  it("carries a typed code and its cause", () => {
    const cause = new Error("disk full");
    const e = new MarinError("INTERNAL", "could not write", { cause });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe("MarinError");
    expect(e.code).toBe("INTERNAL");
    expect(e.cause).toBe(cause);
  });

  it("is not retryable for deterministic failures, and retryable for the rest", () => {
    const retryable = Object.fromEntries(MARIN_ERROR_CODES.map((c) => [c, new MarinError(c, "x").retryable]));
    expect(retryable).toEqual({
      INVALID_CONFIG: false,
      INVALID_GRAPH: false,
      FINGERPRINT_MISMATCH: false,
      NOT_FOUND: false,
      STEP_FAILED: true,
      DEP_FAILED: true,
      LEASE_LOST: true,
      INTERNAL: true,
    });
  });
});
