// The task's identity check against the runner's planned identity: match, edited config, vanished step.
import { describe, expect, it } from "vitest";
import { MarinError } from "../errors.ts";
import { resolveGraph } from "../step/graph.ts";
import { defineStep, outputOf } from "../step/step.ts";
import { checkPlannedIdentity, plannedIdentity } from "./stepIdentity.ts";

const prefix = "/tmp/marin-identity-never-written";

function graphWith(n: number, withB = true) {
  const a = defineStep({ name: "a", config: { n, lr: 0.1 }, fn: () => undefined });
  const b = defineStep({ name: "b", config: { input: outputOf(a), k: 3 }, fn: () => undefined });
  return resolveGraph(withB ? [b] : [a], prefix);
}

function thrown(fn: () => unknown): MarinError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(MarinError);
    return e as MarinError;
  }
  throw new Error("expected a throw");
}

describe("planned identity", () => {
  it("gives back the rebuilt step when its identity is the planned one", () => {
    const planned = plannedIdentity(graphWith(1).byName.get("b")!);
    // Through JSON, as iris hands the task its args.
    const rs = checkPlannedIdentity(graphWith(1), "b", JSON.parse(JSON.stringify(planned)), "exp.ts");
    expect(rs.id).toBe(planned.id);
  });

  it("refuses an edited step without retry, naming both ids and the changed fields", () => {
    const planned = plannedIdentity(graphWith(1).byName.get("a")!);
    const e = thrown(() => checkPlannedIdentity(graphWith(7), "a", planned, "exp.ts"));
    expect(e.code).toBe("FINGERPRINT_MISMATCH");
    expect(e.retryable).toBe(false);
    expect(e.message).toMatch(/step a: the script now gives a-\w{8}, the runner planned a-\w{8}/);
    expect(e.message).toContain("n: 1 → 7");
    expect(e.message).not.toContain("lr");
    // A dependant moves through its reference.
    const b = thrown(() => checkPlannedIdentity(graphWith(7), "b", plannedIdentity(graphWith(1).byName.get("b")!), "exp.ts"));
    expect(b.message).toMatch(/input: outputOf\(a-\w{8}\) → outputOf\(a-\w{8}\)/);
  });

  it("refuses a step the script no longer defines", () => {
    const planned = plannedIdentity(graphWith(1).byName.get("b")!);
    const e = thrown(() => checkPlannedIdentity(graphWith(1, false), "b", planned, "exp.ts"));
    expect(e.code).toBe("FINGERPRINT_MISMATCH");
    expect(e.message).toBe("exp.ts no longer defines step b");
  });
});
