// Tests of the CLI's value parsing: sizes, cpu, integers, seconds, key=value pairs.
import { InvalidArgumentError } from "commander";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { constraintMatches, formatBytes } from "../controller/scheduler.ts";
import { integerArg } from "../toolkit/cliInteger.ts";
import { parseConstraint, parseCpu, parseKeyValue, parseSeconds, parseSize } from "./units.ts";

describe("parseSize", () => {
  it("reads bytes and binary suffixes, with or without i and B", () => {
    expect(parseSize("1073741824")).toBe(1024 ** 3);
    expect(parseSize("2G")).toBe(2 * 1024 ** 3);
    expect(parseSize("2g")).toBe(2 * 1024 ** 3);
    expect(parseSize("2GB")).toBe(2 * 1024 ** 3);
    expect(parseSize("1.5Gi")).toBe(1.5 * 1024 ** 3);
    expect(parseSize("512MiB")).toBe(512 * 1024 ** 2);
    expect(parseSize("64k")).toBe(64 * 1024);
    expect(parseSize("1T")).toBe(1024 ** 4);
    expect(parseSize("0")).toBe(0);
  });

  it("rejects what is not a size", () => {
    for (const bad of ["", "G", "-1G", "2X", "two", "1e9", "2 G B"]) {
      expect(() => parseSize(bad), bad).toThrow(InvalidArgumentError);
    }
  });

  it("round-trips with the scheduler's formatter to within its rounding", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1024, max: 2 ** 50 }), (bytes) => {
        const back = parseSize(formatBytes(bytes).replace(" ", ""));
        expect(Math.abs(back - bytes) / bytes).toBeLessThan(0.05);
      }),
    );
  });
});

describe("parseCpu", () => {
  it("reads cores and millicores", () => {
    expect(parseCpu("0.5")).toBe(500);
    expect(parseCpu("2")).toBe(2000);
    expect(parseCpu(".25")).toBe(250);
    expect(parseCpu("250m")).toBe(250);
    expect(parseCpu("0.0015")).toBe(2);
  });
  it("rejects negatives and words", () => {
    for (const bad of ["-1", "one", "", "1.5.2", "5mc"]) expect(() => parseCpu(bad), bad).toThrow(InvalidArgumentError);
  });
});

describe("parseInteger, parseSeconds, parseKeyValue", () => {
  it("bounds integers", () => {
    expect(integerArg({ min: 1 })("3")).toBe(3);
    expect(() => integerArg({ min: 1 })("0")).toThrow(/≥ 1/);
    expect(() => integerArg({ min: 0, max: 10 })("11")).toThrow(/in 0\.\.10/);
    expect(() => integerArg({ min: 0 })("1.5")).toThrow(InvalidArgumentError);
  });
  it("reads seconds as milliseconds", () => {
    expect(parseSeconds("30")).toBe(30_000);
    expect(parseSeconds("0.25")).toBe(250);
    expect(() => parseSeconds("0")).toThrow(InvalidArgumentError);
    expect(() => parseSeconds("soon")).toThrow(InvalidArgumentError);
  });
  it("splits key=value at the first =", () => {
    expect(parseKeyValue("a=b=c")).toEqual(["a", "b=c"]);
    expect(parseKeyValue("a=")).toEqual(["a", ""]);
    expect(() => parseKeyValue("=b")).toThrow(InvalidArgumentError);
  });
});

describe("parseConstraint", () => {
  it("reads each operator", () => {
    expect(parseConstraint("zone=us-east")).toEqual({ key: "zone", op: "EQ", value: "us-east" });
    expect(parseConstraint("zone==us-east")).toEqual({ key: "zone", op: "EQ", value: "us-east" });
    expect(parseConstraint("zone!=eu")).toEqual({ key: "zone", op: "NE", value: "eu" });
    expect(parseConstraint("gpu")).toEqual({ key: "gpu", op: "EXISTS" });
    expect(parseConstraint("zone in us-east, us-west")).toEqual({ key: "zone", op: "IN", values: ["us-east", "us-west"] });
    expect(parseConstraint("rank>3")).toEqual({ key: "rank", op: "GT", value: "3" });
    expect(parseConstraint("rank < 2.5")).toEqual({ key: "rank", op: "LT", value: "2.5" });
  });
  it("gives constraints the scheduler evaluates as written", () => {
    const attrs = { zone: "us-east", rank: "4" };
    expect(constraintMatches(parseConstraint("zone in eu,us-east"), attrs)).toBe(true);
    expect(constraintMatches(parseConstraint("rank>3"), attrs)).toBe(true);
    expect(constraintMatches(parseConstraint("rank<3"), attrs)).toBe(false);
  });
  it("rejects malformed expressions", () => {
    for (const bad of ["", "rank>x", "=a", "a b"]) expect(() => parseConstraint(bad), bad).toThrow(InvalidArgumentError);
  });
});
