// The real and fake clocks: sleeps, aborts, and no leaked abort listeners.
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { FakeClock, systemClock } from "./clock.ts";

describe("clocks", () => {
  it("FakeClock: a finished sleep leaves no abort listener on the signal", async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    for (let i = 0; i < 5; i++) {
      const s = clock.sleep(10, ac.signal);
      await clock.advance(10);
      await s;
    }
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(0);
    expect(clock.pending).toBe(0);
  });

  it("FakeClock: an aborted sleep rejects with the reason and is no longer pending", async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    const s = clock.sleep(1000, ac.signal);
    expect(clock.pending).toBe(1);
    ac.abort(new Error("stop"));
    await expect(s).rejects.toThrow("stop");
    expect(clock.pending).toBe(0);
  });

  it("systemClock: a finished sleep leaves no abort listener on the signal", async () => {
    const ac = new AbortController();
    await systemClock.sleep(1, ac.signal);
    await systemClock.sleep(1, ac.signal);
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(0);
  });
});
