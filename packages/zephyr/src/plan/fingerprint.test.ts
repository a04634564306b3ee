// A run's identity: computed once by the coordinator, reproduced and checked by every worker.
import { describe, expect, it } from "vitest";
import { ZephyrError } from "../errors.ts";
import { numbers } from "../fixtures/numbersPipeline.ts";
import { checkRunIdentity, runIdentity } from "./fingerprint.ts";
import { planStages } from "./planner.ts";

describe("run identity", () => {
  it("is reproduced by a plan rebuilt from the same pipeline and arguments, and checked", () => {
    const a = numbers({ n: 10, shards: 2 });
    const b = numbers({ n: 10, shards: 2 });
    const id = runIdentity(planStages(a.logical), a.origin);
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(runIdentity(planStages(b.logical), b.origin)).toBe(id);
    expect(() => checkRunIdentity(planStages(b.logical), b.origin!, id)).not.toThrow();
  });

  it("differs with the pipeline's arguments, and a worker refuses a plan that does not match", () => {
    const a = numbers({ n: 10, shards: 2 });
    const other = numbers({ n: 11, shards: 2 });
    const id = runIdentity(planStages(a.logical), a.origin);
    expect(runIdentity(planStages(other.logical), other.origin)).not.toBe(id);
    let err: unknown;
    try {
      checkRunIdentity(planStages(other.logical), other.origin!, id);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("FINGERPRINT_MISMATCH");
    expect((err as ZephyrError).message).toContain(`the coordinator's is ${id.slice(0, 12)}`);
  });

  it("of a plain plan covers its functions' text, which the structural fingerprint does not", () => {
    const lp = (fn: (x: number) => number) => ({ source: { kind: "list" as const, items: [1, 2], shards: 1 }, ops: [{ kind: "map" as const, fn }] });
    const p1 = planStages(lp((x) => x + 1));
    const p2 = planStages(lp((x) => x + 2));
    expect(p1.fingerprint).toBe(p2.fingerprint);
    expect(runIdentity(p1, undefined)).not.toBe(runIdentity(p2, undefined));
  });
});
