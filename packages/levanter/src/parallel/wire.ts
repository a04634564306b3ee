// The rank-to-rank wire: length-prefixed frames over TCP, and the mutual HMAC handshake that
// admits only holders of the gang's secret.
//
// A frame is a 16-byte header (u32 payload length, u8 kind, 3 bytes zero, u32 tag, u32 sub; little
// endian) and its payload. Before the handshake only HELLO/CHALLENGE/PROOF frames of at most 256
// bytes are accepted; anything else closes the connection before a single byte of it is used.
// Handshake (connector C, acceptor A, secret K, fresh 32-byte nonces):
//   C → A  HELLO     "LVDP" version rank_C nonce_C
//   A → C  CHALLENGE rank_A nonce_A HMAC(K, "A" nonce_C nonce_A rank_A rank_C)
//   C → A  PROOF     HMAC(K, "C" nonce_A nonce_C rank_C rank_A)
// Each side proves it holds K without sending it, and both MACs bind both nonces, so neither a
// replayed handshake nor a reflected one passes.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import net from "node:net";
import { LevanterError } from "../errors.ts";

/** Frame kinds of the wire protocol. */
export const Kind = {
  HELLO: 1,
  CHALLENGE: 2,
  PROOF: 3,
  /** A joining rank's listen address, sent to rank 0 (JSON). */
  JOIN: 4,
  /** Every rank's listen address, from rank 0 (JSON). */
  ROSTER: 5,
  HEARTBEAT: 6,
  /** Reduce-scatter payload: fixed-point partial sums (float64). */
  REDUCE: 7,
  /** All-gather payload (float32 results, or an all-gather's bytes). */
  GATHER: 8,
  /** A clean goodbye before closing. */
  BYE: 9,
  /** A same-host shared-memory region offered to a peer (JSON: its /dev/shm name and size). */
  SHM_OFFER: 10,
  /** The answer to an offer (JSON: whether it mapped, and the nonce it read there). */
  SHM_REPLY: 11,
  /** "My reduce-scatter contribution for this bucket is in my shared region" (no payload). */
  REDUCE_SHM: 12,
  /** "This bucket's mean is in my shared region" (no payload). */
  GATHER_SHM: 13,
} as const;

/** One decoded frame. */
export interface Frame {
  kind: number;
  tag: number;
  sub: number;
  payload: Buffer;
}

const HEADER = 16;
const MAGIC = Buffer.from("LVDP");
const VERSION = 1;
/** Largest payload an authenticated peer may send in one frame. */
export const MAX_FRAME_BYTES = 512 * 2 ** 20;
const MAX_PREAUTH_BYTES = 256;
const KIND_NAMES = Object.fromEntries(Object.entries(Kind).map(([k, v]) => [v, k])) as Record<number, string>;

/** A framed connection to one peer. */
export class Link {
  readonly socket: net.Socket;
  /** Who is on the other end, for errors. */
  label: string;
  /** The peer's rank once authenticated. */
  peerRank = -1;
  authenticated = false;
  /** `performance.now()` of the last bytes received (any bytes: a long frame in flight counts). */
  lastHeard = performance.now();
  onFrame: (f: Frame) => void = () => {};
  onError: (e: Error) => void = () => {};
  /**
   * Once authenticated: called with each frame's header before its payload is allocated or read;
   * it may stop the link (the gang's mailbox bound does, through {@link destroy}).
   */
  onHeader: (kind: number, tag: number, sub: number, length: number) => void = () => {};
  #header = Buffer.alloc(HEADER);
  #headerFill = 0;
  #payload: Buffer | undefined;
  #payloadFill = 0;
  #current: Omit<Frame, "payload"> | undefined;
  #dead = false;
  #held = false;
  #stash: Buffer[] = [];

  constructor(socket: net.Socket, label: string) {
    this.socket = socket;
    this.label = label;
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
  }

