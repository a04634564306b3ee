// initializeDistributed under failures: missing ranks, a missing secret, strangers, the interface it listens on.
import { withIrisCtx, type IrisContext } from "@marin/iris";
import net from "node:net";
import os from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { initializeDistributed, type Distributed } from "./distributed.ts";

// A minimal task context (rank, world, endpoint registry/resolver) so one test process can play
// ranks over real loopback sockets.
function fakeCtx(rank: number, world: number, coordinator?: Promise<string>) {
  let announce: (address: string) => void = () => {};
  const registered = new Promise<string>((r) => (announce = r));
  const ctx = {
    taskIndex: rank,
    numTasks: world,
    attempt: 1,
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
    resolver: { resolve: async (name: string) => ({ name, address: await (coordinator ?? registered), metadata: {} }) },
  } as unknown as IrisContext;
  return { ctx, registered };
}

const dists: Distributed[] = [];
const servers: net.Server[] = [];
afterEach(async () => {
  for (const d of dists.splice(0)) await d.close();
  for (const s of servers.splice(0)) s.close();
});

process.env.LEVANTER_LOG = "silent";

describe("initializeDistributed failures", () => {
  it("rank 0 names the ranks that never joined", async () => {
    const { ctx } = fakeCtx(0, 3);
    await expect(withIrisCtx(ctx, () => initializeDistributed({ timeoutMs: 300, secret: "s" }))).rejects.toThrow(
      /timed out after 300 ms waiting for rank\(s\) 1, 2 to join the gang/,
    );
  });

  it("a rank without IRIS_GANG_SECRET refuses to start, naming the variable", async () => {
    const { ctx } = fakeCtx(1, 2);
    const saved = process.env.IRIS_GANG_SECRET;
    delete process.env.IRIS_GANG_SECRET;
    try {
      await expect(withIrisCtx(ctx, () => initializeDistributed({ timeoutMs: 300 }))).rejects.toMatchObject({
        code: "DISTRIBUTED",
        message: expect.stringMatching(/IRIS_GANG_SECRET is not set/),
      });
    } finally {
      if (saved !== undefined) process.env.IRIS_GANG_SECRET = saved;
    }
  });

  it("a rank gives up on a coordinator that cannot prove the secret (a stranger on its address)", async () => {
    const server = net.createServer((s) => s.on("error", () => {}));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { ctx } = fakeCtx(1, 2, Promise.resolve(`127.0.0.1:${(server.address() as net.AddressInfo).port}`));
    await expect(withIrisCtx(ctx, () => initializeDistributed({ timeoutMs: 1500, secret: "s" }))).rejects.toThrow(/could not reach the coordinator \(rank 0\) within 1500 ms/);
  });

  it("two ranks form a gang, listening on the advertised interface only", async () => {
    const r0 = fakeCtx(0, 2);
    const r1 = fakeCtx(1, 2, r0.registered);
    const [d0, d1] = await Promise.all([withIrisCtx(r0.ctx, () => initializeDistributed({ secret: "s" })), withIrisCtx(r1.ctx, () => initializeDistributed({ secret: "s" }))]);
    dists.push(d0, d1);
    expect(await Promise.all([d0.allGather("a"), d1.allGather("b")])).toEqual([
      ["a", "b"],
      ["a", "b"],
    ]);
    expect(d1.coordinatorAddress).toBe(d0.coordinatorAddress);
    expect(d0.coordinatorAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    // Not reachable on another interface of this machine (when it has one).
    const other = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && i.family === "IPv4" && !i.internal);
    if (other) {
      const port = Number(d0.coordinatorAddress!.split(":")[1]);
      const refused = await new Promise<boolean>((resolve) => {
        const s = net.connect(port, other.address, () => {
          s.destroy();
          resolve(false);
        });
        s.once("error", () => resolve(true));
      });
      expect(refused).toBe(true);
    }
  });
});
