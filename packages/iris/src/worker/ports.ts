// Allocating free ports for an attempt's named ports.
import { readFileSync } from "node:fs";
import net from "node:net";

/**
 * Ports to choose from: just below the OS's ephemeral range (Linux:
 * /proc/sys/net/ipv4/ip_local_port_range), which outgoing connections and `listen(0)` draw from —
 * so between iris choosing a port and the task binding it, no other socket of the host takes it
 * by chance. Undefined where the range cannot be read: then the OS picks (port 0).
 */
export function portWindow(rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"): { lo: number; hi: number } | undefined {
  try {
    const [start] = readFileSync(rangeFile, "utf8").trim().split(/\s+/).map(Number);
    if (!Number.isInteger(start) || start! <= 2048) return undefined;
    return { lo: Math.max(1024, start! - 12_000), hi: start! };
  } catch {
    return undefined;
  }
}

function listen(server: net.Server, port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException) => (e.code === "EADDRINUSE" || e.code === "EACCES" ? resolve(undefined) : reject(e));
    server.once("error", onError);
    server.listen({ port, exclusive: true }, () => {
      server.off("error", onError);
      const address = server.address();
      if (typeof address === "object" && address !== null) resolve(address.port);
      else reject(new Error("the OS returned no port"));
    });
  });
}

/**
 * Allocates one distinct free TCP port per requested name (a repeated name gets the same port):
 * a random free one from {@link portWindow}, else one the OS picks. Each port is held open until
 * all are chosen, so two names never share one; then all are released for the task to bind.
 * Another process could still bind one in between on purpose, but nothing takes it by chance, and
 * several workers share one host without any flags.
 */
export async function allocatePorts(names: readonly string[], window = portWindow()): Promise<Record<string, number>> {
  const servers: net.Server[] = [];
  try {
    const ports: Record<string, number> = {};
    for (const name of new Set(names)) {
      const server = net.createServer();
      servers.push(server);
      let port: number | undefined;
      for (let attempt = 0; window && port === undefined && attempt < 64; attempt++) {
        port = await listen(server, window.lo + Math.floor(Math.random() * (window.hi - window.lo)));
      }
      port ??= await listen(server, 0);
      if (port === undefined) throw new Error("no free port");
      ports[name] = port;
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => (s.listening ? s.close(() => resolve()) : resolve()))));
  }
}
