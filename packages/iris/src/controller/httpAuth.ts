// Who is calling over HTTP: `authorization: Bearer <token>` or the dashboard's session cookie
// (a token typed once at `POST /login`), turned into a Principal by the controller's Authenticator.
import { randomBytes } from "node:crypto";
import type http from "node:http";
import { LOCAL_ADMIN } from "./auth.ts";
import type { Authenticator, Principal } from "./auth.ts";

/** Name of the dashboard's session cookie. */
export const SESSION_COOKIE = "iris_session";

/** How long a session lives without use (12 h; every authenticated request renews it). */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** Sessions held at most (the oldest is dropped beyond this). */
const MAX_SESSIONS = 10_000;

interface Session {
  /** The `authorization` header value the session stands for: handlers see exactly what a Bearer caller sends. */
  authorization: string;
  expiresAtMs: number;
}

/**
 * The sessions of one controller, in memory (a restarted controller forgets them: sign in
 * again). A session id is 32 random bytes; it maps to the token that was typed, so that every
 * check downstream (roles, job ownership) sees the same credentials as a Bearer caller.
 */
export class SessionStore {
  private readonly sessions = new Map<string, Session>();
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** A new session for `authorization` (a `Bearer …` value the authenticator accepted); returns its id. */
  create(authorization: string): string {
    const id = randomBytes(32).toString("base64url");
    this.sessions.set(id, { authorization, expiresAtMs: this.now() + SESSION_TTL_MS });
    while (this.sessions.size > MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    return id;
  }

  /** The `authorization` value of a live session (renewed), or undefined. */
  lookup(id: string): string | undefined {
    const s = this.sessions.get(id);
    if (!s) return undefined;
    if (s.expiresAtMs <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    s.expiresAtMs = this.now() + SESSION_TTL_MS;
    return s.authorization;
  }

  /** Ends a session (no-op when unknown). */
  delete(id: string): void {
    this.sessions.delete(id);
  }
}

const stores = new WeakMap<Authenticator, SessionStore>();

/** The session store of an authenticator (one per controller: created on first use). */
export function sessionsOf(auth: Authenticator): SessionStore {
  let s = stores.get(auth);
  if (!s) stores.set(auth, (s = new SessionStore()));
  return s;
}

/** The value of cookie `name` in a request, or undefined. */
export function cookieOf(req: http.IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

/** Whether a request changes state by its method (anything but GET, HEAD, OPTIONS). */
export function changesState(req: http.IncomingMessage): boolean {
  return !["GET", "HEAD", "OPTIONS"].includes(req.method ?? "GET");
}

/**
 * Whether the request's `Origin` (when present) is this server itself (`http(s)://<Host>`).
 * Browsers send `Origin` on every state-changing fetch, so a cross-site form or script fails it.
 */
export function sameOrigin(req: http.IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  const host = req.headers.host;
  return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
}

/**
 * The `authorization` value a request stands for: its own `authorization` header, else its
 * session cookie's. A cookie counts on a state-changing request only when `Origin` is present and
 * this server (cross-site requests never ride on the cookie). Undefined: no credentials.
 */
export function authorizationOfRequest(auth: Authenticator, req: http.IncomingMessage): string | undefined {
  if (req.headers.authorization) return req.headers.authorization;
  const id = cookieOf(req, SESSION_COOKIE);
  if (!id) return undefined;
  if (changesState(req) && (req.headers.origin === undefined || !sameOrigin(req))) return undefined;
  return sessionsOf(auth).lookup(id);
}

/**
 * The caller of an HTTP request: the `authorization: Bearer` header or the dashboard's session
 * cookie, through the controller's authenticator; undefined when neither is valid. Without auth
 * (a local cluster) every caller is the local admin. A request whose `Origin` is another site
 * never authenticates a state-changing request.
 *
 * @example
 * const who = principalOfRequest(auth, req);
 * if (!who) return reply(res, 401, { code: "UNAUTHENTICATED", message: "sign in" });
 */
export function principalOfRequest(auth: Authenticator, req: http.IncomingMessage): Principal | undefined {
  if (!auth.enabled) return changesState(req) && !sameOrigin(req) ? undefined : LOCAL_ADMIN;
  if (changesState(req) && !sameOrigin(req)) return undefined;
  const authorization = authorizationOfRequest(auth, req);
  return authorization === undefined ? undefined : auth.fromAuthorization(authorization);
}
