// The exact all-reduce over real loopback sockets: N = 2, 3, 4 ranks in this process against the
// one-process reference, and peers that send garbage, disconnect, or lack the gang's secret.
import { existsSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { localGangs, memoryRendezvous } from "../internal/testGang.ts";
import { Rng } from "../rng.ts";
import { allGatherJson, allReduceExactMean, finishExactMean, type Segment } from "./collectives.ts";
import { accumulateQuantized, exactSumIsNative, maxAbs, scaleExponent } from "./exactSum.ts";
import { ensureShared, shmTesting } from "./sharedMemory.ts";
import { formGang, type Gang } from "./gang.ts";
import { connectAuthenticated, Kind, Link } from "./wire.ts";

process.env.LEVANTER_LOG = "silent";
const open: Gang[] = [];
const links: Link[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close();
  for (const l of links.splice(0)) l.destroy();
});

function randomMicroBatches(rng: Rng, count: number, sizes: number[]): Float32Array[] {
  const total = sizes.reduce((a, b) => a + b, 0);
  return Array.from({ length: count }, () => Float32Array.from({ length: total }, () => (rng.next() - 0.5) * 2 ** (Math.floor(rng.next() * 30) - 20)));
}

function segmentsOf(sizes: number[], mbs: Float32Array[]): Segment[] {
  let offset = 0;
  return sizes.map((length) => {
    let m = 0;
    for (const f of mbs) m = Math.max(m, maxAbs(f.subarray(offset, offset + length)));
    const seg = { offset, length, s: scaleExponent(m, mbs.length) };
    offset += length;
    return seg;
  });
}

function partialOf(mbs: Float32Array[], segments: Segment[]): Float64Array {
  const acc = new Float64Array(mbs[0]!.length);
  for (const f of mbs) for (const s of segments) accumulateQuantized(acc, s.offset, f.subarray(s.offset, s.offset + s.length), s.s);
  return acc;
}

