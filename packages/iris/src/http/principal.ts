// Who is calling over HTTP: `authorization: Bearer <token>` or the dashboard's session cookie (a
// token typed once at `POST /login`, or a one-time login code from the printed dashboard URL),
// turned into a principal by the controller's authenticator. Sessions carry a CSRF token that
// every state-changing request riding on the cookie must echo (`x-iris-csrf`).
import { randomBytes, timingSafeEqual } from "node:crypto";
import type http from "node:http";

/** A caller as the HTTP layer sees it (the controller's `Principal` is one). */
export interface HttpPrincipal {
  user: string;
  role: string;
}

/** Maps an `authorization` value to a principal (the controller's `Authenticator` is one). */
export interface HttpAuthenticator<P extends HttpPrincipal = HttpPrincipal> {
  readonly enabled: boolean;
  /** The caller behind an `authorization` header value; with auth off, everyone's principal. */
  fromAuthorization(header: string | undefined): P | undefined;
}

/** Name of the dashboard's session cookie. */
export const SESSION_COOKIE = "iris_session";

/** The header a cookie-authenticated state-changing request carries its session's CSRF token in. */
export const CSRF_HEADER = "x-iris-csrf";

/** How long a session lives without use (12 h; every authenticated request renews it). */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** How long a one-time login code is valid (unused). */
export const LOGIN_CODE_TTL_MS = 24 * 60 * 60 * 1000;

/** Sessions (and login codes) held at most (the oldest is dropped beyond this). */
const MAX_SESSIONS = 10_000;

interface Session {
  /** The `authorization` header value the session stands for: handlers see exactly what a Bearer caller sends. */
  authorization: string;
  /** The session's CSRF token (given to the dashboard's page by `GET /api/session`). */
  csrf: string;
  expiresAtMs: number;
}

/**
 * The sessions of one controller, in memory (a restarted controller forgets them: sign in
 * again). A session id is 32 random bytes; it maps to the token that was typed, so that every
 * check downstream (roles, job ownership) sees the same credentials as a Bearer caller. Also the
 * one-time login codes: each signs one browser in once, then is gone.
 */
export class SessionStore {
  private readonly sessions = new Map<string, Session>();
  private readonly codes = new Map<string, { authorization: string; expiresAtMs: number }>();
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** A new session for `authorization` (a `Bearer …` value the authenticator accepted); returns its id. */
  create(authorization: string): string {
    const id = randomBytes(32).toString("base64url");
    this.sessions.set(id, { authorization, csrf: randomBytes(32).toString("base64url"), expiresAtMs: this.now() + SESSION_TTL_MS });
    while (this.sessions.size > MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    return id;
  }

  /** The `authorization` value of a live session (renewed), or undefined. */
  lookup(id: string): string | undefined {
    return this.session(id)?.authorization;
  }

  /** A live session (renewed), or undefined. */
  session(id: string): { authorization: string; csrf: string } | undefined {
    const s = this.sessions.get(id);
    if (!s) return undefined;
    if (s.expiresAtMs <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    s.expiresAtMs = this.now() + SESSION_TTL_MS;
    return s;
  }

  /** Ends a session (no-op when unknown). */
  delete(id: string): void {
    this.sessions.delete(id);
  }

  /** A one-time login code for `authorization` (valid once, for {@link LOGIN_CODE_TTL_MS}). */
  mintLoginCode(authorization: string): string {
    const code = randomBytes(24).toString("base64url");
    this.codes.set(code, { authorization, expiresAtMs: this.now() + LOGIN_CODE_TTL_MS });
    while (this.codes.size > MAX_SESSIONS) this.codes.delete(this.codes.keys().next().value!);
    return code;
  }

  /** The `authorization` of a login code, used up by this call; undefined when unknown, used or expired. */
  redeemLoginCode(code: string): string | undefined {
    const c = this.codes.get(code);
    if (!c) return undefined;
    this.codes.delete(code);
    return c.expiresAtMs > this.now() ? c.authorization : undefined;
  }
}

const stores = new WeakMap<object, SessionStore>();

/** The session store of an authenticator (one per controller: created on first use). */
export function sessionsOf(auth: HttpAuthenticator): SessionStore {
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
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
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

/** What a request's credentials amount to. */
export interface RequestCredentials<P extends HttpPrincipal = HttpPrincipal> {
  /** The caller, or undefined (no or invalid credentials, or a cross-origin state change). */
  principal: P | undefined;
  /** The `authorization` value handlers run with ("" with auth off and none given). */
  authorization: string | undefined;
  /** Where the credentials came from: a session cookie must prove its page (CSRF) on a state change. */
  via: "bearer" | "session" | "none";
  /** The session's CSRF token (cookie credentials only). */
  csrf?: string;
}

/**
 * The credentials of an HTTP request: its own `authorization` header, else its session cookie's.
 * A state-changing request from another `Origin` has none; a cookie counts on a state-changing
 * request only when `Origin` is present and this server (the CSRF token is checked by the router).
 * Without auth (`--no-auth`) every caller is the authenticator's principal for no credentials.
 */
export function credentialsOf<P extends HttpPrincipal>(auth: HttpAuthenticator<P>, req: http.IncomingMessage, opts: { cookies?: boolean } = {}): RequestCredentials<P> {
  const none: RequestCredentials<P> = { principal: undefined, authorization: undefined, via: "none" };
  if (changesState(req) && !sameOrigin(req)) return none;
  const header = req.headers.authorization;
  if (!auth.enabled) return { principal: auth.fromAuthorization(header), authorization: header ?? "", via: header ? "bearer" : "none" };
  if (header) return { principal: auth.fromAuthorization(header), authorization: header, via: "bearer" };
  const id = opts.cookies === false ? undefined : cookieOf(req, SESSION_COOKIE);
  if (!id) return none;
  if (changesState(req) && req.headers.origin === undefined) return none;
  const s = sessionsOf(auth).session(id);
  if (!s) return none;
  return { principal: auth.fromAuthorization(s.authorization), authorization: s.authorization, via: "session", csrf: s.csrf };
}

/** Whether a request carries its session's CSRF token (constant-time compare). */
export function csrfMatches(req: http.IncomingMessage, csrf: string | undefined): boolean {
  const got = req.headers[CSRF_HEADER];
  if (typeof got !== "string" || csrf === undefined) return false;
  const a = Buffer.from(got);
  const b = Buffer.from(csrf);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The `authorization` value a request stands for (see {@link credentialsOf}); undefined: no
 * credentials.
 */
export function authorizationOfRequest(auth: HttpAuthenticator, req: http.IncomingMessage): string | undefined {
  const c = credentialsOf(auth, req);
  return c.principal ? c.authorization : undefined;
}

/**
 * The caller of an HTTP request (see {@link credentialsOf}), or undefined.
 *
 * @example
 * const who = principalOfRequest(auth, req);
 * if (!who) return reply(res, 401, { code: "UNAUTHENTICATED", message: "sign in" });
 */
export function principalOfRequest<P extends HttpPrincipal>(auth: HttpAuthenticator<P>, req: http.IncomingMessage): P | undefined {
  return credentialsOf(auth, req).principal;
}
