// The checkpoint policy table, row by row, with an injected clock.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LevanterError } from "../errors.ts";
import { Checkpointer } from "./checkpointer.ts";
import type { CheckpointerConfigInput } from "./checkpointer.ts";
import { findLatestCheckpoint, listCheckpoints, saveCheckpoint } from "./checkpointStore.ts";

// The upstream checkpoint table (levanter-upstream.md §4), row by row, on real directories with an
// injected clock. A tick is 10 s.
const TICK = 10_000;
let tmp: string;
let perm: string;
let temp: string;
let clock: number;

beforeEach(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "levanter-ckpt-"));
  perm = path.join(tmp, "perm");
  temp = path.join(tmp, "temp");
  clock = 1_700_000_000_000;
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const advance = (ms: number) => {
  clock += ms;
};

function checkpointer(cfg: Partial<CheckpointerConfigInput> = {}): Checkpointer {
  return new Checkpointer({ basePath: perm, saveIntervalSeconds: null, keep: [], ...cfg, now: () => clock });
}

/** A real save: a tiny array and some state, timestamped by the fake clock. */
function saver(step: number) {
  return async (dir: string, isTemporary: boolean) => {
    await saveCheckpoint(dir, { step, isTemporary, arrays: { w: { shape: [2], data: Float32Array.of(step, -step) } }, state: { step }, timestamp: new Date(clock) });
  };
}

const step = (c: Checkpointer, s: number, opts?: { force?: boolean }) => c.onStep(s, saver(s), opts);
const steps = async (root: string) => (await listCheckpoints(root)).map((c) => c.metadata.step);

const POLICIES = [{ every: 2, until: 10 }, { every: 5, until: 20 }, { every: 10 }];

