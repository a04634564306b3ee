// Allocating free loopback ports for an attempt's named ports.
import net from "node:net";

/**
 * Allocates one distinct free TCP port per requested name (a repeated name gets the same port),
 * chosen by the OS. Each port is held open until all are chosen, so two names never share one;
 * then all are released for the task to bind. Another process could take a port in between, but
 * the OS hands ports out round-robin, so the window is small — and it is what lets several workers
 * share one host without any flags.
 */
export async function allocatePorts(names: readonly string[]): Promise<Record<string, number>> {
  const servers: net.Server[] = [];
  try {
    const ports: Record<string, number> = {};
    for (const name of new Set(names)) {
      const server = net.createServer();
      servers.push(server);
      ports[name] = await new Promise<number>((resolve, reject) => {
        server.once("error", reject);
        server.listen({ port: 0, exclusive: true }, () => {
          const address = server.address();
          if (typeof address === "object" && address !== null) resolve(address.port);
          else reject(new Error("the OS returned no port"));
        });
      });
    }
    return ports;
  } finally {
    await Promise.all(
      servers.map((s) => new Promise<void>((resolve) => (s.listening ? s.close(() => resolve()) : resolve()))),
    );
  }
}
