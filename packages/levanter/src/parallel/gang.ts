// The gang: a full mesh of authenticated links between the ranks of one data-parallel job, with
// the start-up barrier, a mailbox of frames by (peer, kind, tag, sub), heartbeats, and the failure
// rule (a peer that closes, sends garbage or falls silent fails every pending and later receive).
//
// Forming: every rank listens on its advertised interface. Rank 0 registers its address (the
// coordinator endpoint) BEFORE it waits; the others find it, authenticate and send JOIN with their
// own address. When all have joined, rank 0 sends the ROSTER, and each rank r connects to the
// ranks 1..r-1 and accepts r+1..N-1. Any wait names the ranks still missing when it times out.
import net from "node:net";
import { Backoff, sleep } from "@marin/iris/toolkit";
import { LevanterError } from "../errors.ts";
import { log } from "../internal/log.ts";
import { acceptAuthenticated, connectAuthenticated, Kind, type Frame, Link } from "./wire.ts";

/** How a rank finds and announces the coordinator; iris endpoints in production. */
export interface Rendezvous {
  /** Rank 0: publishes the coordinator's `host:port`; returns how to withdraw it. */
  register(address: string): Promise<() => Promise<void>>;
  /** Other ranks: the coordinator's `host:port` (called again after a failed connection). */
  resolve(timeoutMs: number): Promise<string>;
}

/** Options of {@link formGang}. */
export interface GangOptions {
  rank: number;
  world: number;
  /** The gang attempt's shared secret (`IRIS_GANG_SECRET`); every link proves it holds it. */
  secret: string;
  /** Interface to listen on (the advertised host; never all interfaces). */
  host: string;
  /** Port to listen on; 0 for any free one. */
  port: number;
  rendezvous: Rendezvous;
  /** Start-up barrier: how long to wait for the other ranks. Default 300 s. */
  timeoutMs?: number;
  /** A peer silent for this long is failed as dead or hung. Default 10 s. */
  peerTimeoutMs?: number;
  /** Heartbeat period. Default 1 s. */
  heartbeatMs?: number;
  /**
   * Bytes of frames one peer may have waiting that nothing has asked for yet (frames sent ahead
   * of a collective, or stray ones); beyond it the gang fails `PEER_FAILED` naming the peer.
   * Default {@link DEFAULT_MAX_BUFFERED_BYTES}; trainLm raises it with the model's size.
   */
  maxBufferedBytes?: number;
}

/** Default per-peer bound on frames waiting unclaimed in a gang's mailbox (256 MiB). */
export const DEFAULT_MAX_BUFFERED_BYTES = 256 * 2 ** 20;
/** What each waiting frame counts beyond its payload (its header, record and key), so that a flood of empty frames is bounded too. */
export const FRAME_OVERHEAD_BYTES = 512;

interface Waiter {
  resolve: (f: Frame) => void;
  reject: (e: Error) => void;
}

/** A formed gang: send to and receive from any peer by (kind, tag, sub). */
export class Gang {
  readonly rank: number;
  readonly world: number;
  /** `host:port` this rank listened on (rank 0's is the coordinator's). */
  readonly address: string;
  readonly #links = new Map<number, Link>();
  readonly #mail = new Map<string, Frame[]>();
  readonly #waiters = new Map<string, Waiter>();
  readonly #gone = new Set<number>();
  #error: LevanterError | undefined;
  #timers: NodeJS.Timeout[] = [];
  #closed = false;
  #saidBye = false;
  /** Called when a peer says goodbye or the gang fails (close's barrier waits on it). */
  #onGone: () => void = () => {};
  /** `host:port` of rank 0, the coordinator. */
  coordinator = "";
  /** Sequence number of the next collective (every rank calls them in the same order). */
  seq = 0;
  /**
   * Per-peer bound on the bytes of frames waiting unclaimed (see {@link GangOptions.maxBufferedBytes});
   * may be raised once the size of the collectives is known.
   */
  maxBufferedBytes = DEFAULT_MAX_BUFFERED_BYTES;
  /** Bytes (payload plus {@link FRAME_OVERHEAD_BYTES} each) of the frames waiting from each peer. */
  readonly #buffered = new Map<number, number>();