describe("Checkpointer (upstream table)", () => {
  it("step policies only: steps 1–49 keep [2,4,6,8,10,15,20,30,40]", async () => {
    const c = checkpointer({ keep: POLICIES });
    for (let s = 1; s < 50; s++) await step(c, s);
    expect(await steps(perm)).toEqual([2, 4, 6, 8, 10, 15, 20, 30, 40]);
  });

  it("time only: a temporary every 10 s, the previous one deleted", async () => {
    const c = checkpointer({ saveIntervalSeconds: 10 });
    await step(c, 0);
    advance(TICK);
    await step(c, 1);
    expect(await steps(perm)).toEqual([1]);
    advance(9_000);
    await step(c, 2);
    expect(await steps(perm)).toEqual([1]);
    advance(1_000);
    await step(c, 3);
    expect(await steps(perm)).toEqual([3]);
  });

  it("mixed policies and time: ends with [2,4,6,8,10,15,20,30,40,49]", async () => {
    const c = checkpointer({ keep: POLICIES, saveIntervalSeconds: 10 });
    await step(c, 0);
    advance(TICK);
    await step(c, 1);
    expect(await steps(perm)).toEqual([1]);
    advance(9_000);
    await step(c, 2);
    expect(await steps(perm)).toEqual([2]);
    advance(1_000);
    await step(c, 3);
    expect(await steps(perm)).toEqual([2]);
    for (let s = 4; s <= 10; s++) {
      advance(TICK);
      await step(c, s);
    }
    expect(await steps(perm)).toEqual([2, 4, 6, 8, 10]);
    advance(9_000);
    await step(c, 11);
    expect(await steps(perm)).toEqual([2, 4, 6, 8, 10]);
    for (let s = 12; s < 50; s++) {
      await step(c, s);
      advance(TICK);
    }
    expect(await steps(perm)).toEqual([2, 4, 6, 8, 10, 15, 20, 30, 40, 49]);
    const last = (await listCheckpoints(perm)).at(-1);
    expect(last?.metadata.isTemporary).toBe(true);
  });

  it("separate temporary base path", async () => {
    const c = checkpointer({ keep: [{ every: 5 }], saveIntervalSeconds: 10, temporaryBasePath: temp });
    advance(TICK);
    await step(c, 1);
    expect(await steps(temp)).toEqual([1]);
    expect(await steps(perm)).toEqual([]);
    advance(TICK);
    await step(c, 5);
    expect(await steps(perm)).toEqual([5]);
    expect(await steps(temp)).toEqual([]);
    advance(TICK);
    await step(c, 6);
    expect(await steps(temp)).toEqual([6]);
    expect(await steps(perm)).toEqual([5]);
  });

  it("a new checkpointer deletes an earlier process's temporaries, unless told not to", async () => {
    const keep = [{ every: 5, until: 20 }, { every: 10 }];
    const first = checkpointer({ keep, saveIntervalSeconds: 10 });
    for (let s = 1; s <= 5; s++) await step(first, s);
    expect(await steps(perm)).toEqual([5]);
    advance(TICK);
    await step(first, 6);
    expect(await steps(perm)).toEqual([5, 6]);

    const second = checkpointer({ keep, saveIntervalSeconds: 10 });
    await step(second, 7);
    advance(TICK);
    await step(second, 8);
    expect(await steps(perm)).toEqual([5, 8]);

    const third = checkpointer({ keep: [{ every: 20 }], saveIntervalSeconds: 10, deleteOldTempCheckpoints: false });
    await step(third, 9);
    advance(TICK);
    await step(third, 10);
    expect(await steps(perm)).toEqual([5, 8, 10]);
  });

  it("keepLastTemporary = 2 keeps two temporaries; = 0 keeps none", async () => {
    const two = checkpointer({ saveIntervalSeconds: 10, keepLastTemporary: 2 });
    const seen: number[][] = [];
    for (const s of [1, 2, 3]) {
      advance(TICK);
      await step(two, s);
      seen.push(await steps(perm));
    }
    expect(seen).toEqual([[1], [1, 2], [2, 3]]);

    await rm(perm, { recursive: true });
    const zero = checkpointer({ saveIntervalSeconds: 10, keepLastTemporary: 0 });
    advance(TICK);
    const saved = await step(zero, 1);
    expect(saved).toMatchObject({ step: 1, isTemporary: true });
    expect(await steps(perm)).toEqual([]);
  });

  it("temporaries in both roots: keep 2, save 10 → perm root [8,9], temp root [10]", async () => {
    const pre = async (root: string, s: number, isTemporary: boolean) => saver(s)(path.join(root, `step-${s}`), isTemporary);
    await pre(perm, 2, true);
    await pre(perm, 8, true);
    await pre(perm, 9, false);
    await pre(temp, 7, true);
    const c = checkpointer({ saveIntervalSeconds: 10, keepLastTemporary: 2, temporaryBasePath: temp });
    advance(TICK);
    expect(await step(c, 10)).toMatchObject({ isTemporary: true });
    expect(await steps(perm)).toEqual([8, 9]);
    expect(await steps(temp)).toEqual([10]);
  });

  it("force at step 1 with the interval elapsed saves a permanent checkpoint", async () => {
    const c = checkpointer({ saveIntervalSeconds: 10, temporaryBasePath: temp });
    advance(TICK);
    expect(await step(c, 1, { force: true })).toMatchObject({ isTemporary: false });
    expect(await steps(perm)).toEqual([1]);
    expect(await steps(temp)).toEqual([]);
    expect((await listCheckpoints(perm))[0].metadata.isTemporary).toBe(false);
  });

  it("discovery: the highest numeric step wins over a newer timestamp; no metadata.json is skipped", async () => {
    await saveCheckpoint(path.join(perm, "step-9"), { step: 9, arrays: {}, timestamp: new Date(clock + 1e6) });
    await saveCheckpoint(path.join(perm, "step-10"), { step: 10, arrays: {}, timestamp: new Date(clock) });
    await mkdir(path.join(perm, "step-11"), { recursive: true });
    await writeFile(path.join(perm, "step-11", "arrays.bin"), "partial");
    const found = await findLatestCheckpoint(perm);
    expect(found?.path).toBe(path.join(perm, "step-10"));
    expect(found?.metadata.step).toBe(10);
    expect((await findLatestCheckpoint(perm, { maxStep: 9 }))?.metadata.step).toBe(9);
    expect((await findLatestCheckpoint(perm, { exclude: [path.join(perm, "step-10")] }))?.metadata.step).toBe(9);
  });

  it("discovery over the permanent and the temporary root", async () => {
    await saveCheckpoint(path.join(perm, "step-10"), { step: 10, arrays: {} });
    await saveCheckpoint(path.join(temp, "step-15"), { step: 15, arrays: {}, isTemporary: true });
    expect((await findLatestCheckpoint(perm))?.metadata.step).toBe(10);
    expect((await findLatestCheckpoint([perm, temp]))?.metadata.step).toBe(15);
    expect((await checkpointer({ temporaryBasePath: temp }).latest())?.metadata.step).toBe(15);
    expect(await findLatestCheckpoint(path.join(tmp, "nowhere"))).toBeUndefined();
  });
});

