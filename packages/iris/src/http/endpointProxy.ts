// The controller's endpoint proxy: `/proxy/<endpoint>/<path>` (cluster auth, bearer tokens only)
// and `/cap/<token>/<path>` (a capability token for one endpoint) forwarded to the registered
// address, streamed both ways, plus the minting and checking of those HMAC-signed capability
// tokens. The proxy is served on its own origin (its own port): what a service returns never runs
// on the dashboard's origin. On the dashboard's origin, `/proxy` still serves bearer-token clients
// (old URLs keep working) and sends anything else (a browser, `/cap` URLs) to the proxy's origin.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type http from "node:http";
import { CAPABILITY_TTL_S, DEFAULT_PROXY_TIMEOUT_MS, PROXY_TIMEOUT_KEY, PROXY_TIMEOUT_RANGE_MS } from "../endpointLimits.ts";
import { IrisError } from "../errors.ts";
import type { EndpointCapability } from "../jobSpec.ts";
import type { Endpoint as WireEndpoint } from "../internal/generated/iris/v1/Endpoint.ts";
import { forward } from "./forward.ts";
import type { HttpPrincipal } from "./principal.ts";
import { reply } from "./respond.ts";
import type { HttpRouter } from "./router.ts";

/** The permission (role table entry) that `/proxy` needs. */
export const PROXY_PERMISSION = "HTTP /proxy";

/** What the proxy needs from the controller. */
export interface EndpointProxyOptions {
  /** The endpoint of a full name (throws IrisError NOT_FOUND when there is none). */
  resolve: (fullName: string) => WireEndpoint;
  /**
   * Every live endpoint of a full name, newest first (replicas of one service register the same
   * name); the proxy sends each request to the one with the fewest requests in flight.
   */
  resolveAll?: (fullName: string) => WireEndpoint[];
  /** The job tree that owns an endpoint (the controller's record of who registered it). */
  ownerOf: (endpoint: WireEndpoint) => string;
  /** Whether `principal` may act for job tree `owner` (the controller's `mayControlJob`). */
  mayControl?: (principal: HttpPrincipal, owner: string) => boolean;
  /** Whether an endpoint of that full name exists (for longest-prefix matching of proxy paths). */
  exists: (fullName: string) => boolean;
  /** The proxy's origin (`http://host:port`), once bound; capability URLs point there. */
  proxyOrigin: () => string | undefined;
  /** The dashboard's origin, once bound: its pages may call `/cap` URLs (CORS). */
  dashboardOrigin?: () => string | undefined;
  /** Signing key (default: 32 random bytes, so tokens die with the controller process). */
  key?: Buffer;
  now?: () => number;
}

/** Clamps an endpoint's `proxy_timeout_ms` metadata (absent or not a number: the default). */
export function proxyTimeoutOf(metadata: Record<string, string> | undefined): number {
  const raw = metadata?.[PROXY_TIMEOUT_KEY];
  const n = raw === undefined ? Number.NaN : Number(raw);
  if (!Number.isFinite(n)) return DEFAULT_PROXY_TIMEOUT_MS;
  return Math.min(PROXY_TIMEOUT_RANGE_MS.max, Math.max(PROXY_TIMEOUT_RANGE_MS.min, Math.round(n)));
}

function b64url(b: Buffer | string): string {
  return Buffer.from(b).toString("base64url");
}

/** What a proxied response may never do in a browser, whatever the service sends. */
const PROXIED_RESPONSE_HEADERS: http.OutgoingHttpHeaders = { "x-frame-options": "DENY" };

/**
 * Mints and checks capability tokens and serves the proxy routes. A token is
 * `base64url(JSON {n: full endpoint name, e: expiry ms}) "." base64url(HMAC-SHA256(key, payload))`.
 */
export class EndpointProxy {
  private readonly opts: EndpointProxyOptions;
  private readonly key: Buffer;
  private readonly now: () => number;
  /** Requests in flight through this proxy, by endpoint id. */
  private readonly inflight = new Map<string, number>();

  constructor(opts: EndpointProxyOptions) {
    this.opts = opts;
    this.key = opts.key ?? randomBytes(32);
    this.now = opts.now ?? Date.now;
  }

