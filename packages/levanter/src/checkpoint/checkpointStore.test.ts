// Checkpoint directories: save, list, load, damaged ones skipped.
import fc from "fast-check";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LevanterError } from "../errors.ts";
import { setLogSink, type LogRecord } from "../internal/log.ts";
import { findLatestCheckpoint, listCheckpoints, loadCheckpoint, readCheckpointMetadata, saveCheckpoint } from "./checkpointStore.ts";

let tmp: string;
beforeEach(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "levanter-store-"));
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const bits = (a: Float32Array | Int32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe("saveCheckpoint / loadCheckpoint", () => {
  it("round-trips arrays bit for bit (NaN payloads, -0, denormals) and state exactly", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 2 ** 32 - 1 }), { maxLength: 300 }),
        fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { maxLength: 50 }),
        // JSON writes -0 as 0: the one finite double state does not keep (documented on CheckpointPayload).
        fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Object.is(x, -0)),
        async (floatBits, ints, scalar) => {
          const dir = path.join(tmp, `step-${floatBits.length}`);
          const w = new Float32Array(Uint32Array.from(floatBits).buffer);
          const iter = Int32Array.from(ints);
          const state = { loader: { step: 7 }, rng: [1, 2, 3], adam: { accBeta1: scalar, accBeta2: 0.51334196 } };
          await saveCheckpoint(dir, { step: 7, arrays: { "layers.0.w": { shape: [w.length], data: w }, iter: { shape: [1, iter.length], data: iter } }, state });
          const back = await loadCheckpoint(dir);
          expect(back.names).toEqual(["layers.0.w", "iter"]);
          expect(back.arrays["layers.0.w"]).toMatchObject({ dtype: "float32", shape: [w.length] });
          expect(bits(back.arrays["layers.0.w"].data)).toEqual(floatBits);
          expect(back.arrays.iter.data).toBeInstanceOf(Int32Array);
          expect(Array.from(back.arrays.iter.data)).toEqual(ints);
          expect(back.arrays.iter.shape).toEqual([1, iter.length]);
          expect(back.state).toEqual(state);
          expect(Object.is((back.state as typeof state).adam.accBeta1, scalar)).toBe(true);
          expect(back.metadata).toMatchObject({ step: 7, isTemporary: false });
        },
      ),
      { numRuns: 15 },
    );
  });

  it("writes metadata.json last: without it the directory is not a checkpoint", async () => {
    const dir = path.join(tmp, "step-3");
    await saveCheckpoint(dir, { step: 3, isTemporary: true, arrays: { a: { shape: [2, 2], data: new Float32Array(4) } }, state: null });
    expect((await readdir(dir)).sort()).toEqual(["arrays.bin", "arrays.json", "metadata.json", "state.json"]);
    expect(await readCheckpointMetadata(dir)).toMatchObject({ step: 3, isTemporary: true });
    await rm(path.join(dir, "metadata.json"));
    expect(await readCheckpointMetadata(dir)).toBeUndefined();
    await expect(loadCheckpoint(dir)).rejects.toMatchObject({ code: "CHECKPOINT_NOT_FOUND" });
  });

  it("re-saving into a directory replaces the old checkpoint", async () => {
    const dir = path.join(tmp, "step-5");
    await saveCheckpoint(dir, { step: 5, isTemporary: true, arrays: { a: { shape: [3], data: Float32Array.of(1, 2, 3) } } });
    await saveCheckpoint(dir, { step: 5, arrays: { b: { shape: [1], data: Int32Array.of(9) } }, state: { x: 1 } });
    const back = await loadCheckpoint(dir);
    expect(back.names).toEqual(["b"]);
    expect(back.metadata.isTemporary).toBe(false);
    expect(back.state).toEqual({ x: 1 });
  });

  it("detects corruption: checksum, truncation, malformed files (naming the field)", async () => {
    const dir = path.join(tmp, "step-1");
    await saveCheckpoint(dir, { step: 1, arrays: { a: { shape: [4], data: Float32Array.of(1, 2, 3, 4) }, b: { shape: [2], data: Int32Array.of(5, 6) } } });
    const bin = path.join(dir, "arrays.bin");
    const good = await readFile(bin);
    const flipped = Buffer.from(good);
    flipped[3] ^= 1;
    await writeFile(bin, flipped);
    await expect(loadCheckpoint(dir)).rejects.toThrow(/arrays\.0 \(a\): checksum mismatch/);
    await writeFile(bin, good.subarray(0, 20));
    await expect(loadCheckpoint(dir)).rejects.toThrow(/arrays\.1 \(b\): extends past the end/);
    await writeFile(bin, good);
    const manifest = JSON.parse(await readFile(path.join(dir, "arrays.json"), "utf8"));
    manifest.arrays[1].dtype = "float16";
    await writeFile(path.join(dir, "arrays.json"), JSON.stringify(manifest));
    await expect(loadCheckpoint(dir)).rejects.toThrow(/arrays\.1\.dtype/);
    await writeFile(path.join(dir, "metadata.json"), JSON.stringify({ step: -1, timestamp: "now", isTemporary: false }));
    const err = await loadCheckpoint(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LevanterError);
    expect((err as LevanterError).code).toBe("CHECKPOINT_CORRUPT");
    expect((err as Error).message).toMatch(/step: .*timestamp: /);
  });

  it("refuses state that JSON would silently change, and mismatched shapes", async () => {
    const dir = path.join(tmp, "step-2");
    await expect(saveCheckpoint(dir, { step: 2, arrays: {}, state: { opt: { lr: Number.NaN } } })).rejects.toThrow(/state\.opt\.lr: NaN/);
    await expect(saveCheckpoint(dir, { step: 2, arrays: {}, state: { rng: 1n } })).rejects.toThrow(/state\.rng: a bigint/);
    await expect(saveCheckpoint(dir, { step: 2, arrays: { a: { shape: [3], data: new Float32Array(4) } } })).rejects.toThrow(/arrays\.a: shape \[3\]/);
    await expect(saveCheckpoint(dir, { step: 2, arrays: { a: { shape: [1], data: new Float64Array(1) as unknown as Float32Array } } })).rejects.toThrow(
      /Float32Array or Int32Array/,
    );
    expect(await readCheckpointMetadata(dir)).toBeUndefined();
  });

  it("state.json carries a checksum in arrays.json: an edited state is refused, naming the file; a checkpoint from before the checksum still loads", async () => {
    const dir = path.join(tmp, "step-4");
    await saveCheckpoint(dir, { step: 4, arrays: { a: { shape: [1], data: Float32Array.of(1) } }, state: { loader: { step: 4 } } });
    const stateFile = path.join(dir, "state.json");
    const good = await readFile(stateFile, "utf8");
    await writeFile(stateFile, good.replace('"step":4', '"step":1'));
    await expect(loadCheckpoint(dir)).rejects.toThrow(`${stateFile}: checksum mismatch`);
    await writeFile(stateFile, good);
    expect((await loadCheckpoint(dir)).state).toEqual({ loader: { step: 4 } });
    const manifestFile = path.join(dir, "arrays.json");
    const manifest = JSON.parse(await readFile(manifestFile, "utf8")) as { state?: unknown };
    delete manifest.state;
    await writeFile(manifestFile, JSON.stringify(manifest));
    await writeFile(stateFile, good.replace('"step":4', '"step":1'));
    expect((await loadCheckpoint(dir)).state).toEqual({ loader: { step: 1 } });
  });
});

describe("discovery of checkpoints with a damaged metadata.json", () => {
  it("skips it with a warning naming it (warn), quietly (skip), or throws (error)", async () => {
    for (const step of [2, 5]) await saveCheckpoint(path.join(tmp, `step-${step}`), { step, arrays: {} });
    const damaged = path.join(tmp, "step-5", "metadata.json");
    await writeFile(damaged, "{oops");
    const records: LogRecord[] = [];
    const previous = setLogSink((r) => records.push(r));
    try {
      expect((await listCheckpoints(tmp)).map((c) => c.metadata.step)).toEqual([2]);
      expect(records.map((r) => [r.level, r.msg])).toEqual([["warn", `checkpoint skipped: ${damaged} is damaged (not valid JSON)`]]);
      expect((await findLatestCheckpoint(tmp, { damaged: "skip" }))?.metadata.step).toBe(2);
      expect(records).toHaveLength(1);
      await expect(findLatestCheckpoint(tmp, { damaged: "error" })).rejects.toMatchObject({ code: "CHECKPOINT_CORRUPT", message: `${damaged}: not valid JSON` });
    } finally {
      setLogSink(previous);
    }
  });
});
