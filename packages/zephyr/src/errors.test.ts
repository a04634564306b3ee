import { describe, expect, it } from "vitest";
import { ZephyrError } from "./errors.ts";

describe("ZephyrError", () => {
  it("carries a typed code and its cause", () => {
    const cause = new Error("disk full");
    const e = new ZephyrError("INTERNAL", "could not write", { cause });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe("ZephyrError");
    expect(e.code).toBe("INTERNAL");
    expect(e.cause).toBe(cause);
  });
});