  /**
   * A capability URL for one endpoint, for `principal` (who must own it: `ownerOf`,
   * `mayControl`). `ttlSeconds` 0 → 1 h; clamped to [60 s, 24 h]. The URL is on the proxy's origin.
   */
  mint(principal: HttpPrincipal, endpoint: WireEndpoint, ttlSeconds: number): EndpointCapability {
    const owner = this.opts.ownerOf(endpoint);
    if (this.opts.mayControl && !this.opts.mayControl(principal, owner)) {
      throw new IrisError("PERMISSION_DENIED", `endpoint ${endpoint.name} belongs to ${owner}; ${principal.user} (${principal.role}) may not mint tokens for it`);
    }
    const origin = this.opts.proxyOrigin();
    if (!origin) throw new IrisError("FAILED_PRECONDITION", "this controller serves no HTTP port (start it with an HTTP port to use the endpoint proxy)");
    const ttl = ttlSeconds > 0 ? Math.min(CAPABILITY_TTL_S.max, Math.max(CAPABILITY_TTL_S.min, Math.round(ttlSeconds))) : CAPABILITY_TTL_S.default;
    const expiresAtMs = this.now() + ttl * 1000;
    const payload = b64url(JSON.stringify({ n: endpoint.name, e: expiresAtMs }));
    const token = `${payload}.${b64url(this.sign(payload))}`;
    return { name: String(endpoint.name), token, url: `${origin}/cap/${token}`, path: `/cap/${token}`, expiresAtMs };
  }

  /** The endpoint name a token grants, or why it grants nothing. */
  check(token: string): { name: string } | { error: string } {
    const [payload, sig, extra] = token.split(".");
    if (!payload || !sig || extra !== undefined) return { error: "malformed capability token" };
    const want = this.sign(payload);
    const got = Buffer.from(sig, "base64url");
    if (got.length !== want.length || !timingSafeEqual(got, want)) return { error: "invalid capability token (bad signature, or minted by another controller process)" };
    let body: { n?: unknown; e?: unknown };
    try {
      body = JSON.parse(Buffer.from(payload, "base64url").toString()) as { n?: unknown; e?: unknown };
    } catch {
      return { error: "malformed capability token" };
    }
    if (typeof body.n !== "string" || typeof body.e !== "number") return { error: "malformed capability token" };
    if (this.now() >= body.e) return { error: `capability token for ${body.n} expired at ${new Date(body.e).toISOString()}` };
    return { name: body.n };
  }

  /**
   * The routes of the proxy's own origin: `/cap/<token>/…` (policy `capability`; pages of the
   * dashboard's origin may call it: CORS) and `/proxy/<name>/…` (policy `user`, bearer tokens
   * only: the router of this origin reads no cookie).
   */
  addProxyOriginRoutes(router: HttpRouter): void {
    const all = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
    router.add({
      name: "ANY /cap/<token>/…",
      methods: all,
      path: { prefix: "/cap/" },
      auth: "capability",
      handler: ({ req, res, url }) => {
        const cors = this.corsFor(req);
        if (req.method === "OPTIONS" && cors) {
          res.writeHead(204, { ...cors, "access-control-allow-methods": "GET, POST", "access-control-allow-headers": "content-type, accept", "access-control-max-age": "600" });
          res.end();
          return;
        }
        const raw = (req.url ?? "/").split("?")[0]!;
        const rest = raw.slice("/cap/".length);
        const slash = rest.indexOf("/");
        const token = slash < 0 ? rest : rest.slice(0, slash);
        const granted = this.check(token);
        if ("error" in granted) return reply(res, 401, { code: "UNAUTHENTICATED", message: granted.error }, "application/json", cors ?? {});
        this.forwardTo(req, res, granted.name, (slash < 0 ? "/" : rest.slice(slash)) + url.search, cors);
      },
    });
    router.add({
      name: "ANY /proxy/<endpoint>/…",
      methods: all,
      path: { prefix: "/proxy/" },
      auth: "user",
      permission: PROXY_PERMISSION,
      handler: ({ req, res, url }) => this.proxyPath(req, res, url),
    });
  }

