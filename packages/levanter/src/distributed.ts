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
  /**
   * How long an `allGather` waits for the other ranks' values before failing with `DISTRIBUTED`
   * (naming the ranks still missing). Default 30 min: generous for a slow step, finite for a stuck peer.
   */
  gatherTimeoutMs?: number;
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

// JSON lines over a socket, with a queue so receives can await what comes next. Anything that is
// not a JSON object (a stray connection, a port scanner) fails the channel with a clear error and
// closes it, rather than throwing inside the socket's event handler.
class Channel {
  readonly socket: net.Socket;
  /** Who is on the other end, for errors ("rank 1", or the remote address before the hello). */
  peer: string;
  readonly #waiting: { resolve: (m: Msg) => void; reject: (e: Error) => void }[] = [];
  readonly #queue: Msg[] = [];
  #error: Error | undefined;

  constructor(socket: net.Socket, peer: string) {
    this.socket = socket;
    this.peer = peer;
    readline.createInterface({ input: socket }).on("line", (line) => {
      if (this.#error) return;
      let msg: Msg;
      try {
        msg = JSON.parse(line) as Msg;
        if (typeof msg !== "object" || msg === null || typeof msg.kind !== "string") throw new Error("not a message object");
      } catch (e) {
        this.fail(new LevanterError("DISTRIBUTED", `${this.peer} sent a line that is not a levanter message: ${JSON.stringify(line.slice(0, 80))}`, { cause: e }));
        socket.destroy();
        return;
      }
      const w = this.#waiting.shift();
      if (w) w.resolve(msg);
      else this.#queue.push(msg);
    });
    socket.on("error", (e) => this.fail(new LevanterError("DISTRIBUTED", `connection to ${this.peer} failed: ${e.message}`, { cause: e })));
    socket.on("close", () => this.fail(new LevanterError("DISTRIBUTED", `${this.peer} closed its connection`)));
  }

  fail(e: Error): void {
    this.#error ??= e;
    for (const w of this.#waiting.splice(0)) w.reject(this.#error);
  }

  send(msg: Msg): void {
    this.socket.write(`${JSON.stringify(msg)}\n`);
  }

  receive(): Promise<Msg> {
    const queued = this.#queue.shift();
    if (queued) return Promise.resolve(queued);
    if (this.#error) return Promise.reject(this.#error);
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }
}

// `what` is read when the timer fires, so it can say what is still missing at that moment.
function withTimeout<T>(p: Promise<T>, ms: number, what: string | (() => string)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LevanterError("DISTRIBUTED", `timed out after ${ms} ms ${typeof what === "string" ? what : what()}`)), ms);
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
  const gatherTimeoutMs = opts.gatherTimeoutMs ?? 30 * 60_000;
  const { taskIndex: rank, numTasks: world } = ctx;
  let round = 0;
  // After a failed or timed-out gather the rounds are out of step: every later gather fails too.
  let broken: Error | undefined;
  const guarded = async <T>(fn: () => Promise<T>): Promise<T> => {
    if (broken) throw broken;
    try {
      return await fn();
    } catch (e) {
      broken ??= e as Error;
      throw e;
    }
  };

  if (rank === 0) {
    let port = 0;
    try {
      port = ctx.getPort(opts.portName ?? "coordinator");
    } catch {
      // no named port requested: any free port
    }
    const server = net.createServer();
    const peers = new Map<number, Channel>();
    const allConnected = new Promise<void>((resolve) => {
      server.on("connection", (socket) => {
        const ch = new Channel(socket, `connection from ${socket.remoteAddress}:${socket.remotePort}`);
        // A connection that does not introduce itself as a missing rank is not one of ours (or a
        // duplicate): drop it and keep waiting, so a stray client cannot take down the gang.
        ch.receive().then(
          (m) => {
            if (m.kind !== "hello" || !Number.isInteger(m.rank) || m.rank <= 0 || m.rank >= world || peers.has(m.rank)) {
              log("warn", "ignoring a connection with an unexpected handshake", { peer: ch.peer, message: JSON.stringify(m).slice(0, 200) });
              socket.destroy();
              return;
            }
            ch.peer = `rank ${m.rank}`;
            peers.set(m.rank, ch);
            if (peers.size === world - 1) resolve();
          },
          (e: unknown) => log("warn", "ignoring a connection that failed before its handshake", { peer: ch.peer, error: String(e) }),
        );
      });
    });
    const missing = () => [...Array(world).keys()].filter((r) => r > 0 && !peers.has(r)).join(", ");
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "0.0.0.0", resolve);
    });
    const address = `${ctx.advertiseHost}:${(server.address() as net.AddressInfo).port}`;
    // Register first, then wait: the peers can only find us through this endpoint.
    const registration = await ctx.registry.register(endpointName, address, { world: String(world) });
    log("info", "coordinator registered, waiting for peers", { endpoint: endpointName, address, world });
    try {
      await withTimeout(allConnected, timeoutMs, () => `waiting for rank(s) ${missing()} to connect`);
    } catch (e) {
      server.close();
      await registration.unregister().catch(() => {});
      throw e;
    }
    return {
      rank,
      world,
      coordinatorAddress: address,
      allGather<T>(value: T): Promise<T[]> {
        return guarded(async () => {
          const r = round++;
          const values: unknown[] = [value];
          const pending = new Set(peers.keys());
          const received = [...peers].map(async ([p, ch]) => {
            const m = await ch.receive();
            if (m.kind !== "gather" || m.round !== r) throw new LevanterError("DISTRIBUTED", `rank ${p} sent ${m.kind} out of order`);
            values[p] = m.value;
            pending.delete(p);
          });
          await withTimeout(Promise.all(received), gatherTimeoutMs, () => `in allGather round ${r} waiting for rank(s) ${[...pending].sort((a, b) => a - b).join(", ")}`);
          for (const ch of peers.values()) ch.send({ kind: "result", round: r, values });
          return values as T[];
        });
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
      channel = new Channel(socket, `the coordinator (rank 0 at ${ep.address})`);
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
    allGather<T>(value: T): Promise<T[]> {
      return guarded(async () => {
        const r = round++;
        ch.send({ kind: "gather", round: r, rank, value });
        // Rank 0 answers once every rank has contributed: a silent rank 0 means a rank is missing.
        const m = await withTimeout(ch.receive(), gatherTimeoutMs, `in allGather round ${r} waiting for rank 0 (the coordinator) to send every rank's value`);
        if (m.kind !== "result" || m.round !== r) throw new LevanterError("DISTRIBUTED", `coordinator sent ${m.kind} out of order`);
        return m.values as T[];
      });
    },
    async close() {
      ch.socket.end();
    },
  };
}
