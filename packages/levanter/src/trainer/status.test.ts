// Status lines: step/total, loss, tok/s, MFU and ETA formatting.
import { describe, expect, it } from "vitest";
import { formatStatus, StatusReporter } from "./status.ts";

describe("formatStatus", () => {
  it("shows step/total, loss, tok/s, MFU and ETA", () => {
    const s = formatStatus({ step: 100, totalSteps: 1000, loss: 2.5, tokensPerSecond: 2_097_152, mfu: 42, secondsPerStep: 0.5 });
    expect(s).toBe("step 100/1,000 (10.0%) · loss 2.5000 · 2,097,152 tok/s · MFU 42.00% · ETA 7m30s");
  });

  it("leaves out what it does not know", () => {
    expect(formatStatus({ step: 3, totalSteps: 10 })).toBe("step 3/10 (30.0%)");
    expect(formatStatus({ step: 3, totalSteps: 10, loss: 1, tokensPerSecond: 0, mfu: 1 })).toBe("step 3/10 (30.0%) · loss 1.0000");
  });
});

describe("StatusReporter", () => {
  it("reports the first time, then at most once per interval, and always when forced; survives sink errors", async () => {
    let now = 0;
    const sent: [string, Record<string, number>][] = [];
    let fail = false;
    const r = new StatusReporter(
      async (text, metrics) => {
        if (fail) throw new Error("controller down");
        sent.push([text, metrics]);
      },
      30_000,
      () => now,
    );
    expect(r.maybeReport("a", { step: 1 })).toBe(true);
    now = 29_999;
    expect(r.maybeReport("b", { step: 2 })).toBe(false);
    now = 30_000;
    expect(r.maybeReport("c", { step: 3 })).toBe(true);
    await r.flush();
    fail = true;
    expect(r.maybeReport("d", { step: 4 }, true)).toBe(true);
    await r.flush(); // the failure is logged, not thrown
    fail = false;
    expect(r.maybeReport("e", { step: 5 }, true)).toBe(true);
    await r.flush();
    expect(sent.map(([t]) => t)).toEqual(["a", "c", "e"]);
    expect(sent[2]![1]).toEqual({ step: 5 });
  });
});