  /**
   * Before authentication, parsing stops after each frame (the rest stays buffered) until the
   * handshake asks for the next one, so that no byte after a handshake frame is read under the
   * wrong rules. Called once authenticated, it releases everything buffered.
   */
  resume(): void {
    this.#held = false;
    const stash = this.#stash.splice(0);
    for (const c of stash) this.#onData(c, true);
    if (!this.#held) this.socket.resume();
  }

  /** Sends one frame. */
  send(kind: number, tag: number, sub: number, payload: Uint8Array = new Uint8Array(0)): void {
    if (this.#dead) return;
    const h = Buffer.alloc(HEADER);
    h.writeUInt32LE(payload.byteLength, 0);
    h.writeUInt8(kind, 4);
    h.writeUInt32LE(tag >>> 0, 8);
    h.writeUInt32LE(sub >>> 0, 12);
    this.socket.cork();
    this.socket.write(h);
    if (payload.byteLength > 0) this.socket.write(payload);
    this.socket.uncork();
  }

  /** Stops reading and closes the socket (no more frames are delivered). */
  destroy(): void {
    this.#dead = true;
    this.socket.destroy();
  }

  #fail(message: string): void {
    if (this.#dead) return;
    this.#dead = true;
    this.onError(new LevanterError("DISTRIBUTED", `${this.label} ${message}`));
    this.socket.destroy();
  }

  #onData(chunk: Buffer, replay = false): void {
    if (!replay) this.lastHeard = performance.now();
    if (this.#held) {
      this.#stash.push(chunk);
      return;
    }
    let at = 0;
    while (at < chunk.length && !this.#dead) {
      if (this.#held) {
        this.#stash.push(chunk.subarray(at));
        return;
      }
      if (this.#payload === undefined) {
        const n = Math.min(HEADER - this.#headerFill, chunk.length - at);
        chunk.copy(this.#header, this.#headerFill, at, at + n);
        this.#headerFill += n;
        at += n;
        if (this.#headerFill < HEADER) return;
        this.#headerFill = 0;
        const length = this.#header.readUInt32LE(0);
        const kind = this.#header.readUInt8(4);
        const limit = this.authenticated ? MAX_FRAME_BYTES : MAX_PREAUTH_BYTES;
        if (KIND_NAMES[kind] === undefined || this.#header.readUInt8(5) !== 0 || this.#header.readUInt16LE(6) !== 0) {
          this.#fail(`sent a malformed frame (kind ${kind}): not the levanter data-parallel protocol`);
          return;
        }
        if (!this.authenticated && kind > Kind.PROOF) {
          this.#fail(`sent a ${KIND_NAMES[kind]} frame before authenticating`);
          return;
        }
        if (length > limit) {
          this.#fail(`sent a ${KIND_NAMES[kind]} frame of ${length} bytes, above the limit of ${limit}`);
          return;
        }
        this.#current = { kind, tag: this.#header.readUInt32LE(8), sub: this.#header.readUInt32LE(12) };
        if (this.authenticated) {
          this.onHeader(kind, this.#current.tag, this.#current.sub, length);
          if (this.#dead) return;
        }
        // Its own ArrayBuffer at offset 0: aligned for Float64Array views.
        this.#payload = Buffer.from(new ArrayBuffer(length));
        this.#payloadFill = 0;
      }
      const n = Math.min(this.#payload.length - this.#payloadFill, chunk.length - at);
      chunk.copy(this.#payload, this.#payloadFill, at, at + n);
      this.#payloadFill += n;
      at += n;
      if (this.#payloadFill === this.#payload.length) {
        const frame = { ...this.#current!, payload: this.#payload };
        this.#payload = undefined;
        if (!this.authenticated) {
          this.#held = true;
          this.socket.pause();
        }
        this.onFrame(frame);
      }
    }
  }
}

function mac(secret: string, role: "A" | "C", first: Buffer, second: Buffer, rankA: number, rankB: number): Buffer {
  const ranks = Buffer.alloc(8);
  ranks.writeUInt32LE(rankA, 0);
  ranks.writeUInt32LE(rankB, 4);
  return createHmac("sha256", secret).update(role).update(first).update(second).update(ranks).digest();
}

function nextFrame(link: Link, timeoutMs: number, what: string): Promise<Frame> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new LevanterError("DISTRIBUTED", `${link.label}: no ${what} within ${timeoutMs} ms`)), timeoutMs);
    const onClose = () => done(new LevanterError("DISTRIBUTED", `${link.label} closed the connection during the handshake`));
    const done = (e: Error | undefined, f?: Frame) => {
      clearTimeout(timer);
      link.socket.off("close", onClose);
      link.onFrame = () => {};
      link.onError = () => {};
      if (e) reject(e);
      else resolve(f!);
    };
    link.socket.once("close", onClose);
    link.onFrame = (f) => done(undefined, f);
    link.onError = (e) => done(e);
    link.resume();
  });
}

/** Options of the handshake. */
export interface HandshakeOptions {
  secret: string;
  rank: number;
  world: number;
  timeoutMs: number;
}

/**
 * Connects to `address` (`host:port`) and authenticates as `rank`; resolves with the
 * authenticated link, whose `peerRank` is the acceptor's rank. Rejects (and closes) when the
 * other side does not prove it holds the secret.
 */
export async function connectAuthenticated(address: string, opts: HandshakeOptions): Promise<Link> {
  const i = address.lastIndexOf(":");
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect(Number(address.slice(i + 1)), address.slice(0, i), () => {
      s.off("error", reject);
      resolve(s);
    });
    s.once("error", reject);
  });
  const link = new Link(socket, `the peer at ${address}`);
  socket.on("error", () => {}); // reported through "close"
  try {
    const nonceC = randomBytes(32);
    const hello = Buffer.alloc(4 + 4 + 4 + 32);
    MAGIC.copy(hello, 0);
    hello.writeUInt32LE(VERSION, 4);
    hello.writeUInt32LE(opts.rank, 8);
    nonceC.copy(hello, 12);
    link.send(Kind.HELLO, 0, 0, hello);
    const ch = await nextFrame(link, opts.timeoutMs, "handshake challenge");
    if (ch.kind !== Kind.CHALLENGE || ch.payload.length !== 4 + 32 + 32) throw new LevanterError("DISTRIBUTED", `${link.label} answered the handshake with a malformed challenge`);
    const rankA = ch.payload.readUInt32LE(0);
    const nonceA = ch.payload.subarray(4, 36);
    const expected = mac(opts.secret, "A", nonceC, nonceA, rankA, opts.rank);
    if (rankA >= opts.world || !timingSafeEqual(expected, ch.payload.subarray(36))) {
      throw new LevanterError("DISTRIBUTED", `${link.label} did not prove it holds this gang attempt's secret (another job, or a previous attempt of this one)`);
    }
    link.send(Kind.PROOF, 0, 0, mac(opts.secret, "C", nonceA, nonceC, opts.rank, rankA));
    link.peerRank = rankA;
    link.authenticated = true;
    link.label = `rank ${rankA}`;
    return link;
  } catch (e) {
    link.destroy();
    throw e;
  }
}

/**
 * Runs the acceptor's side of the handshake on an incoming connection; resolves with the link
 * once the connector proved it holds the secret. A connection that fails closes without having
 * been able to deliver anything.
 */
export async function acceptAuthenticated(socket: net.Socket, opts: HandshakeOptions): Promise<Link> {
  const link = new Link(socket, `connection from ${socket.remoteAddress}:${socket.remotePort}`);
  socket.on("error", () => {});
  try {
    const hello = await nextFrame(link, opts.timeoutMs, "handshake hello");
    const p = hello.payload;
    if (hello.kind !== Kind.HELLO || p.length !== 44 || !p.subarray(0, 4).equals(MAGIC))
      throw new LevanterError("DISTRIBUTED", `${link.label} did not open with a levanter handshake`);
    if (p.readUInt32LE(4) !== VERSION) throw new LevanterError("DISTRIBUTED", `${link.label} speaks protocol version ${p.readUInt32LE(4)}, not ${VERSION}`);
    const rankC = p.readUInt32LE(8);
    if (rankC >= opts.world || rankC === opts.rank) throw new LevanterError("DISTRIBUTED", `${link.label} claims rank ${rankC} (world ${opts.world})`);
    const nonceC = Buffer.from(p.subarray(12, 44));
    const nonceA = randomBytes(32);
    const challenge = Buffer.alloc(4 + 32 + 32);
    challenge.writeUInt32LE(opts.rank, 0);
    nonceA.copy(challenge, 4);
    mac(opts.secret, "A", nonceC, nonceA, opts.rank, rankC).copy(challenge, 36);
    link.send(Kind.CHALLENGE, 0, 0, challenge);
    const proof = await nextFrame(link, opts.timeoutMs, "handshake proof");
    if (proof.kind !== Kind.PROOF || proof.payload.length !== 32 || !timingSafeEqual(proof.payload, mac(opts.secret, "C", nonceA, nonceC, rankC, opts.rank))) {
      throw new LevanterError("DISTRIBUTED", `${link.label} (claiming rank ${rankC}) did not prove it holds this gang attempt's secret`);
    }
    link.peerRank = rankC;
    link.authenticated = true;
    link.label = `rank ${rankC}`;
    return link;
  } catch (e) {
    link.destroy();
    throw e;
  }
}
