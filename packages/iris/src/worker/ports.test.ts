// Tests of port allocation.
import net from "node:net";
import { describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { allocatePorts, portWindow } from "./ports.ts";

describe("allocatePorts", () => {
  it("gives each name a distinct port that is free to bind", async () => {
    const ports = await allocatePorts(["a", "b", "c", "a"]);
    expect(Object.keys(ports).sort()).toEqual(["a", "b", "c"]);
    const values = Object.values(ports);
    expect(new Set(values).size).toBe(3);
    for (const port of values) {
      expect(port).toBeGreaterThan(0);
      const server = net.createServer();
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => resolve());
      });
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("chooses below the OS's ephemeral range (so no outgoing connection takes the port by chance), else lets the OS pick", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "iris-ports-"));
    try {
      writeFileSync(path.join(dir, "range"), "32768\t60999\n");
      expect(portWindow(path.join(dir, "range"))).toEqual({ lo: 20768, hi: 32768 });
      expect(portWindow(path.join(dir, "missing"))).toBeUndefined();
      const inWindow = await allocatePorts(["x", "y"], { lo: 20768, hi: 32768 });
      for (const p of Object.values(inWindow)) expect(p >= 20768 && p < 32768, `port ${p}`).toBe(true);
      // A window whose every port is taken: the OS picks.
      const squatter = net.createServer();
      await new Promise<void>((r) => squatter.listen({ port: 0, exclusive: true }, () => r()));
      const taken = (squatter.address() as net.AddressInfo).port;
      try {
        const fallback = await allocatePorts(["z"], { lo: taken, hi: taken + 1 });
        expect(fallback.z).not.toBe(taken);
        expect(fallback.z).toBeGreaterThan(0);
      } finally {
        squatter.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("allocates nothing for no names", async () => {
    expect(await allocatePorts([])).toEqual({});
  });
});
