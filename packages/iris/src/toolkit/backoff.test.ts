import { describe, expect, it } from "vitest";
import { Backoff, backoffDelay } from "./backoff.ts";

describe("backoff", () => {
  it("doubles from initialMs up to maxMs and starts again after reset", () => {
    const b = new Backoff({ initialMs: 100, maxMs: 2000 });
    expect(Array.from({ length: 7 }, () => b.next())).toEqual([100, 200, 400, 800, 1600, 2000, 2000]);
    expect(b.delayMs).toBe(2000);
    b.reset();
    expect(b.next()).toBe(100);
  });

  it("backoffDelay is the same sequence by retry number, finite for huge counts, with any factor", () => {
    expect([0, 1, 2, 4, 5, 1e9].map((n) => backoffDelay(n, { initialMs: 60_000, maxMs: 1_800_000 }))).toEqual([60_000, 120_000, 240_000, 960_000, 1_800_000, 1_800_000]);
    expect([0, 1, 2].map((n) => backoffDelay(n, { initialMs: 10, maxMs: 1000, factor: 3 }))).toEqual([10, 30, 90]);
  });

  it("refuses a range that cannot grow", () => {
    expect(() => new Backoff({ initialMs: 0, maxMs: 10 })).toThrow(RangeError);
    expect(() => new Backoff({ initialMs: 10, maxMs: 5 })).toThrow(/initialMs ≤ maxMs/);
  });
});
