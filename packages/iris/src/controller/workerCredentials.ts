// Credentials bound to one worker: single-use registration credentials minted in advance for a
// named worker id (what a provider such as Slurm hands the worker it starts), and the session each
// worker gets at registration, bound to its id and its process's instance nonce. Both are stored
// as SHA-256 hashes in the controller's database, so sessions survive a controller restart.
import { randomBytes } from "node:crypto";
import { IrisError } from "../errors.ts";
import type { Principal } from "./auth.ts";
import { sha256Hex } from "./auth.ts";
import type { Db } from "./db.ts";

/** Prefix of a worker session token (`iris-wsess.<random>`). */
export const WORKER_SESSION_PREFIX = "iris-wsess.";
/** Prefix of a minted registration credential (`iris-wreg.<random>`). */
export const WORKER_REGISTRATION_PREFIX = "iris-wreg.";
/** How long a minted registration credential stays valid by default (a day: a batch job may queue long). */
export const DEFAULT_REGISTRATION_TTL_MS = 24 * 60 * 60 * 1000;

const WORKER_ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

/** Checks a worker id given to {@link WorkerCredentials.mint} (INVALID_ARGUMENT naming it). */
export function checkWorkerId(workerId: string): void {
  if (!WORKER_ID.test(workerId)) {
    throw new IrisError("INVALID_ARGUMENT", `worker id ${JSON.stringify(workerId)}: expected letters, digits and . _ : @ - (at most 128, not starting with a symbol)`);
  }
}

interface SessionRow {
  worker_id: string;
  token_sha256: string;
  instance_id: string;
  user: string;
}

interface GrantRow {
  worker_id: string;
  token_sha256: string;
  expires_at_ms: number;
}

/** What {@link WorkerCredentials} tells its controller. */
export interface WorkerCredentialHooks {
  /** A worker's session was revoked or replaced by another process's: end its open streams. */
  sessionEnded?(workerId: string): void;
  /** {@link WorkerCredentials.revoke}: the worker leaves the cluster (its live attempts are retried). */
  revoked?(workerId: string): void;
}

/**
 * The worker credentials of one controller (see the iris README, "Worker credentials").
 *
 * - {@link mint}`(workerId, { ttlMs })`: a single-use registration credential for a named worker,
 *   made in advance (a provider hands it to the worker it starts, e.g. in a file). The worker
 *   presents it as its bearer token to RegisterWorker with that id; the controller swaps it for a
 *   session and the credential is spent. Minting again for the same id replaces the unused one.
 * - {@link revoke}`(workerId)`: the worker's unused registration credential and its session stop
 *   working at once, its assignment streams are closed and it leaves the cluster (its live
 *   attempts end WORKER_LOST and are retried elsewhere).
 *
 * Sessions are opened by RegisterWorker (any worker or admin token, a shared one included): one
 * per worker id, bound to the registering process's instance nonce. A registration of the same id
 * by another process (with a worker token) replaces the session; one made with the session itself
 * from another instance is refused.
 */
export class WorkerCredentials {
  readonly #db: Db;
  readonly #now: () => number;
  #hooks: WorkerCredentialHooks;
  /** token sha256 → session, mirrored from the database (one controller process owns it). */
  readonly #sessions = new Map<string, SessionRow>();
  readonly #sessionOf = new Map<string, SessionRow>();
  readonly #grants = new Map<string, GrantRow>();
  readonly #grantOf = new Map<string, GrantRow>();

  constructor(db: Db, now: () => number = Date.now, hooks: WorkerCredentialHooks = {}) {
    this.#db = db;
    this.#now = now;
    this.#hooks = hooks;
    for (const r of db.prepare("SELECT worker_id, token_sha256, instance_id, user FROM worker_sessions").all() as SessionRow[]) this.#putSession(r);
    db.prepare("DELETE FROM worker_grants WHERE expires_at_ms <= ?").run(now());
    for (const r of db.prepare("SELECT worker_id, token_sha256, expires_at_ms FROM worker_grants").all() as GrantRow[]) this.#putGrant(r);
  }

  /** Sets what the controller is told (revocations, replaced sessions). */
  setHooks(hooks: WorkerCredentialHooks): void {
    this.#hooks = hooks;
  }

