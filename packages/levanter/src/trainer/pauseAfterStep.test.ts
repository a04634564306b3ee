// The pause-after-step fault-injection hook: parsing and behaviour.
import { describe, expect, it } from "vitest";
import { pauseAfterStepHook } from "./pauseAfterStep.ts";

describe("pauseAfterStepHook", () => {
  it("is off unless LEVANTER_PAUSE_AFTER_STEP is set, and rejects a value that is not a positive integer", () => {
    expect(pauseAfterStepHook({})).toBeUndefined();
    expect(pauseAfterStepHook({ LEVANTER_PAUSE_AFTER_STEP: "" })).toBeUndefined();
    expect(pauseAfterStepHook({ LEVANTER_PAUSE_AFTER_STEP: "7" })).toMatchObject({ every: 7 });
    for (const bad of ["0", "-2", "1.5", "x"])
      expect(() => pauseAfterStepHook({ LEVANTER_PAUSE_AFTER_STEP: bad })).toThrow(/LEVANTER_PAUSE_AFTER_STEP: expected a positive integer/);
  });
});
