// shardFor: every shard has exactly one rank.
import { describe, expect, it } from "vitest";
import { LevanterError } from "../errors.ts";
import { shardFor } from "./shardFor.ts";

describe("shardFor", () => {
  it("gives every shard exactly one rank", () => {
    const world = 3;
    const seen = Array.from({ length: world }, (_, r) => shardFor(r, world, 10))
      .flat()
      .sort((a, b) => a - b);
    expect(seen).toEqual([...Array(10).keys()]);
    expect(shardFor(1, 3, 10)).toEqual([1, 4, 7]);
  });

  it("rejects a rank outside the world, naming the field", () => {
    expect(() => shardFor(3, 3, 10)).toThrow(LevanterError);
    expect(() => shardFor(3, 3, 10)).toThrow(/rank/);
  });
});
