// The one HTTP router of the controller's faces. Every route declares its auth policy when it is
// added, and the router enforces it before the handler runs (and before any body is read):
//
//   public      anyone (the page shell, the login form, static assets)
//   user        an authenticated caller (any role, narrowed by `permission` through the role table)
//   admin       an authenticated admin
//   capability  no cluster credentials at all: the route checks a capability in its URL itself
//               (cookies and bearer tokens are never consulted for it)
//
// A request no declared route matches is refused (404; 405 when only the method differs); a route
// added without a valid policy throws. A state-changing request (anything but GET/HEAD/OPTIONS)
// that rides on the dashboard's session cookie must carry the session's CSRF token; a bearer
// token needs none. With auth off, a request whose `Host` is not one this server serves is 421.
import type http from "node:http";
import { credentialsOf, changesState, csrfMatches, CSRF_HEADER } from "./principal.ts";
import type { HttpAuthenticator, HttpPrincipal, RequestCredentials } from "./principal.ts";
import { refuse, reply } from "./respond.ts";

/** The auth policies a route may declare. */
export const AUTH_POLICIES = ["public", "user", "admin", "capability"] as const;
export type AuthPolicy = (typeof AUTH_POLICIES)[number];

/** What a handler gets. */
export interface RouteContext {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  url: URL;
  /** The path's match (a RegExp route's groups; `[path]` otherwise). */
  match: RegExpExecArray | string[];
  /** The request's credentials (for `capability` routes: always none). */
  credentials: RequestCredentials;
  /** The caller: set on `user` and `admin` routes; on `public` ones when signed in. */
  principal: HttpPrincipal | undefined;
}

/** One route. */
export interface RouteSpec {
  /** A short name for listings and errors (`POST /api/<Method>`). */
  name: string;
  /** Methods served (upper case). */
  methods: readonly string[];
  /** The path: exact string, a RegExp on the pathname, or `{ prefix }`. */
  path: string | RegExp | { prefix: string };
  auth: AuthPolicy;
  /** A concrete path this route serves (required for a RegExp path): route listings and the policy test use it. */
  example?: string;
  /** `user` routes: a permission the role table must grant (e.g. `GET /metrics`). */
  permission?: string;
  handler: (ctx: RouteContext) => void | Promise<void>;
}

/** Options of {@link HttpRouter}. */
export interface RouterOptions {
  auth: HttpAuthenticator;
  /** Whether the role table grants `permission` to `p` (the controller's `mayCall`). */
  permits?: (p: HttpPrincipal, permission: string) => boolean;
  /** Whether the session cookie counts (default true; false on the proxy's origin: bearer tokens only). */
  cookies?: boolean;
  /** With auth off: whether a `Host` header names this server (else 421). Default: any. */
  servesHost?: (host: string | undefined) => boolean;
}

function matchPath(path: RouteSpec["path"], pathname: string, raw: string): RegExpExecArray | string[] | undefined {
  if (typeof path === "string") return pathname === path ? [pathname] : undefined;
  if (path instanceof RegExp) return path.exec(pathname) ?? undefined;
  return raw === path.prefix.replace(/\/$/, "") || raw.startsWith(path.prefix) ? [raw] : undefined;
}

/**
 * Routes requests to declared routes, enforcing each route's policy first.
 *
 * @example
 * const router = new HttpRouter({ auth });
 * router.add({ name: "GET /hello", methods: ["GET"], path: "/hello", auth: "user", handler: ({ res }) => reply(res, 200, {}) });
 * http.createServer((req, res) => router.handle(req, res));
 */
export class HttpRouter {
  readonly #routes: RouteSpec[] = [];
  readonly #opts: RouterOptions;

  constructor(opts: RouterOptions) {
    this.#opts = opts;
  }

