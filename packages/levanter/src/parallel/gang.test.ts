// The gang's own rules over real loopback sockets: the per-peer bound on frames waiting
// unclaimed (a flooding peer fails the gang naming it) and the goodbye barrier of a clean end.
import { afterEach, describe, expect, it } from "vitest";
import { localGangs } from "../internal/testGang.ts";
import { allGatherJson } from "./collectives.ts";
import { FRAME_OVERHEAD_BYTES, type Gang } from "./gang.ts";
import { Kind } from "./wire.ts";

process.env.LEVANTER_LOG = "silent";
const open: Gang[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close();
});

const KiB = 1024;

describe("the gang's mailbox bound", () => {
  it("fails the gang with PEER_FAILED naming the peer that sends too many unclaimed frames", async () => {
    const gangs = await localGangs(3, { maxBufferedBytes: 1024 * KiB });
    open.push(...gangs);
    const [g0, , g2] = gangs as [Gang, Gang, Gang];
    // Rank 0 is inside a collective, waiting for something rank 2 never sends.
    const pending = g0.receive(2, Kind.GATHER, 999_999, 0);
    const frame = new Uint8Array(200 * KiB);
    // Rank 2 floods rank 0 with stray frames (fresh tags, so never a duplicate).
    for (let i = 0; i < 40 && !g2.error; i++) g2.send(0, Kind.GATHER, 10_000 + i, 0, frame);
    await expect(pending).rejects.toMatchObject({ code: "PEER_FAILED", message: expect.stringMatching(/^rank 2 sent more than 1048576 bytes of frames that nothing asked for/) });
    expect(g0.error?.code).toBe("PEER_FAILED");
    // What was let in stayed under the bound: the frame that would have crossed it was refused by its header.
    expect(g0.bufferedFrom(2)).toBeLessThanOrEqual(1024 * KiB);
    expect(g0.bufferedFrom(2)).toBeGreaterThan(0);
    // Later operations fail the same way, and rank 2's links were closed.
    await expect(g0.receive(1, Kind.GATHER, 1, 0)).rejects.toMatchObject({ code: "PEER_FAILED" });
    await expect(g2.receive(0, Kind.GATHER, 1, 0)).rejects.toMatchObject({ code: "PEER_FAILED", message: expect.stringMatching(/rank 0 closed its connection/) });
  });

  it("counts only frames nobody waits for, and frees what a receive takes", async () => {
    const gangs = await localGangs(2, { maxBufferedBytes: 600 * KiB });
    open.push(...gangs);
    const [g0, g1] = gangs as [Gang, Gang];
    // A frame larger than the bound is fine when a receive already waits for it.
    const big = g0.receive(1, Kind.GATHER, 1, 0);
    g1.send(0, Kind.GATHER, 1, 0, new Uint8Array(2048 * KiB));
    expect((await big).payload.byteLength).toBe(2048 * KiB);
    // Sent ahead, 2 × 250 KiB wait in the mailbox; received, they free their room for 2 more.
    for (let round = 0; round < 3; round++) {
      const tags = [100 + 2 * round, 101 + 2 * round];
      for (const t of tags) g1.send(0, Kind.GATHER, t, 0, new Uint8Array(250 * KiB));
      // A tiny collective after them: once it completes, both frames have arrived (one TCP stream).
      expect(await Promise.all([allGatherJson(g0, round), allGatherJson(g1, round)])).toEqual([
        [round, round],
        [round, round],
      ]);
      expect(g0.bufferedFrom(1)).toBe(2 * (250 * KiB + FRAME_OVERHEAD_BYTES));
      for (const t of tags) expect((await g0.receive(1, Kind.GATHER, t, 0)).payload.byteLength).toBe(250 * KiB);
      expect(g0.bufferedFrom(1)).toBe(0);
    }
    expect(g0.error).toBeUndefined();
    expect(g1.error).toBeUndefined();
  });
});

describe("the gang's clean end", () => {
  it("close({ waitForPeers }) keeps a rank's links open until every peer has said goodbye", async () => {
    const gangs = await localGangs(2, { peerTimeoutMs: 400, heartbeatMs: 50 });
    open.push(...gangs);
    const [g0, g1] = gangs as [Gang, Gang];
    // Rank 1 is done first: it sends its last frame and waits at the barrier.
    g1.send(0, Kind.GATHER, 7, 0, new Uint8Array(16));
    let closed1 = false;
    const close1 = g1.close({ waitForPeers: true }).then(() => (closed1 = true));
    // Rank 0 still works (a final save, a final evaluation) for longer than the peers' silence
    // limit: rank 1 has stopped its heartbeats, yet neither side fails the other.
    expect((await g0.receive(1, Kind.GATHER, 7, 0)).payload.byteLength).toBe(16);
    await new Promise((r) => setTimeout(r, 1000));
    expect(closed1).toBe(false);
    expect(g0.error).toBeUndefined();
    expect(g1.error).toBeUndefined();
    // Rank 0 ends too: both closes resolve, neither with an error.
    await Promise.all([g0.close({ waitForPeers: true }), close1]);
    expect(closed1).toBe(true);
    expect(g0.error).toBeUndefined();
    expect(g1.error).toBeUndefined();
  });

  it("close({ waitForPeers }) gives up after its timeout, naming the ranks that never said goodbye", async () => {
    const gangs = await localGangs(3);
    open.push(...gangs);
    const [g0, g1] = gangs as [Gang, Gang, Gang];
    // Rank 2 is alive but never ends.
    const close1 = g1.close({ waitForPeers: true, timeoutMs: 600 });
    await expect(g0.close({ waitForPeers: true, timeoutMs: 300 })).rejects.toMatchObject({
      code: "DISTRIBUTED",
      message: "rank(s) 2 did not say goodbye within 300 ms of rank 0's",
    });
    // Rank 0 said goodbye before giving up: rank 1 still waits only for rank 2.
    await expect(close1).rejects.toMatchObject({ code: "DISTRIBUTED", message: "rank(s) 2 did not say goodbye within 600 ms of rank 1's" });
  });

  it("close({ waitForPeers }) rejects when a peer dies before saying goodbye", async () => {
    const gangs = await localGangs(3, { peerTimeoutMs: 5000, heartbeatMs: 100 });
    open.push(...gangs);
    const [g0, g1, g2] = gangs as [Gang, Gang, Gang];
    const close0 = g0.close({ waitForPeers: true });
    const close1 = g1.close({ waitForPeers: true });
    // Rank 2 dies (its links drop with no goodbye).
    g2.fail(new Error("killed"));
    await expect(close0).rejects.toMatchObject({ code: "PEER_FAILED", message: expect.stringMatching(/rank 2 closed its connection/) });
    await expect(close1).rejects.toMatchObject({ code: "PEER_FAILED", message: expect.stringMatching(/rank 2 closed its connection/) });
  });
});
