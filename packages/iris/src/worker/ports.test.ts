// Tests of port allocation.
import net from "node:net";
import { describe, expect, it } from "vitest";
import { allocatePorts } from "./ports.ts";

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

  it("allocates nothing for no names", async () => {
    expect(await allocatePorts([])).toEqual({});
  });
});