  /** Adds a route (tried in the order added); throws when it declares no valid auth policy. */
  add(route: RouteSpec): this {
    if (!(AUTH_POLICIES as readonly string[]).includes(route.auth)) {
      throw new Error(`route ${route.name}: auth policy must be one of ${AUTH_POLICIES.join(", ")}, got ${String(route.auth)}`);
    }
    if (route.methods.length === 0) throw new Error(`route ${route.name}: no methods`);
    if (route.path instanceof RegExp && (route.example === undefined || !route.path.test(route.example))) {
      throw new Error(`route ${route.name}: a RegExp path needs an example path it matches`);
    }
    this.#routes.push(route);
    return this;
  }

  /** A concrete path of a route (its example, its exact path, or its prefix plus `x`). */
  static examplePath(route: RouteSpec): string {
    if (route.example !== undefined) return route.example;
    if (typeof route.path === "string") return route.path;
    if (route.path instanceof RegExp) throw new Error(`route ${route.name}: no example`);
    return `${route.path.prefix}x`;
  }

  /** The declared routes, in order. */
  routes(): readonly RouteSpec[] {
    return this.#routes;
  }

  /** Answers one request. */
  handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    void this.#dispatch(req, res).catch((e: unknown) => {
      if (!res.headersSent) reply(res, 500, { code: "INTERNAL", message: e instanceof Error ? e.message : String(e) });
      else res.destroy();
    });
  }

  async #dispatch(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const { auth } = this.#opts;
    if (!auth.enabled && this.#opts.servesHost && !this.#opts.servesHost(req.headers.host)) {
      return refuse(
        res,
        421,
        "MISDIRECTED_REQUEST",
        `this server does not serve host ${JSON.stringify(req.headers.host ?? "")} (auth is off: only its own addresses are answered)`,
      );
    }
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://x");
    } catch {
      return refuse(res, 400, "INVALID_ARGUMENT", "bad request target");
    }
    const raw = (req.url ?? "/").split("?")[0]!;
    const method = req.method ?? "GET";
    let pathMatched: RouteSpec | undefined;
    for (const route of this.#routes) {
      const match = matchPath(route.path, url.pathname, raw);
      if (!match) continue;
      pathMatched ??= route;
      if (!route.methods.includes(method)) continue;
      return this.#run(route, req, res, url, match);
    }
    if (pathMatched) return refuse(res, 405, "INVALID_ARGUMENT", `${method} is not allowed here: ${pathMatched.name}`);
    return refuse(res, 404, "NOT_FOUND", `no route ${method} ${url.pathname}`);
  }

  async #run(route: RouteSpec, req: http.IncomingMessage, res: http.ServerResponse, url: URL, match: RegExpExecArray | string[]): Promise<void> {
    if (route.auth === "capability") {
      return route.handler({ req, res, url, match, credentials: { principal: undefined, authorization: undefined, via: "none" }, principal: undefined });
    }
    const credentials = credentialsOf(this.#opts.auth, req, { cookies: this.#opts.cookies !== false });
    const principal = credentials.principal;
    if (route.auth === "public") return route.handler({ req, res, url, match, credentials, principal });
    // Who is calling comes first: nothing of an unauthenticated request's body is read.
    if (!principal) return refuse(res, 401, "UNAUTHENTICATED", "missing or invalid bearer token (or session)");
    if (credentials.via === "session" && changesState(req) && !csrfMatches(req, credentials.csrf)) {
      return refuse(res, 403, "PERMISSION_DENIED", `a signed-in page must send its session's CSRF token (${CSRF_HEADER}) on ${req.method} ${url.pathname}`);
    }
    if (route.auth === "admin" && principal.role !== "admin") return refuse(res, 403, "PERMISSION_DENIED", `${route.name} is for admins; ${principal.user} is ${principal.role}`);
    if (route.permission !== undefined && this.#opts.permits && !this.#opts.permits(principal, route.permission)) {
      return refuse(res, 403, "PERMISSION_DENIED", `a ${principal.role} token may not use ${route.permission}`);
    }
    return route.handler({ req, res, url, match, credentials, principal });
  }
}
