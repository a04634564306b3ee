import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { integerArg, integerFlag, toInteger } from "./cliInteger.ts";

describe("integer flags", () => {
  it("integerArg reads whole numbers in range and names the range otherwise", () => {
    expect(integerArg({ min: 1 })("3")).toBe(3);
    expect(integerArg()(" -4 ")).toBe(-4);
    expect(() => integerArg({ min: 1 })("0")).toThrow(/≥ 1/);
    expect(() => integerArg({ min: 0, max: 10 })("11")).toThrow(/in 0\.\.10/);
    expect(() => integerArg({ min: 0 })("1.5")).toThrow(InvalidArgumentError);
    expect(() => integerArg({ min: 1, expected: "a positive integer" })("x")).toThrow("expected a positive integer, got x");
    expect(() => integerArg({ min: Number.MIN_SAFE_INTEGER })("y")).toThrow("expected an integer, got y");
  });

  it("toInteger refuses what Number() would misread", () => {
    for (const t of ["", " ", "1e3", "0x10", "1.0", "Infinity", "9007199254740993"]) expect(toInteger(t)).toBeUndefined();
    expect(toInteger("+7")).toBe(7);
  });

  it("integerFlag reads --name from argv, with a fallback and a message naming the flag", () => {
    const argv = ["node", "x.ts", "--runs", "5", "--bad", "five", "--last"];
    expect(integerFlag("runs", 1, {}, argv)).toBe(5);
    expect(integerFlag("--other", 9, {}, argv)).toBe(9);
    expect(() => integerFlag("bad", 1, { min: 1 }, argv)).toThrow("--bad: expected an integer ≥ 1, got five");
    expect(() => integerFlag("last", 1, {}, argv)).toThrow("--last: expected an integer, got nothing");
  });
});
