// Learning-rate schedules row by row against upstream Levanter's table.
import { describe, expect, it } from "vitest";
import { OptimizerConfigSchema, type OptimizerConfigInput } from "./optimizerConfig.ts";
import { lrSchedule } from "./schedule.ts";

// Every row of upstream Levanter's learning-rate table (shared/reference/levanter-upstream.md §5),
// all with weight decay 0.
function sched(cfg: OptimizerConfigInput, total: number) {
  return lrSchedule(OptimizerConfigSchema.parse({ weightDecay: 0, ...cfg }), total);
}
const close = (actual: number, expected: number, atol = 1e-8, rtol = 1e-5) => expect(Math.abs(actual - expected)).toBeLessThanOrEqual(atol + rtol * Math.abs(expected));

describe("lrSchedule: upstream table", () => {
  it("constant, no warmup, min ratio 1: exactly the rate everywhere", () => {
    const lr = sched({ learningRate: 1e-3, warmup: 0, minLrRatio: 1, lrSchedule: "constant" }, 1000);
    expect([lr(0), lr(500), lr(999)]).toEqual([1e-3, 1e-3, 1e-3]);
  });

  it("cosine with 10% warmup", () => {
    const lr = sched({ learningRate: 1e-2, warmup: 0.1, minLrRatio: 0.1, lrSchedule: "cosine" }, 1000);
    close(lr(0), 0);
    close(lr(50), 5e-3);
    close(lr(100), 1e-2);
    close(lr(999), 1e-3, 1e-5);
  });

  it("linear with 3% warmup over 861 steps", () => {
    const lr = sched({ learningRate: 2e-6, warmup: 0.03, minLrRatio: 0, lrSchedule: "linear" }, 861);
    expect(lr(0)).toBe(0);
    close(lr(25), 2e-6);
    close(lr(443), 1e-6);
    close(lr(860), 0);
  });

  for (const cycles of [{ cycles: 2 }, { cycleLength: 500 }] as OptimizerConfigInput[]) {
    it(`linear, 50 warmup steps, two cycles (${JSON.stringify(cycles)})`, () => {
      const lr = sched({ learningRate: 5e-4, warmup: 50, minLrRatio: 0.2, lrSchedule: "linear", ...cycles }, 1000);
      close(lr(0), 0, 1e-5);
      close(lr(50), 5e-4, 1e-5);
      close(lr(499), 1e-4, 1e-5);
      close(lr(500), 5e-4, 1e-5);
      close(lr(749), 3e-4, 1e-5);
      close(lr(999), 1e-4, 1e-5);
    });
  }

  for (const cycles of [{ cycles: [300, 700] }, { cycleLength: [300, 400] }] as OptimizerConfigInput[]) {
    it(`WSD-S: cosine, decay 10% of each cycle (${JSON.stringify(cycles)})`, () => {
      const lr = sched({ learningRate: 1e-3, warmup: 0, decay: 0.1, minLrRatio: 0.1, lrSchedule: "cosine", ...cycles }, 1000);
      for (const s of [0, 269, 300, 659, 701, 969]) close(lr(s), 1e-3);
      for (const s of [271, 661, 971]) expect(lr(s)).toBeLessThan(1e-3);
    });
  }

  it("inv_sqrt with 10% warmup", () => {
    const lr = sched({ learningRate: 1e-3, warmup: 0.1, minLrRatio: 0.1, lrSchedule: "inv_sqrt" }, 100_000);
    close(lr(0), 0);
    close(lr(5000), 5e-4);
    expect(lr(50_000)).toBeLessThan(lr(30_000));
  });

  it("linear, two cycles with a 5% rewarmup", () => {
    const lr = sched({ learningRate: 1e-2, warmup: 0.2, minLrRatio: 0.2, lrSchedule: "linear", cycles: 2, rewarmup: 0.05 }, 1000);
    close(lr(0), 0, 1e-4);
    close(lr(100), 1e-2, 1e-4);
    close(lr(300), 6e-3, 1e-4);
    close(lr(500), 2e-3, 1e-4);
    close(lr(525), 1e-2, 1e-4);
    expect(lr(525)).toBeGreaterThan(lr(524));
    expect(lr(525)).toBeGreaterThan(lr(526));
    expect(lr(998)).toBeGreaterThan(lr(999));
    close(lr(999), 2e-3, 1e-4);
  });

  it("a warmup longer than the run never jumps", () => {
    const lr = sched({ learningRate: 3e-3, warmup: 1000, decay: 0.2, minLrRatio: 0.1, lrSchedule: "cosine" }, 200);
    close(lr(160), 2.4e-3, 1e-6);
    expect(lr(161)).toBeGreaterThan(lr(160));
    close(lr(200), 3e-3);
  });
});

describe("lrSchedule: WSD", () => {
  it("warms up, holds the peak, then decays linearly over the last 20% by default", () => {
    const lr = sched({ learningRate: 1e-3, warmup: 0.1, minLrRatio: 0.1, lrSchedule: "wsd" }, 1000);
    close(lr(50), 5e-4);
    for (const s of [100, 500, 799, 800]) close(lr(s), 1e-3);
    close(lr(900), 5.5e-4);
    expect(lr(801)).toBeLessThan(1e-3);
    close(lr(1000), 1e-4);
  });
});

describe("OptimizerConfigSchema", () => {
  it("names the bad field", () => {
    const r = OptimizerConfigSchema.safeParse({ warmup: 2.5 });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(["warmup"]);
    expect(OptimizerConfigSchema.safeParse({ cycles: 2, cycleLength: 5 }).success).toBe(false);
  });
});
