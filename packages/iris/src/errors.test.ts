// Tests of IrisError and the gRPC status-name table.
import { describe, expect, it } from "vitest";
import { IrisError, grpcStatusOf, irisCodeOf } from "./errors.ts";

describe("IrisError", () => {
  it("maps status names to gRPC codes and back", () => {
    expect(grpcStatusOf("NOT_FOUND")).toBe(5);
    expect(grpcStatusOf("UNAUTHENTICATED")).toBe(16);
    expect(irisCodeOf(6)).toBe("ALREADY_EXISTS");
    expect(irisCodeOf(99)).toBe("UNKNOWN");
  });

  it("keeps its code and cause, and prints CODE: message", () => {
    const cause = new Error("socket closed");
    const e = new IrisError("UNAVAILABLE", "controller unreachable", { cause });
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe("UNAVAILABLE");
    expect(e.cause).toBe(cause);
    expect(String(e)).toBe("UNAVAILABLE: controller unreachable");
    expect(e.retryable).toBe(true);
    expect("cause" in new IrisError("NOT_FOUND", "x")).toBe(false);
  });

  it("can be marked non-retryable", () => {
    const e = new IrisError("INVALID_ARGUMENT", "bad input", { retryable: false });
    expect(e.retryable).toBe(false);
    expect(e.code).toBe("INVALID_ARGUMENT");
  });
});
