import { describe, expect, it } from "vitest";
import { targetHost } from "./rpc.ts";

describe("targetHost", () => {
  it("finds the host of every target form iris is given", () => {
    expect(targetHost("127.0.0.1:8080")).toBe("127.0.0.1");
    expect(targetHost("controller.example:443")).toBe("controller.example");
    expect(targetHost("localhost:1")).toBe("localhost");
    expect(targetHost("[::1]:8080")).toBe("::1");
    expect(targetHost("[fe80::1%eth0]:8080")).toBe("fe80::1%eth0");
    expect(targetHost("::1")).toBe("::1");
    expect(targetHost("10.0.0.5")).toBe("10.0.0.5");
    expect(targetHost("dns:///10.0.0.5:8080")).toBe("10.0.0.5");
    expect(targetHost("dns://8.8.8.8/iris.example:8080")).toBe("iris.example");
    expect(targetHost("dns:iris.example:8080")).toBe("iris.example");
    expect(targetHost("ipv4:10.1.2.3:9")).toBe("10.1.2.3");
    expect(targetHost("ipv6:[::1]:9")).toBe("::1");
  });

  it("has none for a socket path or an empty target", () => {
    expect(targetHost("unix:/tmp/iris.sock")).toBeUndefined();
    expect(targetHost("unix:///tmp/iris.sock")).toBeUndefined();
    expect(targetHost("")).toBeUndefined();
  });
});
