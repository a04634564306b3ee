// MarinError's code, name and cause.
import { describe, expect, it } from "vitest";
import { MarinError } from "./errors.ts";

describe("MarinError", () => {
  it("carries a typed code and its cause", () => {
    const cause = new Error("disk full");
    const e = new MarinError("INTERNAL", "could not write", { cause });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe("MarinError");
    expect(e.code).toBe("INTERNAL");
    expect(e.cause).toBe(cause);
  });
});