  /**
   * The routes of the dashboard's origin: `/proxy/<name>/…` for bearer-token clients (served here,
   * so that old URLs keep working) and `/cap/…`, which moves to the proxy's origin (307: method
   * and body kept). A request on the cookie is sent to the proxy's origin too, where the cookie
   * authorizes nothing.
   */
  addDashboardOriginRoutes(router: HttpRouter): void {
    const all = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
    const moved = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      const origin = this.opts.proxyOrigin();
      if (!origin) return reply(res, 404, { code: "NOT_FOUND", message: "this controller serves no endpoint proxy" });
      res.writeHead(307, { location: `${origin}${req.url ?? "/"}`, "content-type": "application/json" });
      res.end(JSON.stringify({ code: "MOVED", message: `the endpoint proxy is served at ${origin}` }));
    };
    router.add({
      name: "ANY /cap/<token>/… (moved to the proxy's origin)",
      methods: all,
      path: { prefix: "/cap/" },
      auth: "capability",
      handler: ({ req, res }) => moved(req, res),
    });
    router.add({
      name: "ANY /proxy/<endpoint>/… (bearer tokens; others moved to the proxy's origin)",
      methods: all,
      path: { prefix: "/proxy/" },
      auth: "user",
      permission: PROXY_PERMISSION,
      handler: ({ req, res, url, credentials }) => (credentials.via === "bearer" ? this.proxyPath(req, res, url) : moved(req, res)),
    });
  }

  /** Requests now in flight through the proxy to an endpoint (by its id). */
  inFlight(endpointId: string): number {
    return this.inflight.get(endpointId) ?? 0;
  }

  // CORS headers for a request from the dashboard's own pages (the playground), else undefined.
  private corsFor(req: http.IncomingMessage): http.OutgoingHttpHeaders | undefined {
    const dash = this.opts.dashboardOrigin?.();
    if (!dash || req.headers.origin !== dash) return undefined;
    return { "access-control-allow-origin": dash, vary: "Origin" };
  }

  private proxyPath(req: http.IncomingMessage, res: http.ServerResponse, url: URL): void {
    const raw = (req.url ?? "/").split("?")[0]!;
    const target = this.splitProxyPath(raw.slice("/proxy".length));
    if (!target) {
      return reply(res, 404, { code: "NOT_FOUND", message: `no endpoint matches ${raw}; use /proxy/<endpoint full name>/<path> (or the name percent-encoded as one segment)` });
    }
    this.forwardTo(req, res, target.name, target.path + url.search, undefined);
  }

  // The replica of `name` with the fewest requests in flight (ties: the newest).
  private pick(name: string): WireEndpoint {
    const all = this.opts.resolveAll?.(name) ?? [this.opts.resolve(name)];
    if (all.length === 0) throw new IrisError("NOT_FOUND", `no endpoint named ${name}`);
    let best = all[0]!;
    for (const e of all.slice(1)) if (this.inFlight(String(e.endpointId ?? e.name)) < this.inFlight(String(best.endpointId ?? best.name))) best = e;
    return best;
  }

  private sign(payload: string): Buffer {
    return createHmac("sha256", this.key).update(payload).digest();
  }

  // "/u/job/serve/x/v1/models" → the longest prefix that names an endpoint; a first segment that
  // decodes to a name with slashes ("%2Fu%2Fjob%2Fserve%2Fx") is taken as the name.
  private splitProxyPath(rest: string): { name: string; path: string } | undefined {
    const segs = rest.split("/").slice(1);
    if (segs.length === 0 || segs[0] === "") return undefined;
    let first: string;
    try {
      first = decodeURIComponent(segs[0]!);
    } catch {
      return undefined;
    }
    if (first.includes("/")) {
      const name = first.startsWith("/") ? first : `/${first}`;
      return { name, path: `/${segs.slice(1).join("/")}` };
    }
    for (let k = segs.length; k >= 1; k--) {
      let name: string;
      try {
        name = `/${segs.slice(0, k).map(decodeURIComponent).join("/")}`;
      } catch {
        continue;
      }
      if (this.opts.exists(name)) return { name, path: `/${segs.slice(k).join("/")}` };
    }
    return undefined;
  }

  private forwardTo(req: http.IncomingMessage, res: http.ServerResponse, name: string, pathAndQuery: string, cors: http.OutgoingHttpHeaders | undefined): void {
    let endpoint: WireEndpoint;
    try {
      endpoint = this.pick(name);
    } catch (e) {
      return reply(res, 404, { code: "NOT_FOUND", message: e instanceof Error ? e.message : String(e) }, "application/json", cors ?? {});
    }
    const address = String(endpoint.address);
    let target: URL;
    try {
      target = new URL(/^[a-z]+:\/\//i.test(address) ? address : `http://${address}`);
    } catch {
      return reply(res, 502, { code: "BAD_GATEWAY", message: `endpoint ${name} has address "${address}", not host:port or an http URL` });
    }
    // Counted from now until the exchange ends either way.
    const id = String(endpoint.endpointId ?? endpoint.name);
    this.inflight.set(id, (this.inflight.get(id) ?? 0) + 1);
    const uncount = (): void => {
      const n = (this.inflight.get(id) ?? 1) - 1;
      if (n > 0) this.inflight.set(id, n);
      else this.inflight.delete(id);
    };
    const rawPath = (req.url ?? "").split("?")[0]!;
    forward(req, res, {
      target,
      pathAndQuery,
      timeoutMs: proxyTimeoutOf(endpoint.metadata),
      label: `endpoint ${name} (${address})`,
      timeoutHint: `metadata ${PROXY_TIMEOUT_KEY}`,
      addHeaders: { "x-forwarded-host": req.headers.host ?? "", "x-forwarded-prefix": rawPath.slice(0, Math.max(0, rawPath.length - pathAndQuery.split("?")[0]!.length)) },
      responseHeaders: { ...PROXIED_RESPONSE_HEADERS, ...(cors ?? {}) },
      onDone: uncount,
    });
  }
}
