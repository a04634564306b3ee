// Property tests: random operation chains, joins and column filters against an in-memory reference, inline and on threads.
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { closeThreadPool } from "./exec/threads.ts";
import { buildChain, buildJoin, buildWhere, chainPipeline, joinPipeline, outputOrdered, referenceChain, referenceJoin, referenceWhere, wherePipeline } from "./fixtures/opChain.ts";
import type { Chain, ChainOp, JoinCase, WhereCase } from "./fixtures/opChain.ts";

const opArb: fc.Arbitrary<ChainOp> = fc.oneof(
  fc.record({ op: fc.constant("map" as const), a: fc.integer({ min: 1, max: 7 }), b: fc.integer({ min: 0, max: 9 }) }),
  fc.record({ op: fc.constant("filter" as const), k: fc.integer({ min: 1, max: 5 }), r: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ op: fc.constant("flatMap" as const), n: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ op: fc.constant("mapShard" as const) }),
  fc.record({ op: fc.constant("window" as const), size: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ op: fc.constant("take" as const), n: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ op: fc.constant("reshard" as const), shards: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ op: fc.constant("groupBy" as const), k: fc.integer({ min: 1, max: 6 }), shards: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }) }),
  fc.record({ op: fc.constant("deduplicate" as const), k: fc.integer({ min: 0, max: 6 }) }),
  fc.record({ op: fc.constant("reduce" as const), init: fc.constantFrom(undefined, 0) }),
);

const chainArb: fc.Arbitrary<Chain> = fc.record({
  items: fc.array(fc.integer({ min: -50, max: 200 }), { maxLength: 60 }),
  shards: fc.integer({ min: 1, max: 5 }),
  ops: fc.array(opArb, { maxLength: 5 }),
});

const joinArb: fc.Arbitrary<JoinCase> = fc.record({
  left: fc.array(fc.record({ k: fc.integer({ min: 0, max: 6 }), v: fc.integer() }), { maxLength: 25 }),
  right: fc.array(fc.record({ k: fc.integer({ min: 0, max: 6 }), w: fc.integer() }), { maxLength: 25 }),
  kind: fc.constantFrom("inner" as const, "left" as const),
  shards: fc.integer({ min: 1, max: 4 }),
});

const whereArb: fc.Arbitrary<WhereCase> = fc.record({
  rows: fc.array(fc.record({ a: fc.integer({ min: -20, max: 20 }), b: fc.integer({ min: 0, max: 5 }) }), { maxLength: 40 }),
  min: fc.integer({ min: -20, max: 20 }),
  not: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 3 }),
  shards: fc.integer({ min: 1, max: 4 }),
});

const sorted = (xs: number[]): number[] => [...xs].sort((a, b) => a - b);
const canon = (xs: unknown[]): string[] => xs.map((x) => JSON.stringify(x)).sort();

function expectChain(chain: Chain, actual: number[]): void {
  const expected = referenceChain(chain);
  if (outputOrdered(chain.ops)) expect(actual).toEqual(expected);
  else expect(sorted(actual)).toEqual(sorted(expected));
}

describe("Dataset operations against an in-memory reference", () => {
  afterAll(() => closeThreadPool());

  it("inline: every operation chain matches the reference", async () => {
    await fc.assert(
      fc.asyncProperty(chainArb, async (chain) => {
        expectChain(chain, await buildChain(chain).collect({ backend: "inline" }));
        const n = await buildChain(chain).count({ backend: "inline" });
        expect(n).toBe(referenceChain(chain).length);
      }),
      { numRuns: 120 },
    );
  });

  it("inline: joins match the reference", async () => {
    await fc.assert(
      fc.asyncProperty(joinArb, async (c) => {
        expect(canon(await buildJoin(c).collect({ backend: "inline" }))).toEqual(canon(referenceJoin(c)));
      }),
      { numRuns: 60 },
    );
  });

  it("inline: declarative filters and projections match the reference", async () => {
    await fc.assert(
      fc.asyncProperty(whereArb, async (c) => {
        expect(await buildWhere(c).collect({ backend: "inline" })).toEqual(referenceWhere(c));
      }),
      { numRuns: 60 },
    );
  });

  it("threads: operation chains and joins match the reference", async () => {
    await fc.assert(
      fc.asyncProperty(chainArb, async (chain) => {
        const { records, stats } = await chainPipeline(chain).collect({ backend: "threads", threads: 2, withStats: true });
        expect(stats.backend).toBe("threads");
        expectChain(chain, records);
      }),
      { numRuns: 25 },
    );
    await fc.assert(
      fc.asyncProperty(joinArb, async (c) => {
        expect(canon(await joinPipeline(c).collect({ threads: 2 }))).toEqual(canon(referenceJoin(c)));
      }),
      { numRuns: 10 },
    );
    await fc.assert(
      fc.asyncProperty(whereArb, async (c) => {
        expect(await wherePipeline(c).collect({ threads: 2 })).toEqual(referenceWhere(c));
      }),
      { numRuns: 5 },
    );
  });
});