describe("Checkpointer (other rules)", () => {
  it("never saves step 0 unless forced, and step 0 restarts the interval clock", async () => {
    const c = checkpointer({ keep: [{ every: 1 }], saveIntervalSeconds: 10 });
    advance(5 * TICK);
    expect(await step(c, 0)).toBeUndefined();
    expect(await steps(perm)).toEqual([]);
    expect(await step(c, 0, { force: true })).toMatchObject({ step: 0, isTemporary: false });
    expect(await steps(perm)).toEqual([0]);
  });

  it("requestSave coalesces into one temporary and never downgrades a permanent save", async () => {
    const c = checkpointer({ keep: [{ every: 4 }], saveIntervalSeconds: 1000 });
    c.requestSave();
    c.requestSave();
    expect(await step(c, 1)).toMatchObject({ isTemporary: true });
    expect(await step(c, 2)).toBeUndefined();
    c.requestSave();
    expect(await step(c, 4)).toMatchObject({ isTemporary: false });
    expect(await step(c, 5)).toBeUndefined();
  });

  it("fails loudly when save returns without writing metadata.json", async () => {
    const c = checkpointer({ keep: [{ every: 1 }] });
    await expect(c.onStep(1, async () => undefined)).rejects.toThrow(/metadata\.json/);
  });

  it("validates its config, naming the field", () => {
    expect(() => checkpointer({ keep: [{ every: 2 }, { every: 5, until: 20 }] })).toThrow(/keep\.0\.until: only the last/);
    expect(() =>
      checkpointer({
        keep: [
          { every: 2, until: 20 },
          { every: 5, until: 10 },
        ],
      }),
    ).toThrow(/keep\.1\.until/);
    expect(() => checkpointer({ keepLastTemporary: -1 })).toThrow(LevanterError);
    expect(() => checkpointer({ saveIntervalSeconds: 0 })).toThrow(/saveIntervalSeconds/);
    expect(checkpointer({ keep: null }).config.keep).toEqual([]);
    expect(new Checkpointer({ basePath: perm }).config).toMatchObject({
      saveIntervalSeconds: 900,
      keep: [{ every: 10_000 }],
      keepLastTemporary: 1,
      deleteOldTempCheckpoints: true,
    });
  });
});

describe("Checkpointer.decide / commit (rank 0 decides, every rank writes)", () => {
  it("splits onStep into a broadcastable decision and its commit", async () => {
    const rank0 = checkpointer({ keep: [{ every: 3 }], saveIntervalSeconds: 10 });
    expect(rank0.decide(1)).toBeUndefined();
    advance(TICK);
    const d2 = rank0.decide(2);
    expect(d2).toEqual({ step: 2, path: path.join(perm, "step-2"), isTemporary: true });
    // The clock was reset by the decision: nothing is due at step 3 except the permanent policy.
    expect(rank0.decide(3)).toMatchObject({ isTemporary: false });
    if (d2 === undefined) throw new Error("unreachable");
    await rank0.commit(d2, saver(2));
    expect(await steps(perm)).toEqual([2]);
    await rank0.commit({ step: 3, path: path.join(perm, "step-3"), isTemporary: false }, saver(3));
    expect(await steps(perm)).toEqual([3]);
  });
});
