// initializeDistributed under failures: missing ranks, dead peers, timeouts.
import { withIrisCtx, type IrisContext } from "@marin/iris";
import net from "node:net";
import readline from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "@marin/iris/testing";
import { initializeDistributed, type Distributed } from "./distributed.ts";

// A minimal task context (rank, world, endpoint registry/resolver) so one test process can play
// one rank over real loopback sockets while the test drives the other ranks by hand.
function fakeCtx(rank: number, world: number, coordinator?: string) {
  let announce: (address: string) => void = () => {};
  const registered = new Promise<string>((r) => (announce = r));
  const ctx = {
    taskIndex: rank,
    numTasks: world,
    advertiseHost: "127.0.0.1",
    getPort: () => {
      throw new Error("no named port");
    },
    registry: {
      register: async (_name: string, address: string) => {
        announce(address);
        return { unregister: async () => {} };
      },
    },
    resolver: { resolve: async (name: string) => ({ name, address: coordinator!, metadata: {} }) },
  } as unknown as IrisContext;
  return { ctx, registered };
}

const sockets: net.Socket[] = [];
const servers: net.Server[] = [];
const dists: Distributed[] = [];
afterEach(async () => {
  for (const d of dists.splice(0)) await d.close();
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) s.close();
});

async function connect(address: string): Promise<{ socket: net.Socket; lines: string[]; closed: Promise<void> }> {
  const i = address.lastIndexOf(":");
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect(Number(address.slice(i + 1)), address.slice(0, i), () => resolve(s));
    s.once("error", reject);
  });
  sockets.push(socket);
  const lines: string[] = [];
  readline.createInterface({ input: socket }).on("line", (l) => lines.push(l));
  const closed = new Promise<void>((r) => socket.once("close", () => r()));
  return { socket, lines, closed };
}

process.env.LEVANTER_LOG = "warn";

describe("distributed channel failures", () => {
  it("rank 0 drops a stray connection sending garbage, then fails a gather whose peer sends garbage", async () => {
    const { ctx, registered } = fakeCtx(0, 2);
    const init = withIrisCtx(ctx, () => initializeDistributed({ timeoutMs: 10_000 }));
    const address = await registered;
    const stray = await connect(address);
    stray.socket.write("GET / HTTP/1.1\r\n\r\n");
    await stray.closed; // dropped, and the process did not crash on the bad JSON
    const peer = await connect(address);
    peer.socket.write(`${JSON.stringify({ kind: "hello", rank: 1 })}\n`);
    const dist = await init;
    dists.push(dist);
    expect(dist).toMatchObject({ rank: 0, world: 2 });
    const gather = dist.allGather("x");
    peer.socket.write("{not json\n");
    await expect(gather).rejects.toMatchObject({ code: "DISTRIBUTED", message: expect.stringMatching(/rank 1 sent a line that is not a levanter message: "\{not json"/) });
    // The rounds are out of step now: later gathers fail too, rather than mixing rounds.
    await expect(dist.allGather("y")).rejects.toMatchObject({ code: "DISTRIBUTED" });
  });

  it("rank 0's allGather times out naming the rank that never sent its value", async () => {
    const { ctx, registered } = fakeCtx(0, 3);
    const init = withIrisCtx(ctx, () => initializeDistributed({ timeoutMs: 10_000, gatherTimeoutMs: 300 }));
    const address = await registered;
    const peers = [await connect(address), await connect(address)];
    for (const [i, p] of peers.entries()) p.socket.write(`${JSON.stringify({ kind: "hello", rank: i + 1 })}\n`);
    const dist = await init;
    dists.push(dist);
    peers[0]!.socket.write(`${JSON.stringify({ kind: "gather", round: 0, rank: 1, value: 1 })}\n`);
    const t0 = Date.now();
    await expect(dist.allGather(0)).rejects.toMatchObject({ code: "DISTRIBUTED", message: expect.stringMatching(/timed out after 300 ms in allGather round 0 waiting for rank\(s\) 2$/) });
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it("rank 0 names the ranks that never connected", async () => {
    const { ctx } = fakeCtx(0, 3);
    await expect(withIrisCtx(ctx, () => initializeDistributed({ timeoutMs: 300 }))).rejects.toThrow(/waiting for rank\(s\) 1, 2 to connect/);
  });

  it("a non-zero rank times out on a silent coordinator, and fails on a coordinator sending garbage", async () => {
    const conns: net.Socket[] = [];
    const server = net.createServer((s) => void conns.push(s));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    const { ctx } = fakeCtx(1, 2, address);
    const dist = await withIrisCtx(ctx, () => initializeDistributed({ timeoutMs: 5000, gatherTimeoutMs: 300 }));
    dists.push(dist);
    await expect(dist.allGather(1)).rejects.toThrow(/timed out after 300 ms in allGather round 0 waiting for rank 0/);

    const dist2 = await withIrisCtx(ctx, () => initializeDistributed({ timeoutMs: 5000, gatherTimeoutMs: 10_000 }));
    dists.push(dist2);
    await waitFor("both ranks to connect", () => conns.length === 2, { intervalMs: 0, timeoutMs: 5000 });
    const gather = dist2.allGather(1);
    conns[1]!.write("\u0000\u0001garbage\n");
    await expect(gather).rejects.toThrow(/the coordinator \(rank 0 at 127\.0\.0\.1:\d+\) sent a line that is not a levanter message/);
    for (const c of conns) c.destroy();
  });
});