  /** @internal built by {@link formGang}. */
  constructor(rank: number, world: number, address: string, links: Map<number, Link>, peerTimeoutMs: number, heartbeatMs: number, early: Frame[] = [], maxBufferedBytes?: number) {
    this.rank = rank;
    if (maxBufferedBytes !== undefined) this.maxBufferedBytes = maxBufferedBytes;
    this.world = world;
    this.address = address;
    for (const [r, link] of links) {
      this.#links.set(r, link);
      link.onHeader = (kind, tag, sub, length) => this.#admit(r, kind, tag, sub, length);
      link.onFrame = (f) => this.#deliver(r, f);
      link.onError = (e) => this.fail(e);
      link.socket.on("close", () => {
        if (this.#closed) return;
        if (this.#gone.has(r)) return this.#rejectFrom(r, new LevanterError("PEER_FAILED", `rank ${r} has left the gang`));
        this.fail(new LevanterError("PEER_FAILED", `rank ${r} closed its connection (its process died or was stopped)`));
      });
      link.resume();
    }
    // Frames rank 0 sent right after the roster, while this rank was still dialling the others.
    for (const f of early) this.#deliver(0, f);
    const hb = setInterval(() => {
      for (const l of this.#links.values()) l.send(Kind.HEARTBEAT, 0, 0);
    }, heartbeatMs);
    // A watchdog tick that comes late means this process was busy (a long synchronous step):
    // peers' bytes may be waiting unread, so that tick does not judge them.
    const tickMs = Math.max(50, Math.min(500, heartbeatMs / 2));
    let lastTick = performance.now();
    const watchdog = setInterval(() => {
      const now = performance.now();
      const late = now - lastTick > 2 * tickMs + 100;
      lastTick = now;
      for (const [r, l] of this.#links) {
        if (late) l.lastHeard = Math.max(l.lastHeard, now - tickMs);
        // While this rank waits for goodbyes, a peer's silence is no failure: it may be busy in a
        // long synchronous final evaluation or save (a dead peer's connection still closes).
        else if (!this.#gone.has(r) && !this.#saidBye && now - l.lastHeard > peerTimeoutMs) {
          this.fail(new LevanterError("PEER_FAILED", `rank ${r} sent nothing for ${Math.round(now - l.lastHeard)} ms (limit ${peerTimeoutMs} ms): dead or hung`));
        }
      }
    }, tickMs);
    hb.unref();
    watchdog.unref();
    this.#timers = [hb, watchdog];
  }

  /** The first failure of the gang, if any (every later operation throws it). */
  get error(): LevanterError | undefined {
    return this.#error;
  }

  /** Fails the gang: every pending and later receive rejects with `e`; the links close. */
  fail(e: Error): void {
    if (this.#error) return;
    this.#error = e instanceof LevanterError ? e : new LevanterError("DISTRIBUTED", e.message, { cause: e });
    log("error", "data-parallel gang failed", { rank: this.rank, error: this.#error.message });
    for (const w of this.#waiters.values()) w.reject(this.#error);
    this.#waiters.clear();
    this.#stop();
    for (const l of this.#links.values()) l.destroy();
    this.#onGone();
  }

  /** Sends one frame to `peer`. */
  send(peer: number, kind: number, tag: number, sub: number, payload?: Uint8Array): void {
    if (this.#error) throw this.#error;
    this.#links.get(peer)!.send(kind, tag, sub, payload);
  }

  /** The next frame of (kind, tag, sub) from `peer`, whenever it arrived or arrives. */
  receive(peer: number, kind: number, tag: number, sub: number): Promise<Frame> {
    if (this.#error) return Promise.reject(this.#error);
    const key = `${peer}/${kind}/${tag}/${sub}`;
    const queued = this.#mail.get(key);
    if (queued) {
      this.#mail.delete(key);
      this.#buffered.set(peer, (this.#buffered.get(peer) ?? 0) - queued[0]!.payload.byteLength - FRAME_OVERHEAD_BYTES);
      return Promise.resolve(queued[0]!);
    }
    if (this.#gone.has(peer)) return Promise.reject(new LevanterError("PEER_FAILED", `rank ${peer} has left the gang`));
    return new Promise((resolve, reject) => this.#waiters.set(key, { resolve, reject }));
  }

  /**
   * Says goodbye to every peer and closes the links (idempotent). With `waitForPeers` (the clean
   * end of a run) it first waits for every peer's goodbye too — a barrier: no rank closes its
   * links while another may still need it (a final save, a final evaluation, the last
   * collective), and nothing is sent after a goodbye, so the links end with nothing left unread
   * (no reset that could swallow the goodbye). It rejects with the gang's failure when a peer
   * fails or leaves uncleanly before saying goodbye, or when some peer has not said it within
   * `timeoutMs` (default 10 minutes; a silent peer is not failed while this rank waits, as it may
   * be busy in a long final evaluation or save). Without it (an error path) it just says
   * goodbye and closes: peers waiting on this rank fail at once with "has left the gang".
   */
  async close(opts: { waitForPeers?: boolean; timeoutMs?: number } = {}): Promise<void> {
    if (this.#closed) return;
    let failure: LevanterError | undefined;
    if (opts.waitForPeers && !this.#error) {
      // Heartbeats stop with the goodbye (a peer excuses a rank once it said goodbye); the
      // watchdog keeps judging the peers that have not said theirs yet.
      const [hb] = this.#timers;
      for (const l of this.#links.values()) l.send(Kind.BYE, 0, 0);
      this.#saidBye = true;
      if (hb) clearInterval(hb);
      const timeoutMs = opts.timeoutMs ?? 600_000;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          const missing = [...this.#links.keys()].filter((r) => !this.#gone.has(r));
          this.fail(new LevanterError("DISTRIBUTED", `rank(s) ${missing.join(", ")} did not say goodbye within ${timeoutMs} ms of rank ${this.rank}'s`));
        }, timeoutMs);
        const check = () => {
          if (this.#error || [...this.#links.keys()].every((r) => this.#gone.has(r))) {
            clearTimeout(timer);
            this.#onGone = () => {};
            resolve();
          }
        };
        this.#onGone = check;
        check();
      });
      failure = this.#error;
    }
    this.#closed = true;
    this.#stop();
    await Promise.all(
      [...this.#links.values()].map(
        (l) =>
          new Promise<void>((resolve) => {
            if (l.socket.destroyed) return resolve();
            if (!this.#saidBye) l.send(Kind.BYE, 0, 0);
            l.socket.end(() => resolve());
            setTimeout(() => {
              l.destroy();
              resolve();
            }, 1000).unref();
          }),
      ),
    );
    if (failure) throw failure;
  }

  #stop(): void {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
  }

  #rejectFrom(peer: number, e: Error): void {
    for (const [key, w] of this.#waiters) {
      if (key.startsWith(`${peer}/`)) {
        this.#waiters.delete(key);
        w.reject(e);
      }
    }
  }

  /** Bytes of frames from `peer` waiting unclaimed now. */
  bufferedFrom(peer: number): number {
    return this.#buffered.get(peer) ?? 0;
  }

  // A frame's header has arrived: one that nothing waits for yet would sit in the mailbox; if it
  // would take the peer past its bound, the gang fails before its payload is read.
  #admit(peer: number, kind: number, tag: number, sub: number, length: number): void {
    if (kind === Kind.HEARTBEAT || kind === Kind.BYE || this.#waiters.has(`${peer}/${kind}/${tag}/${sub}`)) return;
    const total = this.bufferedFrom(peer) + length + FRAME_OVERHEAD_BYTES;
    if (total > this.maxBufferedBytes) {
      this.fail(
        new LevanterError(
          "PEER_FAILED",
          `rank ${peer} sent more than ${this.maxBufferedBytes} bytes of frames that nothing asked for (${total} with this ${length}-byte one; maxBufferedBytes per peer): a broken or hostile peer`,
        ),
      );
    }
  }

  #deliver(peer: number, f: Frame): void {
    if (f.kind === Kind.HEARTBEAT) return;
    if (f.kind === Kind.BYE) {
      this.#gone.add(peer);
      this.#onGone();
      return;
    }
    if (f.kind === Kind.HELLO || f.kind === Kind.CHALLENGE || f.kind === Kind.PROOF || f.kind === Kind.JOIN || f.kind === Kind.ROSTER) {
      this.fail(new LevanterError("DISTRIBUTED", `rank ${peer} sent an unexpected frame (kind ${f.kind}) after the gang formed`));
      return;
    }
    const key = `${peer}/${f.kind}/${f.tag}/${f.sub}`;
    const w = this.#waiters.get(key);
    if (w) {
      this.#waiters.delete(key);
      w.resolve(f);
      return;
    }
    if (this.#mail.has(key)) {
      this.fail(new LevanterError("DISTRIBUTED", `rank ${peer} sent frame ${key} twice`));
      return;
    }
    this.#mail.set(key, [f]);
    this.#buffered.set(peer, this.bufferedFrom(peer) + f.payload.byteLength + FRAME_OVERHEAD_BYTES);
  }
}

function timeoutError(ms: number, what: string): LevanterError {
  return new LevanterError("DISTRIBUTED", `timed out after ${ms} ms ${what}`);
}

function missingOf(world: number, have: (r: number) => boolean, skip: (r: number) => boolean): string {
  return [...Array(world).keys()].filter((r) => !skip(r) && !have(r)).join(", ");
}

/**
 * Forms the gang (see the file comment): resolves once this rank holds an authenticated link to
 * every other rank. Fails with `DISTRIBUTED` naming the missing ranks when the barrier times out.
 */
export async function formGang(opts: GangOptions): Promise<Gang> {
  const { rank, world, secret } = opts;
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const hs = { secret, rank, world, timeoutMs: Math.min(timeoutMs, 10_000) };
  const deadline = Date.now() + timeoutMs;
  const links = new Map<number, Link>();
  const joined = new Map<number, string>();
  const early: Frame[] = [];
  let earlyOverflow = false;
  let onChange = () => {};
  const server = net.createServer((socket) => {
    acceptAuthenticated(socket, hs).then(
      (link) => {
        const r = link.peerRank;
        // Rank 0 accepts everyone; the others only the ranks above them (who dial down).
        if (links.has(r) || (rank !== 0 && r < rank)) {
          log("warn", "refusing a duplicate or unexpected rank", { rank, peer: r });
          link.destroy();
          return;
        }
        links.set(r, link);
        if (rank === 0) {
          // A joining rank's first frame is its JOIN (its listen address).
          link.onFrame = (f) => {
            if (f.kind !== Kind.JOIN) return link.destroy();
            joined.set(r, JSON.parse(f.payload.toString("utf8")) as string);
            onChange();
          };
          const drop = () => {
            links.delete(r);
            joined.delete(r);
          };
          link.onError = drop;
          link.socket.once("close", drop);
          link.resume();
        }
        onChange();
      },
      (e: unknown) => log("warn", "refused a connection that failed the gang handshake", { rank, error: String(e instanceof Error ? e.message : e) }),
    );
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, opts.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  try {
    await listen(opts.port);
  } catch (e) {
    // iris picks a free port and releases it for the task to bind; another socket on the host
    // (an outgoing connection takes its port from the same range) can take it in between. Every
    // rank announces the address it actually listens on, so any free port does as well.
    if (opts.port === 0 || (e as NodeJS.ErrnoException).code !== "EADDRINUSE") {
      throw new LevanterError("DISTRIBUTED", `rank ${rank} cannot listen on ${opts.host}:${opts.port}: ${(e as Error).message}`, { cause: e });
    }
    log("warn", "the gang's port is taken; listening on another", { rank, port: opts.port });
    try {
      await listen(0);
    } catch (e2) {
      throw new LevanterError("DISTRIBUTED", `rank ${rank} cannot listen on ${opts.host}: ${(e2 as Error).message}`, { cause: e2 });
    }
  }
  const address = `${opts.host}:${(server.address() as net.AddressInfo).port}`;
  const waitUntil = (cond: () => boolean, what: () => string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (cond()) {
          clearTimeout(timer);
          onChange = () => {};
          resolve();
        }
      };
      const timer = setTimeout(
        () => {
          onChange = () => {};
          reject(timeoutError(timeoutMs, what()));
        },
        Math.max(0, deadline - Date.now()),
      );
      onChange = check;
      check();
    });
  let unregister: (() => Promise<void>) | undefined;
  let coordinatorAddress = address;
  try {
    if (rank === 0) {
      unregister = await opts.rendezvous.register(address);
      log("info", "coordinator registered, waiting for peers", { rank, address, world });
      await waitUntil(
        () => joined.size === world - 1,
        () =>
          `waiting for rank(s) ${missingOf(
            world,
            (r) => joined.has(r),
            (r) => r === 0,
          )} to join the gang`,
      );
      const roster = JSON.stringify([address, ...[...Array(world - 1).keys()].map((i) => joined.get(i + 1)!)]);
      for (const link of links.values()) link.send(Kind.ROSTER, 0, 0, Buffer.from(roster));
    } else {
      // Reach the coordinator (retrying: it may not be up yet, or a previous attempt's rank 0 may
      // still be registered and refuse our secret).
      let coordinator: Link | undefined;
      const backoff = new Backoff({ initialMs: 100, maxMs: 2000 });
      while (!coordinator) {
        const left = deadline - Date.now();
        if (left <= 0) throw new LevanterError("DISTRIBUTED", `rank ${rank}: could not reach the coordinator (rank 0) within ${timeoutMs} ms`);
        try {
          coordinatorAddress = await opts.rendezvous.resolve(left);
          const link = await connectAuthenticated(coordinatorAddress, hs);
          if (link.peerRank !== 0) {
            link.destroy();
            throw new Error(`the coordinator endpoint answered as rank ${link.peerRank}`);
          }
          coordinator = link;
        } catch (e) {
          log("debug", "coordinator not reachable yet", { rank, error: String(e) });
          await sleep(Math.min(backoff.next(), Math.max(0, deadline - Date.now())));
        }
      }
      links.set(0, coordinator);
      const roster = await new Promise<string[]>((resolve, reject) => {
        const timer = setTimeout(() => reject(timeoutError(timeoutMs, `waiting for rank 0 to send the roster (some rank has not joined)`)), Math.max(0, deadline - Date.now()));
        coordinator.onFrame = (f) => {
          clearTimeout(timer);
          if (f.kind !== Kind.ROSTER) return reject(new LevanterError("DISTRIBUTED", `rank 0 sent kind ${f.kind} instead of the roster`));
          // Bounded like the mailbox: rank 0 may not flood a rank that is still dialling.
          let earlyBytes = 0;
          coordinator.onFrame = (g) => {
            earlyBytes += g.payload.byteLength + FRAME_OVERHEAD_BYTES;
            if (earlyBytes > (opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES)) {
              earlyOverflow = true;
              coordinator.destroy();
              return;
            }
            early.push(g);
          };
          resolve(JSON.parse(f.payload.toString("utf8")) as string[]);
        };
        coordinator.onError = (e) => reject(e);
        coordinator.socket.once("close", () => reject(new LevanterError("PEER_FAILED", "rank 0 closed its connection before the gang formed")));
        coordinator.send(Kind.JOIN, 0, 0, Buffer.from(JSON.stringify(address)));
        coordinator.resume();
      });
      for (let r = 1; r < rank; r++) {
        const link = await connectAuthenticated(roster[r]!, hs);
        if (link.peerRank !== r) {
          link.destroy();
          throw new LevanterError("DISTRIBUTED", `rank ${rank}: the roster's address of rank ${r} answered as rank ${link.peerRank}`);
        }
        links.set(r, link);
      }
      await waitUntil(
        () => [...Array(world).keys()].every((r) => r === rank || links.has(r)),
        () =>
          `waiting for rank(s) ${missingOf(
            world,
            (r) => links.has(r),
            (r) => r === rank,
          )} to connect`,
      );
      if (earlyOverflow)
        throw new LevanterError(
          "PEER_FAILED",
          `rank 0 sent more than ${opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES} bytes of frames while rank ${rank} was still joining the gang`,
        );
    }
  } catch (e) {
    for (const l of links.values()) l.destroy();
    await unregister?.().catch(() => {});
    throw e;
  } finally {
    server.close();
  }
  log("info", "data-parallel gang formed", { rank, world, address });
  const gang = new Gang(rank, world, address, links, opts.peerTimeoutMs ?? 10_000, opts.heartbeatMs ?? 1000, early, opts.maxBufferedBytes);
  gang.coordinator = coordinatorAddress;
  const withdraw = unregister;
  if (withdraw) {
    const close = gang.close.bind(gang);
    gang.close = async (o) => {
      try {
        await close(o);
      } finally {
        await withdraw().catch(() => {});
      }
    };
  }
  return gang;
}