describe("allReduceExactMean on loopback", () => {
  for (const world of [2, 3, 4]) {
    it(`${world} ranks, odd sizes, small buckets: every rank gets the one-process reference bits`, async () => {
      const rng = new Rng(world);
      const sizes = [1, 7, 1023, 3, 4099];
      const mbs = randomMicroBatches(rng, 12, sizes);
      const segments = segmentsOf(sizes, mbs);
      const reference = finishExactMean(partialOf(mbs, segments), segments, 12);
      const gangs = await localGangs(world);
      open.push(...gangs);
      const results = await Promise.all(
        gangs.map((g) => {
          const mine = mbs.slice(Math.floor((g.rank * 12) / world), Math.floor(((g.rank + 1) * 12) / world));
          return allReduceExactMean(g, { kind: "fixed", partial: partialOf(mine, segments) }, segments, 12, { bucketElements: 777 });
        }),
      );
      for (const r of results) expect(Buffer.from(r.buffer).equals(Buffer.from(reference.buffer))).toBe(true);
      // The gang stays usable: a second collective in sequence.
      expect(await Promise.all(gangs.map((g) => allGatherJson(g, g.rank * 10)))).toEqual(gangs.map(() => [...Array(world).keys()].map((r) => r * 10)));
    });
  }

  it("ranks with one micro-batch send float32 gradients, others fixed-point sums: mixed in one gang, the same bits", async () => {
    // 5 micro-batches over 4 ranks: ranks 0–2 hold one each (raw), rank 3 two (fixed).
    const sizes = [3, 2049, 1, 700];
    const mbs = randomMicroBatches(new Rng(9), 5, sizes);
    const segments = segmentsOf(sizes, mbs);
    const reference = finishExactMean(partialOf(mbs, segments), segments, 5);
    const gangs = await localGangs(4);
    open.push(...gangs);
    const split = [[0], [1], [2], [3, 4]];
    const kinds = split.map((ks) => (ks.length === 1 ? ("raw" as const) : ("fixed" as const)));
    const results = await Promise.all(
      gangs.map((g) => {
        const mine = split[g.rank]!.map((k) => mbs[k]!);
        const c = mine.length === 1 ? { kind: "raw" as const, values: mine[0]! } : { kind: "fixed" as const, partial: partialOf(mine, segments) };
        return allReduceExactMean(g, c, segments, 5, { bucketElements: 500, kinds });
      }),
    );
    for (const r of results) expect(Buffer.from(r.buffer).equals(Buffer.from(reference.buffer))).toBe(true);
    // A raw contribution on one process (no gang) is the same as quantizing it first.
    const one = await allReduceExactMean(undefined, { kind: "raw", values: mbs[0]! }, segmentsOf(sizes, [mbs[0]!]), 1);
    expect(Buffer.from(one.buffer).equals(Buffer.from(finishExactMean(partialOf([mbs[0]!], segmentsOf(sizes, [mbs[0]!])), segmentsOf(sizes, [mbs[0]!]), 1).buffer))).toBe(true);
  });

  it.runIf(exactSumIsNative() && existsSync("/dev/shm"))("same-host ranks exchange through shared memory, others over TCP: the same bits, and no /dev/shm file left", async () => {
    const sizes = [5, 3000, 17];
    const mbs = randomMicroBatches(new Rng(21), 3, sizes);
    const segments = segmentsOf(sizes, mbs);
    const reference = finishExactMean(partialOf(mbs, segments), segments, 3);
    // The regions these gangs create (their names pass through the offer hook): none may be left.
    // (Not a count of /dev/shm: other test files create and remove regions meanwhile.)
    const created: string[] = [];
    const leftovers = () => created.filter((n) => existsSync(path.join("/dev/shm", n)));
    const run = async (setup: () => void, expectShared: number[][]) => {
      const gangs = await localGangs(3);
      open.push(...gangs);
      setup();
      const offer = shmTesting.offerName;
      shmTesting.offerName = (n) => {
        created.push(n);
        return offer ? offer(n) : n;
      };
      try {
        const regions = await Promise.all(gangs.map((g) => ensureShared(g, 3022)));
        expect(regions.map((r) => [...r.peers.keys()].sort())).toEqual(expectShared);
      } finally {
        delete process.env.LEVANTER_DP_SHM;
        shmTesting.offerName = undefined;
      }
      expect(leftovers()).toEqual([]);
      for (let rep = 0; rep < 2; rep++) {
        const got = await Promise.all(gangs.map((g) => allReduceExactMean(g, { kind: "raw", values: mbs[g.rank]! }, segments, 3, { bucketElements: 1000 })));
        for (const r of got) expect(Buffer.from(r.buffer).equals(Buffer.from(reference.buffer))).toBe(true);
      }
    };
    // All three on this host: shared memory between every pair.
    await run(() => {}, [
      [1, 2],
      [0, 2],
      [0, 1],
    ]);
    // LEVANTER_DP_SHM=off: TCP between every pair.
    await run(() => (process.env.LEVANTER_DP_SHM = "off"), [[], [], []]);
    // A rank whose region others cannot map (as on another host): TCP with it, shared memory between the rest.
    let calls = 0;
    await run(() => (shmTesting.offerName = (n) => (calls++ === 2 ? `${n}0` : n)), [[1], [0], []]);
    expect(created).toHaveLength(6); // three regions in the first run and three in the last
  });

  it("a peer that sends garbage fails the step with a clear error", async () => {
    const gangs = await localGangs(2);
    open.push(...gangs);
    // Over TCP (the payload travels in the frame): rank 1 negotiates no shared memory.
    process.env.LEVANTER_DP_SHM = "off";
    try {
      await Promise.all(gangs.map((g) => ensureShared(g, 10)));
    } finally {
      delete process.env.LEVANTER_DP_SHM;
    }
    const step = allReduceExactMean(gangs[0], { kind: "fixed", partial: new Float64Array(10) }, [{ offset: 0, length: 10, s: 0 }], 2);
    // Rank 1 sends a reduce frame of the wrong size for bucket 0 (which rank 0 owns).
    gangs[1]!.send(0, Kind.REDUCE, 1, 0, new Uint8Array(3));
    await expect(step).rejects.toMatchObject({ code: "DISTRIBUTED", message: expect.stringMatching(/rank 1 sent 3 bytes for reduce bucket 0 of all-reduce 1, expected 40/) });
    // A byte stream that is not frames at all, from an authenticated peer.
    const { gang, peer } = await withManualPeer();
    const gather = allGatherJson(gang, 1);
    peer.socket.write(Buffer.from("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    await expect(gather).rejects.toMatchObject({ code: "DISTRIBUTED", message: expect.stringMatching(/rank 1 sent a malformed frame/) });
  });

  it("a peer that disconnects fails the step as PEER_FAILED; a silent one within the bound", async () => {
    const gangs = await localGangs(3);
    open.push(...gangs);
    const step = allReduceExactMean(gangs[0], { kind: "raw", values: new Float32Array(9) }, [{ offset: 0, length: 9, s: 0 }], 3);
    gangs[2]!.fail(new Error("simulated crash")); // destroys rank 2's sockets, as a dead process's kernel would
    await expect(step).rejects.toMatchObject({ code: "PEER_FAILED", message: expect.stringMatching(/rank 2 closed its connection/) });

    // An authenticated peer that then says nothing (a hung process keeps its sockets open).
    const { gang } = await withManualPeer({ peerTimeoutMs: 400, heartbeatMs: 100 });
    const t0 = performance.now();
    await expect(allGatherJson(gang, 0)).rejects.toMatchObject({
      code: "PEER_FAILED",
      message: expect.stringMatching(/rank 1 sent nothing for \d+ ms \(limit 400 ms\): dead or hung/),
    });
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  it("a rank whose assigned port was taken meanwhile listens on another and the gang still forms", async () => {
    const squatter = net.createServer();
    await new Promise<void>((r) => squatter.listen(0, "127.0.0.1", r));
    const taken = (squatter.address() as net.AddressInfo).port;
    try {
      const rendezvous = memoryRendezvous();
      const gangs = await Promise.all(
        [0, 1].map((rank) => formGang({ rank, world: 2, secret: "s", host: "127.0.0.1", port: rank === 0 ? taken : 0, rendezvous, timeoutMs: 10_000 })),
      );
      open.push(...gangs);
      expect(gangs[0]!.address).not.toBe(`127.0.0.1:${taken}`);
      expect(await Promise.all(gangs.map((g) => allGatherJson(g, g.rank)))).toEqual([
        [0, 1],
        [0, 1],
      ]);
    } finally {
      squatter.close();
    }
  });

  it("a connection without the gang's secret is refused and changes nothing", async () => {
    const rendezvous = memoryRendezvous();
    const forming = Promise.all([0, 1].map((rank) => formGang({ rank, world: 2, secret: "right", host: "127.0.0.1", port: 0, rendezvous, timeoutMs: 10_000 })));
    const address = await rendezvous.registered;
    // An impostor with the wrong secret is refused before it can join...
    await expect(connectAuthenticated(address, { secret: "wrong", rank: 1, world: 2, timeoutMs: 2000 })).rejects.toThrow(/did not prove it holds this gang attempt's secret/);
    // ...an impostor that skips checking the acceptor and sends a made-up proof is dropped...
    const fake = new Link(net.connect(Number(address.split(":")[1]), "127.0.0.1"), "impostor");
    fake.socket.on("error", () => {});
    const hello = Buffer.alloc(44);
    hello.write("LVDP", 0);
    hello.writeUInt32LE(1, 4);
    hello.writeUInt32LE(1, 8);
    fake.send(Kind.HELLO, 0, 0, hello);
    fake.send(Kind.PROOF, 0, 0, Buffer.alloc(32));
    fake.send(Kind.JOIN, 0, 0, Buffer.from(JSON.stringify("127.0.0.1:9")));
    await new Promise<void>((r) => fake.socket.once("close", () => r()));
    // ...and a raw client claiming rank 1 in the old JSON protocol is dropped.
    const raw = net.connect(Number(address.split(":")[1]), "127.0.0.1");
    raw.on("error", () => {});
    raw.write(`${JSON.stringify({ kind: "hello", rank: 1 })}\n`);
    await new Promise<void>((r) => raw.once("close", () => r()));
    const gangs = await forming;
    open.push(...gangs);
    // The real gang formed and its sums are exact and unaffected.
    const sizes = [5];
    const mbs = randomMicroBatches(new Rng(1), 2, sizes);
    const segments = segmentsOf(sizes, mbs);
    const reference = finishExactMean(partialOf(mbs, segments), segments, 2);
    const got = await Promise.all(gangs.map((g) => allReduceExactMean(g, { kind: "raw", values: mbs[g.rank]! }, segments, 2)));
    for (const r of got) expect([...r]).toEqual([...reference]);
  });
});

// A 2-rank gang whose rank 1 is driven by hand: it authenticates and joins, then does only what
// the test makes it do.
async function withManualPeer(extra: { peerTimeoutMs?: number; heartbeatMs?: number } = {}): Promise<{ gang: Gang; peer: Link }> {
  const rendezvous = memoryRendezvous();
  const forming = formGang({ rank: 0, world: 2, secret: "s", host: "127.0.0.1", port: 0, rendezvous, timeoutMs: 10_000, ...extra });
  const peer = await connectAuthenticated(await rendezvous.registered, { secret: "s", rank: 1, world: 2, timeoutMs: 2000 });
  peer.send(Kind.JOIN, 0, 0, Buffer.from(JSON.stringify("127.0.0.1:1")));
  peer.resume();
  const gang = await forming;
  open.push(gang);
  links.push(peer);
  return { gang, peer };
}
