// The local balancing proxy of a multi-replica inference session: each request goes to the replica
// with the fewest outstanding requests (ties: round robin), streamed both ways (SSE included).
import http from "node:http";
import type { AddressInfo } from "node:net";

/** A running balancer. */
export interface Balancer {
  /** `http://127.0.0.1:PORT` (no trailing slash). */
  readonly url: string;
  /** Requests in flight per replica (same order as the targets). */
  outstanding(): readonly number[];
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host"]);

/** Picks the index with the fewest outstanding requests; ties go to the first at or after `start`. */
export function leastOutstanding(counts: readonly number[], start: number): number {
  let best = -1;
  for (let k = 0; k < counts.length; k++) {
    const i = (start + k) % counts.length;
    if (best < 0 || counts[i]! < counts[best]!) best = i;
  }
  return best;
}

/** Starts a balancer on 127.0.0.1 over `targets` (`http://host:port` each). */
export async function startBalancer(targets: readonly string[]): Promise<Balancer> {
  const urls = targets.map((t) => new URL(t));
  const counts = targets.map(() => 0);
  let rr = 0;
  const server = http.createServer((req, res) => {
    const i = leastOutstanding(counts, rr++ % urls.length);
    const target = urls[i]!;
    counts[i]!++;
    let released = false;
    const release = (): void => {
      if (!released) {
        released = true;
        counts[i]!--;
      }
    };
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
    const up = http.request({ hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (r) => {
      const out: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(r.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) out[k] = v;
      res.writeHead(r.statusCode ?? 502, out);
      res.flushHeaders();
      r.on("data", (chunk: Buffer) => res.write(chunk));
      r.on("end", () => {
        release();
        res.end();
      });
      r.on("error", () => res.destroy());
    });
    up.on("error", (e) => {
      release();
      if (!res.headersSent) {
        res.writeHead(502, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `replica ${target.origin}: ${e.message}`, type: "bad_gateway", param: null, code: null } }));
      } else res.destroy();
    });
    res.on("close", () => {
      release();
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    outstanding: () => [...counts],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
