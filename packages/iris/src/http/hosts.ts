// Which `Host` headers a server answers when auth is off (a DNS-rebinding page reaches the port
// under a name of its own; it is refused with 421): the bound address, the loopback names on a
// loopback bind, and on a wildcard bind (0.0.0.0, ::) any IP literal or this machine's hostname.
import { isIP } from "node:net";
import os from "node:os";

function isLoopback(h: string): boolean {
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Splits a Host header into its lower-case host (no brackets) and port ("" when absent). */
export function splitHost(header: string): { host: string; port: string } {
  const h = header.trim().toLowerCase();
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(h);
  if (v6) return { host: v6[1]!, port: v6[2] ?? "" };
  const i = h.lastIndexOf(":");
  return i < 0 || h.indexOf(":") !== i ? { host: h, port: "" } : { host: h.slice(0, i), port: h.slice(i + 1) };
}

/** The `servesHost` check of a server bound to `bindHost` on `port()` (read when asked). */
export function hostChecker(bindHost: string, port: () => number | undefined): (header: string | undefined) => boolean {
  const bound = bindHost.replace(/^\[|\]$/g, "").toLowerCase();
  const wildcard = bound === "0.0.0.0" || bound === "::";
  return (header) => {
    if (header === undefined || header === "") return false;
    const { host, port: p } = splitHost(header);
    const ours = port();
    if (ours === undefined || (p !== "" ? p !== String(ours) : ours !== 80 && ours !== 443)) return false;
    if (host === bound) return true;
    if (isLoopback(bound) || wildcard) {
      if (isLoopback(host)) return true;
    }
    if (wildcard) return isIP(host) !== 0 || host === os.hostname().toLowerCase();
    return false;
  };
}
