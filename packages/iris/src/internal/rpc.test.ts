import { describe, expect, it } from "vitest";
import { targetHost } from "./rpc.ts";

describe("targetHost", () => {
  // Every target form iris is given, and its host.
  const hosts: [string, string][] = [
    ["127.0.0.1:8080", "127.0.0.1"],
    ["controller.example:443", "controller.example"],
    ["localhost:1", "localhost"],
    ["[::1]:8080", "::1"],
    ["[fe80::1%eth0]:8080", "fe80::1%eth0"],
    ["::1", "::1"],
    ["10.0.0.5", "10.0.0.5"],
    ["dns:///10.0.0.5:8080", "10.0.0.5"],
    ["dns://8.8.8.8/iris.example:8080", "iris.example"],
    ["dns:iris.example:8080", "iris.example"],
    ["ipv4:10.1.2.3:9", "10.1.2.3"],
    ["ipv6:[::1]:9", "::1"],
  ];
  it.each(hosts)("%s has host %s", (target, host) => {
    expect(targetHost(target)).toBe(host);
  });

  it.each(["unix:/tmp/iris.sock", "unix:///tmp/iris.sock", ""])("%j has none (a socket path or an empty target)", (target) => {
    expect(targetHost(target)).toBeUndefined();
  });
});