  /**
   * Mints a single-use registration credential for worker `workerId`, valid for `ttlMs` (default
   * a day) or until used; replaces an unused one minted before for the same id. Returns the
   * secret (`iris-wreg.…`); only its hash is stored. INVALID_ARGUMENT for a bad id or ttl.
   */
  mint(workerId: string, opts: { ttlMs?: number } = {}): string {
    checkWorkerId(workerId);
    const ttlMs = opts.ttlMs ?? DEFAULT_REGISTRATION_TTL_MS;
    if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new IrisError("INVALID_ARGUMENT", `ttlMs: expected a positive number of milliseconds, got ${ttlMs}`);
    const token = `${WORKER_REGISTRATION_PREFIX}${randomBytes(32).toString("base64url")}`;
    const row: GrantRow = { worker_id: workerId, token_sha256: sha256Hex(token), expires_at_ms: this.#now() + ttlMs };
    this.#db
      .prepare(
        "INSERT INTO worker_grants (worker_id, token_sha256, expires_at_ms) VALUES (?, ?, ?) ON CONFLICT (worker_id) DO UPDATE SET token_sha256 = excluded.token_sha256, expires_at_ms = excluded.expires_at_ms",
      )
      .run(row.worker_id, row.token_sha256, row.expires_at_ms);
    this.#dropGrant(workerId);
    this.#putGrant(row);
    return token;
  }

  /**
   * Revokes everything of worker `workerId`: its unused registration credential and its session
   * (both refused from now on), and its registration (see {@link WorkerCredentialHooks.revoked}).
   * Returns whether a credential existed. Idempotent.
   */
  revoke(workerId: string): boolean {
    const had = this.#grantOf.has(workerId) || this.#sessionOf.has(workerId);
    this.#db.prepare("DELETE FROM worker_grants WHERE worker_id = ?").run(workerId);
    this.#dropGrant(workerId);
    this.endSession(workerId);
    this.#hooks.revoked?.(workerId);
    return had;
  }

  /** Whether worker `workerId` holds a session or an unused, unexpired registration credential. */
  has(workerId: string): boolean {
    const g = this.#grantOf.get(workerId);
    return this.#sessionOf.has(workerId) || (g !== undefined && g.expires_at_ms > this.#now());
  }

  /**
   * The principal of a worker session or registration credential (role `worker`, `worker` set to
   * the id it is bound to; `registration` for an unused registration credential), or undefined.
   */
  verify(token: string): Principal | undefined {
    if (token.startsWith(WORKER_SESSION_PREFIX)) {
      const s = this.#sessions.get(sha256Hex(token));
      return s ? { user: s.user, role: "worker", worker: s.worker_id } : undefined;
    }
    if (token.startsWith(WORKER_REGISTRATION_PREFIX)) {
      const g = this.#grants.get(sha256Hex(token));
      if (!g) return undefined;
      if (g.expires_at_ms <= this.#now()) {
        this.#db.prepare("DELETE FROM worker_grants WHERE worker_id = ?").run(g.worker_id);
        this.#dropGrant(g.worker_id);
        return undefined;
      }
      return { user: g.worker_id, role: "worker", worker: g.worker_id, registration: true };
    }
    return undefined;
  }

  /** Spends worker `workerId`'s registration credential (RegisterWorker made with it). */
  consumeRegistration(workerId: string): void {
    this.#db.prepare("DELETE FROM worker_grants WHERE worker_id = ?").run(workerId);
    this.#dropGrant(workerId);
  }

  /** The instance nonce worker `workerId`'s session is bound to, if it has one. */
  sessionInstance(workerId: string): string | undefined {
    return this.#sessionOf.get(workerId)?.instance_id;
  }

  /**
   * Opens worker `workerId`'s session for process `instanceId` and returns its token
   * (`iris-wsess.…`), replacing any previous session of that id (whose streams are ended when it
   * belonged to another instance).
   */
  openSession(workerId: string, instanceId: string, user: string): string {
    const previous = this.#sessionOf.get(workerId);
    const token = `${WORKER_SESSION_PREFIX}${randomBytes(32).toString("base64url")}`;
    const row: SessionRow = { worker_id: workerId, token_sha256: sha256Hex(token), instance_id: instanceId, user };
    this.#db
      .prepare(
        `INSERT INTO worker_sessions (worker_id, token_sha256, instance_id, user, created_at_ms) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (worker_id) DO UPDATE SET token_sha256 = excluded.token_sha256, instance_id = excluded.instance_id, user = excluded.user, created_at_ms = excluded.created_at_ms`,
      )
      .run(workerId, row.token_sha256, instanceId, user, this.#now());
    if (previous) this.#sessions.delete(previous.token_sha256);
    this.#putSession(row);
    if (previous && previous.instance_id !== instanceId) this.#hooks.sessionEnded?.(workerId);
    return token;
  }

  /** Ends worker `workerId`'s session (it deregistered, or was revoked). */
  endSession(workerId: string): void {
    const s = this.#sessionOf.get(workerId);
    this.#db.prepare("DELETE FROM worker_sessions WHERE worker_id = ?").run(workerId);
    if (!s) return;
    this.#sessions.delete(s.token_sha256);
    this.#sessionOf.delete(workerId);
    this.#hooks.sessionEnded?.(workerId);
  }

  #putSession(r: SessionRow): void {
    this.#sessions.set(r.token_sha256, r);
    this.#sessionOf.set(r.worker_id, r);
  }

  #putGrant(r: GrantRow): void {
    this.#grants.set(r.token_sha256, r);
    this.#grantOf.set(r.worker_id, r);
  }

  #dropGrant(workerId: string): void {
    const g = this.#grantOf.get(workerId);
    if (!g) return;
    this.#grants.delete(g.token_sha256);
    this.#grantOf.delete(workerId);
  }
}
