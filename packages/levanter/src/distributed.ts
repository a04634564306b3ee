// The coordinator handshake of a data-parallel gang on iris. Rank 0 listens and registers its
// address as an iris endpoint BEFORE it waits for the others (registering after would deadlock
// a gang whose peers resolve first); the other ranks resolve it with backoff and connect. The
// channel carries JSON messages; allGather is the primitive gradient averaging will build on.
import { getIrisCtx } from "@marin/iris";
import net from "node:net";
import readline from "node:readline";
import { LevanterError } from "./errors.ts";
import { log } from "./internal/log.ts";

/** Options of {@link initializeDistributed}. */
export interface DistributedOptions {
  /** Endpoint name of the coordinator (scoped to the job). Default `levanter_coordinator`. */
  endpointName?: string;
  /** Named iris port rank 0 listens on if the job requested it (else any free port). Default `coordinator`. */
  portName?: string;
  /** How long rank 0 waits for every peer, and peers wait for rank 0. Default 300 s (gang restarts can be slow). */
  timeoutMs?: number;
}

/** This process's place in the gang, and a channel to the others. */
export interface Distributed {
  rank: number;
  world: number;
  /** `host:port` of the coordinator (rank 0); undefined when running alone. */
  coordinatorAddress: string | undefined;
  /** Every rank contributes `value`; every rank gets all values, by rank. */
  allGather<T>(value: T): Promise<T[]>;
  /** Closes the channel (and rank 0's endpoint registration). */
  close(): Promise<void>;
}

type Msg = { kind: "hello"; rank: number } | { kind: "gather"; round: number; rank: number; value: unknown } | { kind: "result"; round: number; values: unknown[] };

// JSON lines over a socket, with a queue per message kind so receives can await what comes next.
class Channel {
  readonly socket: net.Socket;
  readonly #waiting: ((m: Msg) => void)[] = [];
  readonly #queue: Msg[] = [];
  #error: Error | undefined;
  readonly #failures: ((e: Error) => void)[] = [];

  constructor(socket: net.Socket) {
    this.socket = socket;
    readline.createInterface({ input: socket }).on("line", (line) => {
      const msg = JSON.parse(line) as Msg;
      const w = this.#waiting.shift();
      if (w) w(msg);
      else this.#queue.push(msg);
    });
    const fail = (e: Error) => {
      this.#error ??= e;
      for (const f of this.#failures.splice(0)) f(this.#error);
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new LevanterError("DISTRIBUTED", "a peer closed its connection")));
  }

  send(msg: Msg): void {
    this.socket.write(`${JSON.stringify(msg)}\n`);
  }

  receive(): Promise<Msg> {
    const queued = this.#queue.shift();
    if (queued) return Promise.resolve(queued);
    if (this.#error) return Promise.reject(this.#error);
    return new Promise((resolve, reject) => {
      this.#waiting.push(resolve);
      this.#failures.push(reject);
    });
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LevanterError("DISTRIBUTED", `timed out after ${ms} ms ${what}`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/**
 * Joins the data-parallel gang of the current iris job: alone (rank 0 of 1) outside iris or in a
 * one-task job; otherwise rank 0 listens, registers the coordinator endpoint, then waits for
 * every peer, and the other ranks resolve it (with backoff) and connect. A rank that fails throws
 * `DISTRIBUTED`, so the task exits at once and iris fails the gang.
 *
 * @example
 * const dist = await initializeDistributed();
 * const all = await dist.allGather({ rank: dist.rank, loss });
 */
export async function initializeDistributed(opts: DistributedOptions = {}): Promise<Distributed> {
  const ctx = getIrisCtx();
  if (!ctx || ctx.numTasks <= 1) {
    return { rank: 0, world: 1, coordinatorAddress: undefined, allGather: async (v) => [v], close: async () => {} };
  }
  const endpointName = opts.endpointName ?? "levanter_coordinator";
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const { taskIndex: rank, numTasks: world } = ctx;
  let round = 0;

  if (rank === 0) {
    let port = 0;
    try {
      port = ctx.getPort(opts.portName ?? "coordinator");
    } catch {
      // no named port requested: any free port
    }
    const server = net.createServer();
    const peers = new Map<number, Channel>();
    const allConnected = new Promise<void>((resolve, reject) => {
      server.on("connection", (socket) => {
        const ch = new Channel(socket);
        ch.receive().then((m) => {
          if (m.kind !== "hello" || m.rank <= 0 || m.rank >= world || peers.has(m.rank)) {
            reject(new LevanterError("DISTRIBUTED", `unexpected handshake ${JSON.stringify(m)}`));
            return;
          }
          peers.set(m.rank, ch);
          if (peers.size === world - 1) resolve();
        }, reject);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "0.0.0.0", resolve);
    });
    const address = `${ctx.advertiseHost}:${(server.address() as net.AddressInfo).port}`;
    // Register first, then wait: the peers can only find us through this endpoint.
    const registration = await ctx.registry.register(endpointName, address, { world: String(world) });
    log("info", "coordinator registered, waiting for peers", { endpoint: endpointName, address, world });
    try {
      await withTimeout(allConnected, timeoutMs, `waiting for ${world - 1} peer(s) to connect`);
    } catch (e) {
      server.close();
      await registration.unregister().catch(() => {});
      throw e;
    }
    return {
      rank,
      world,
      coordinatorAddress: address,
      async allGather<T>(value: T): Promise<T[]> {
        const r = round++;
        const values: unknown[] = [value];
        for (let p = 1; p < world; p++) {
          const m = await peers.get(p)!.receive();
          if (m.kind !== "gather" || m.round !== r) throw new LevanterError("DISTRIBUTED", `rank ${p} sent ${m.kind} out of order`);
          values[p] = m.value;
        }
        for (const ch of peers.values()) ch.send({ kind: "result", round: r, values });
        return values as T[];
      },
      async close() {
        for (const ch of peers.values()) ch.socket.end();
        server.close();
        await registration.unregister().catch(() => {});
      },
    };
  }

  // Other ranks: resolve the coordinator (iris' resolver waits with backoff), then connect,
  // retrying a refused connection (rank 0 of a previous gang attempt may still be registered).
  const deadline = Date.now() + timeoutMs;
  let channel: Channel | undefined;
  let coordinatorAddress = "";
  for (let delay = 100; !channel; delay = Math.min(delay * 2, 2000)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new LevanterError("DISTRIBUTED", `rank ${rank}: could not reach the coordinator within ${timeoutMs} ms`);
    try {
      const ep = await ctx.resolver.resolve(endpointName, { timeoutMs: left });
      coordinatorAddress = ep.address;
      const i = ep.address.lastIndexOf(":");
      const socket = await new Promise<net.Socket>((resolve, reject) => {
        const s = net.connect(Number(ep.address.slice(i + 1)), ep.address.slice(0, i), () => resolve(s));
        s.once("error", reject);
      });
      channel = new Channel(socket);
    } catch (e) {
      log("debug", "coordinator not reachable yet", { rank, error: String(e) });
      await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(0, deadline - Date.now()))));
    }
  }
  channel.send({ kind: "hello", rank });
  const ch = channel;
  return {
    rank,
    world,
    coordinatorAddress,
    async allGather<T>(value: T): Promise<T[]> {
      const r = round++;
      ch.send({ kind: "gather", round: r, rank, value });
      const m = await ch.receive();
      if (m.kind !== "result" || m.round !== r) throw new LevanterError("DISTRIBUTED", `coordinator sent ${m.kind} out of order`);
      return m.values as T[];
    },
    async close() {
      ch.socket.end();
    },
  };
}
