// ZeRO-1 ownership and the sharded all-gather: tensor-aligned shards, and every rank ending with
// every shard through shared memory, over TCP, and to one rank only (real loopback gangs).
import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { localGangs } from "../internal/testGang.ts";
import { Rng } from "../rng.ts";
import { allGatherShards, allReduceExactMean, finishExactMean } from "./collectives.ts";
import { accumulateQuantized, exactSumIsNative, maxAbs, scaleExponent } from "./exactSum.ts";
import type { Gang } from "./gang.ts";
import { ensureShared } from "./sharedMemory.ts";
import { Kind } from "./wire.ts";
import { tensorShards } from "./zero.ts";

process.env.LEVANTER_LOG = "silent";
const open: Gang[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close();
});

describe("tensorShards", () => {
  it("cuts at the tensor boundaries nearest equal parts, contiguous, covering every tensor", () => {
    const sizes = [10, 300, 40, 250, 5, 395];
    const total = 1000;
    for (const world of [1, 2, 3, 4]) {
      const plan = tensorShards(sizes, world);
      expect(plan.tensors[0]![0]).toBe(0);
      expect(plan.tensors.at(-1)![1]).toBe(sizes.length);
      expect(plan.ranges.at(-1)![1]).toBe(total);
      for (let r = 1; r < world; r++) {
        expect(plan.tensors[r]![0]).toBe(plan.tensors[r - 1]![1]);
        expect(plan.ranges[r]![0]).toBe(plan.ranges[r - 1]![1]);
      }
    }
    // Boundaries at 10, 310, 350, 600, 605: 600 is nearest 500; 310, 600 and 605 nearest 250, 500, 750.
    expect(tensorShards(sizes, 2).tensors).toEqual([
      [0, 4],
      [4, 6],
    ]);
    expect(tensorShards(sizes, 2).ranges).toEqual([
      [0, 600],
      [600, 1000],
    ]);
    expect(tensorShards(sizes, 4).tensors).toEqual([
      [0, 2],
      [2, 4],
      [4, 5],
      [5, 6],
    ]);
  });

  it("more ranks than tensors leaves some ranks nothing to own; a bad world is a RangeError", () => {
    const plan = tensorShards([4, 4], 3);
    expect(plan.tensors.flatMap(([a, b]) => Array.from({ length: b - a }, (_, i) => a + i))).toEqual([0, 1]);
    expect(plan.ranges.map(([a, b]) => b - a).reduce((x, y) => x + y, 0)).toBe(8);
    expect(() => tensorShards([1], 0)).toThrow(RangeError);
  });
});

describe("allGatherShards on loopback", () => {
  const shards = (length: number, world: number) =>
    Array.from({ length: world }, (_, j) => [Math.floor((j * length) / world), Math.floor(((j + 1) * length) / world)] as [number, number]);

  for (const transport of ["tcp", ...(exactSumIsNative() && existsSync("/dev/shm") ? ["shared memory"] : [])]) {
    it(`${transport}: 2, 3 and 4 ranks each end with every rank's shard, twice in a row; with \`to\` only that rank does`, async () => {
      const length = 5003;
      const full = Float32Array.from({ length }, (_, i) => Math.sin(i) * 1e3);
      for (const world of [2, 3, 4]) {
        const gangs = await localGangs(world);
        open.push(...gangs);
        if (transport === "tcp") process.env.LEVANTER_DP_SHM = "off";
        try {
          const regions = await Promise.all(gangs.map((g) => ensureShared(g, length)));
          expect(regions.every((r) => r.peers.size === (transport === "tcp" ? 0 : world - 1))).toBe(true);
        } finally {
          delete process.env.LEVANTER_DP_SHM;
        }
        const plan = shards(length, world);
        for (let rep = 0; rep < 2; rep++) {
          const datas = gangs.map((g) => {
            const d = new Float32Array(length).fill(Number.NaN);
            d.set(full.subarray(...plan[g.rank]!), plan[g.rank]![0]);
            return d;
          });
          await Promise.all(gangs.map((g) => allGatherShards(g, datas[g.rank]!, plan, { bucketElements: 700 })));
          for (const d of datas) expect(Buffer.from(d.buffer).equals(Buffer.from(full.buffer))).toBe(true);
        }
        const datas = gangs.map((g) => {
          const d = new Float32Array(length);
          d.set(full.subarray(...plan[g.rank]!), plan[g.rank]![0]);
          return d;
        });
        await Promise.all(gangs.map((g) => allGatherShards(g, datas[g.rank]!, plan, { to: 0, shared: false })));
        expect(Buffer.from(datas[0]!.buffer).equals(Buffer.from(full.buffer))).toBe(true);
        expect(datas[1]!.subarray(...plan[0]!).every((x) => x === 0)).toBe(true);
        // An all-reduce with the same shards and no gather: each rank gets exactly its own shard.
        const rng = new Rng(world);
        const mbs = Array.from({ length: world }, () => Float32Array.from({ length }, () => rng.next() - 0.5));
        let m = 0;
        for (const f of mbs) m = Math.max(m, maxAbs(f));
        const segments = [{ offset: 0, length, s: scaleExponent(m, world) }];
        const acc = new Float64Array(length);
        for (const f of mbs) accumulateQuantized(acc, 0, f, segments[0]!.s);
        const reference = finishExactMean(acc, segments, world);
        const outs = await Promise.all(
          gangs.map((g) => allReduceExactMean(g, { kind: "raw", values: mbs[g.rank]! }, segments, world, { shards: plan, gather: false, into: new Float32Array(length).fill(7) })),
        );
        for (const [r, out] of outs.entries()) {
          const [lo, hi] = plan[r]!;
          expect(Buffer.from(out.slice(lo, hi).buffer).equals(Buffer.from(reference.slice(lo, hi).buffer))).toBe(true);
          expect([...out.subarray(0, lo), ...out.subarray(hi)].every((x) => x === 7)).toBe(true);
        }
        await Promise.all(gangs.splice(0).map((g) => g.close()));
        open.length = 0;
      }
    });
  }

  it("shards that do not split the elements are refused; a wrong-sized bucket fails the gather clearly", async () => {
    const gangs = await localGangs(2);
    open.push(...gangs);
    await expect(
      allGatherShards(gangs[0]!, new Float32Array(10), [
        [0, 4],
        [5, 10],
      ]),
    ).rejects.toMatchObject({ code: "INTERNAL", message: expect.stringMatching(/do not split 10 elements over 2 ranks/) });
    process.env.LEVANTER_DP_SHM = "off";
    try {
      await Promise.all(gangs.map((g) => ensureShared(g, 10)));
    } finally {
      delete process.env.LEVANTER_DP_SHM;
    }
    const gather = allGatherShards(gangs[0]!, new Float32Array(10), [
      [0, 5],
      [5, 10],
    ]);
    // Rank 1 answers the gather (its tag: rank 0's, taken as the call began) with 6 bytes for 5 floats.
    gangs[1]!.send(0, Kind.GATHER, gangs[0]!.seq - 1, 0, new Uint8Array(6));
    await expect(gather).rejects.toMatchObject({ code: "DISTRIBUTED", message: expect.stringMatching(/rank 1 sent 6 bytes for bucket 0 of gather \d+, expected 20/) });
  });
});
