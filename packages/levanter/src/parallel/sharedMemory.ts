// Same-host shared memory for the exact all-reduce: ranks on one machine exchange gradient buckets
// through mapped /dev/shm files instead of pushing their bytes through loopback TCP, which moves
// only ~0.3–1 GB/s here. The TCP links stay the control channel (and carry everything for peers on
// other hosts): a bucket's "it is in my region" notice, heartbeats, failures.
//
// Negotiation is a collective (every rank calls {@link ensureShared} with the same length at the
// same point). Each rank creates its region — `/dev/shm/levanter-dp-<random>`, created exclusively
// with mode 0600 and its pages reserved up front — writes a fresh random nonce at its start, and
// offers its name to every peer over the authenticated link. A peer that can map the file answers
// with the nonce it read there, which proves it mapped this very file (the same host and /dev/shm),
// not a namesake. A pair uses shared memory only when both mapped each other's region; otherwise
// TCP. The files are unlinked as soon as the answers are in: a crash after that leaves nothing behind.
// Without the native addon, with LEVANTER_DP_SHM=off, or without /dev/shm, a rank offers nothing.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { LevanterError } from "../errors.ts";
import { loadNativeAddon } from "../kernels/native/addon.ts";
import { log } from "../internal/log.ts";
import type { Gang } from "./gang.ts";
import { Kind } from "./wire.ts";

interface ShmAddon {
  shmCreate(name: string, bytes: number): ArrayBuffer;
  shmOpen(name: string): ArrayBuffer;
  shmUnlink(name: string): boolean;
}

/** Bytes before the data: the nonce (32 bytes) and padding to keep the data 8-byte aligned. */
const HEADER = 64;

/**
 * Byte offsets in a region of a gradient of `length` elements: the contribution area (float32 raw
 * gradients or float64 fixed-point sums) and the result area (float32 means).
 */
export function sharedLayout(length: number): { contribution: number; result: number; bytes: number } {
  return { contribution: HEADER, result: HEADER + 8 * length, bytes: HEADER + 12 * length };
}

/** A gang's shared regions for gradients of up to `length` elements. */
export interface SharedRegions {
  length: number;
  /** This rank's region (undefined when it could not offer one). */
  own: ArrayBuffer | undefined;
  /** Peers reached through shared memory, both ways mapped: their regions by rank. */
  peers: Map<number, ArrayBuffer>;
}

const negotiated = new WeakMap<Gang, SharedRegions>();

function shmAddon(): ShmAddon | undefined {
  if (process.env.LEVANTER_DP_SHM?.trim() === "off" || !existsSync("/dev/shm")) return undefined;
  const load = loadNativeAddon();
  return load.ok && typeof load.addon.shmCreate === "function" ? (load.addon as unknown as ShmAddon) : undefined;
}

/** Test hook: what a rank offers its peers (a name that does not exist simulates another host). */
export const shmTesting = { offerName: undefined as ((name: string) => string) | undefined };

/**
 * The gang's shared regions for gradients of `length` elements, negotiated on first use (and
 * again when a longer gradient comes). A collective: every rank calls it with the same `length`.
 */
export async function ensureShared(gang: Gang, length: number): Promise<SharedRegions> {
  const have = negotiated.get(gang);
  if (have && have.length >= length) return have;
  const tag = gang.seq++;
  const peers = [...Array(gang.world).keys()].filter((r) => r !== gang.rank);
  const addon = shmAddon();
  const layout = sharedLayout(length);
  let own: ArrayBuffer | undefined;
  let name: string | undefined;
  const nonce = randomBytes(32);
  if (addon) {
    name = `levanter-dp-${randomBytes(12).toString("hex")}`;
    try {
      own = addon.shmCreate(name, layout.bytes);
      new Uint8Array(own, 0, 32).set(nonce);
    } catch (e) {
      log("info", "data-parallel: no shared memory region, using TCP", { rank: gang.rank, reason: (e as Error).message });
      own = undefined;
      name = undefined;
    }
  }
  const offered = name && shmTesting.offerName ? shmTesting.offerName(name) : name;
  const json = (v: unknown) => Buffer.from(JSON.stringify(v));
  const parse = <T>(peer: number, what: string, bytes: Buffer): T => {
    try {
      return JSON.parse(bytes.toString("utf8")) as T;
    } catch (e) {
      const err = new LevanterError("DISTRIBUTED", `rank ${peer} sent a shared-memory ${what} that is not JSON`, { cause: e });
      gang.fail(err);
      throw err;
    }
  };
  try {
    for (const p of peers) gang.send(p, Kind.SHM_OFFER, tag, 0, json({ name: offered ?? null, bytes: layout.bytes }));
    // Map every peer's offered region and answer with the nonce found there.
    const theirs = new Map<number, ArrayBuffer>();
    await Promise.all(
      peers.map(async (p) => {
        const offer = parse<{ name: string | null; bytes: number }>(p, "offer", (await gang.receive(p, Kind.SHM_OFFER, tag, 0)).payload);
        let reply: { ok: boolean; nonce?: string } = { ok: false };
        if (addon && typeof offer.name === "string" && /^levanter-dp-[0-9a-f]+$/.test(offer.name)) {
          try {
            const region = addon.shmOpen(offer.name);
            if (region.byteLength >= layout.bytes) {
              theirs.set(p, region);
              reply = { ok: true, nonce: Buffer.from(region, 0, 32).toString("hex") };
            }
          } catch {
            // Not on this host (or not readable): TCP with this peer.
          }
        }
        gang.send(p, Kind.SHM_REPLY, tag, 0, json(reply));
      }),
    );
    const mapped = new Map<number, ArrayBuffer>();
    await Promise.all(
      peers.map(async (p) => {
        const reply = parse<{ ok: boolean; nonce?: string }>(p, "reply", (await gang.receive(p, Kind.SHM_REPLY, tag, 0)).payload);
        const mine = own !== undefined && reply.ok === true && reply.nonce === nonce.toString("hex");
        const region = theirs.get(p);
        if (mine && region) mapped.set(p, region);
      }),
    );
    const regions: SharedRegions = { length, own: mapped.size > 0 ? own : undefined, peers: mapped };
    negotiated.set(gang, regions);
    log("info", "data-parallel transport", { rank: gang.rank, sharedMemory: [...mapped.keys()], tcp: peers.filter((p) => !mapped.has(p)) });
    return regions;
  } finally {
    if (name) addon?.shmUnlink(name);
  }
}
