// Step leases: exclusive `lease-N.json` files with fencing tokens, renewal, expiry and dead-holder takeover.
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { MarinError } from "../errors.ts";
import type { Clock } from "./clock.ts";
import { writeFileAtomic } from "@marin/iris/toolkit";
import { META_WRITE, readJson } from "./stepFiles.ts";

/** One holder's claim on a step, stored as `<dir>/lease-<token>.json`. */
export interface LeaseRecord {
  owner: string;
  /** Monotonic fencing token: each takeover creates the next one, exclusively. */
  token: number;
  expiresAt: number;
  host: string;
  pid: number;
  released?: boolean;
}

/** Lease timing. */
export interface LeaseOptions {
  clock: Clock;
  /** How long a lease lives without renewal. */
  ttlMs: number;
  /** How often the holder renews (default ttl / 3). */
  renewEveryMs?: number;
}

const LEASE_FILE = /^lease-(\d+)\.json$/;

/** A readable name for this process as a lease owner. */
export function defaultOwner(): string {
  return `${os.hostname()}:${process.pid}`;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function listTokens(dir: string): Promise<number[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  return names.flatMap((n) => {
    const m = LEASE_FILE.exec(n);
    return m ? [Number(m[1])] : [];
  });
}

/** The current (highest-token) lease record in `dir`, if any. */
export async function currentLease(dir: string): Promise<LeaseRecord | undefined> {
  const tokens = await listTokens(dir);
  if (tokens.length === 0) return undefined;
  const top = Math.max(...tokens);
  return (await readJson(path.join(dir, `lease-${top}.json`))) as LeaseRecord | undefined;
}

/**
 * Whether a lease no longer protects anything: released, expired, or held by a process on this
 * host that no longer exists (so a crashed local runner's steps are taken over at once).
 */
export function leaseIsStale(rec: LeaseRecord, now: number): boolean {
  if (rec.released) return true;
  if (rec.expiresAt <= now) return true;
  if (rec.host === os.hostname() && rec.pid !== process.pid && !pidAlive(rec.pid)) return true;
  return false;
}

/** Creates `file` with `data` only if it does not exist; false if someone else created it first. */
async function createExclusive(file: string, data: string): Promise<boolean> {
  const tmp = `${file}.new-${process.pid}-${randomBytes(4).toString("hex")}`;
  await fs.writeFile(tmp, data);
  try {
    // link(2) fails with EEXIST when the name is taken, and the file appears with its full content.
    await fs.link(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  } finally {
    await fs.rm(tmp, { force: true });
  }
}

/** The outcome of {@link tryAcquireLease}. */
export type AcquireResult = { acquired: true; lease: Lease } | { acquired: false; holder: LeaseRecord };

/**
 * Tries once to take the lease in `dir`: succeeds when there is none or the current one is stale,
 * by exclusively creating the next token's file (compare-and-swap on the token).
 */
export async function tryAcquireLease(dir: string, owner: string, opts: LeaseOptions): Promise<AcquireResult> {
  await fs.mkdir(dir, { recursive: true });
  for (let attempt = 0; attempt < 5; attempt++) {
    const tokens = await listTokens(dir);
    const top = tokens.length ? Math.max(...tokens) : 0;
    if (top > 0) {
      const rec = (await readJson(path.join(dir, `lease-${top}.json`))) as LeaseRecord | undefined;
      if (rec && !leaseIsStale(rec, opts.clock.now())) return { acquired: false, holder: rec };
    }
    const record: LeaseRecord = {
      owner,
      token: top + 1,
      expiresAt: opts.clock.now() + opts.ttlMs,
      host: os.hostname(),
      pid: process.pid,
    };
    if (await createExclusive(path.join(dir, `lease-${top + 1}.json`), JSON.stringify(record))) {
      // Older tokens can never become current again: drop them.
      await Promise.all(tokens.filter((t) => t < top).map((t) => fs.rm(path.join(dir, `lease-${t}.json`), { force: true })));
      return { acquired: true, lease: new Lease(dir, record, opts) };
    }
    // Someone else created that token between our read and our create: look again.
  }
  const rec = await currentLease(dir);
  if (rec) return { acquired: false, holder: rec };
  throw new MarinError("INTERNAL", `could not acquire the lease in ${dir}`);
}

/**
 * A held lease. `start()` renews it in the background; when renewal finds it lost (a higher token
 * exists, or it expired before renewal), `signal` aborts with a `LEASE_LOST` error.
 */
export class Lease {
  readonly dir: string;
  private record: LeaseRecord;
  private readonly opts: LeaseOptions;
  private readonly controller = new AbortController();
  private readonly stopController = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(dir: string, record: LeaseRecord, opts: LeaseOptions) {
    this.dir = dir;
    this.record = record;
    this.opts = opts;
  }

  /** The fencing token. */
  get token(): number {
    return this.record.token;
  }

  /** The owner string. */
  get owner(): string {
    return this.record.owner;
  }

  /** Aborts when the lease is lost. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  private file(): string {
    return path.join(this.dir, `lease-${this.record.token}.json`);
  }

  private lost(why: string): void {
    if (!this.controller.signal.aborted) {
      this.controller.abort(new MarinError("LEASE_LOST", `lease on ${path.dirname(this.dir)} lost: ${why}`));
    }
  }

  /** Throws `LEASE_LOST` unless this lease is still the current one and unexpired (the fencing check). */
  async assertHeld(): Promise<void> {
    if (this.controller.signal.aborted) throw this.controller.signal.reason;
    const tokens = await listTokens(this.dir);
    if (tokens.some((t) => t > this.record.token)) {
      this.lost(`another runner took it over (token ${Math.max(...tokens)} > ${this.record.token})`);
    } else if (this.opts.clock.now() >= this.record.expiresAt) {
      this.lost("it expired before it was renewed");
    }
    if (this.controller.signal.aborted) throw this.controller.signal.reason;
  }

  /** Extends the lease by its ttl, after checking it is still ours. */
  async renew(): Promise<void> {
    await this.assertHeld();
    const next = { ...this.record, expiresAt: this.opts.clock.now() + this.opts.ttlMs };
    await writeFileAtomic(this.file(), JSON.stringify(next), META_WRITE);
    this.record = next;
    // A takeover racing with the write above shows up as a higher token now.
    await this.assertHeld();
  }

  /** Starts background renewal. */
  start(): void {
    if (this.loop) return;
    const every = this.opts.renewEveryMs ?? Math.max(1, Math.floor(this.opts.ttlMs / 3));
    const stop = this.stopController.signal;
    this.loop = (async () => {
      while (!stop.aborted && !this.controller.signal.aborted) {
        try {
          await this.opts.clock.sleep(every, stop);
        } catch {
          return;
        }
        if (stop.aborted) return;
        try {
          await this.renew();
        } catch (e) {
          this.lost(e instanceof Error ? e.message : String(e));
          return;
        }
      }
    })();
  }

  /** Stops renewal and marks the lease released (only if still ours), so waiters can proceed at once. */
  async release(): Promise<void> {
    this.stopController.abort();
    await this.loop;
    const tokens = await listTokens(this.dir);
    if (tokens.some((t) => t > this.record.token)) return;
    await writeFileAtomic(this.file(), JSON.stringify({ ...this.record, released: true }), META_WRITE);
  }

  /** Stops renewal without releasing (the process is going away; the lease simply expires). */
  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
  }
}
