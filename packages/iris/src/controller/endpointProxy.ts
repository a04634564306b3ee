// The controller's endpoint proxy: `/proxy/<endpoint>/<path>` (cluster auth) and `/cap/<token>/<path>`
// (a capability token for one endpoint) forwarded to the registered address, streamed both ways,
// plus the minting and checking of those HMAC-signed capability tokens.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import http from "node:http";
import { IrisError } from "../errors.ts";
import type { EndpointCapability } from "../jobSpec.ts";
import type { Endpoint as WireEndpoint } from "../internal/generated/iris/v1/Endpoint.ts";
import { mayCall, mayControlJob } from "./auth.ts";
import type { Principal } from "./auth.ts";
import { SESSION_COOKIE } from "./httpAuth.ts";
import { reply } from "./httpFace.ts";
import type { HttpRoute } from "./httpFace.ts";

/** Endpoint metadata key: the proxy's timeout for that endpoint, in milliseconds. */
export const PROXY_TIMEOUT_KEY = "proxy_timeout_ms";
/** The proxy timeout when the endpoint's metadata sets none (5 min: long generations). */
export const DEFAULT_PROXY_TIMEOUT_MS = 300_000;
/** `proxy_timeout_ms` is clamped to this range. */
export const PROXY_TIMEOUT_RANGE_MS = { min: 100, max: 3_600_000 } as const;
/** Capability token lifetime: the default and the clamp, in seconds. */
export const CAPABILITY_TTL_S = { default: 3600, min: 60, max: 86_400 } as const;

/** What the proxy needs from the controller. */
export interface EndpointProxyOptions {
  /** The caller of a request (the Bearer header or the dashboard's session cookie), or undefined. */
  principalOf: (req: http.IncomingMessage) => Principal | undefined;
  /** The endpoint of a full name (throws IrisError NOT_FOUND when there is none). */
  resolve: (fullName: string) => WireEndpoint;
  /**
   * Every live endpoint of a full name, newest first (replicas of one service register the same
   * name); the proxy sends each request to the one with the fewest requests in flight.
   */
  resolveAll?: (fullName: string) => WireEndpoint[];
  /** The job tree that owns an endpoint (the controller's record of who registered it). */
  ownerOf: (endpoint: WireEndpoint) => string;
  /** Whether an endpoint of that full name exists (for longest-prefix matching of proxy paths). */
  exists: (fullName: string) => boolean;
  /** "host:port" of the controller's HTTP face, once bound. */
  httpAddress: () => string | undefined;
  /** Signing key (default: 32 random bytes, so tokens die with the controller process). */
  key?: Buffer;
  now?: () => number;
}


// Headers that describe one connection, not the message (RFC 9110 §7.6.1), never forwarded.
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host"]);

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
   * `mayControlJob`). `ttlSeconds` 0 → 1 h; clamped to [60 s, 24 h].
   */
  mint(principal: Principal, endpoint: WireEndpoint, ttlSeconds: number): EndpointCapability {
    const owner = this.opts.ownerOf(endpoint);
    if (!mayControlJob(principal, owner)) {
      throw new IrisError("PERMISSION_DENIED", `endpoint ${endpoint.name} belongs to ${owner}; ${principal.user} (${principal.role}) may not mint tokens for it`);
    }
    const http = this.opts.httpAddress();
    if (!http) throw new IrisError("FAILED_PRECONDITION", "this controller serves no HTTP port (start it with an HTTP port to use the endpoint proxy)");
    const ttl = ttlSeconds > 0 ? Math.min(CAPABILITY_TTL_S.max, Math.max(CAPABILITY_TTL_S.min, Math.round(ttlSeconds))) : CAPABILITY_TTL_S.default;
    const expiresAtMs = this.now() + ttl * 1000;
    const payload = b64url(JSON.stringify({ n: endpoint.name, e: expiresAtMs }));
    const token = `${payload}.${b64url(this.sign(payload))}`;
    return { name: String(endpoint.name), token, url: `http://${http}/cap/${token}`, path: `/cap/${token}`, expiresAtMs };
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

  /** The HTTP route: `/proxy/<name>/<path>` and `/cap/<token>/<path>`. */
  readonly route: HttpRoute = (req, res, url) => {
    const raw = (req.url ?? "/").split("?")[0]!;
    const query = url.search;
    if (raw.startsWith("/cap/")) {
      const rest = raw.slice("/cap/".length);
      const slash = rest.indexOf("/");
      const token = slash < 0 ? rest : rest.slice(0, slash);
      const granted = this.check(token);
      if ("error" in granted) return (reply(res, 401, { code: "UNAUTHENTICATED", message: granted.error }), true);
      this.forward(req, res, granted.name, (slash < 0 ? "/" : rest.slice(slash)) + query);
      return true;
    }
    if (raw === "/proxy" || raw.startsWith("/proxy/")) {
      const principal = this.opts.principalOf(req);
      if (!principal) {
        reply(res, 401, { code: "UNAUTHENTICATED", message: "missing or invalid bearer token (or use a capability URL: iris endpoint token NAME)" });
        return true;
      }
      if (!mayCall(principal, "HTTP /proxy")) {
        reply(res, 403, { code: "PERMISSION_DENIED", message: `${principal.role} tokens may not use the endpoint proxy` });
        return true;
      }
      const target = this.splitProxyPath(raw.slice("/proxy".length));
      if (!target) {
        reply(res, 404, { code: "NOT_FOUND", message: `no endpoint matches ${raw}; use /proxy/<endpoint full name>/<path> (or the name percent-encoded as one segment)` });
        return true;
      }
      this.forward(req, res, target.name, target.path + query);
      return true;
    }
    return false;
  };

  /** Requests now in flight through the proxy to an endpoint (by its id). */
  inFlight(endpointId: string): number {
    return this.inflight.get(endpointId) ?? 0;
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

  private forward(req: http.IncomingMessage, res: http.ServerResponse, name: string, pathAndQuery: string): void {
    let endpoint: WireEndpoint;
    try {
      endpoint = this.pick(name);
    } catch (e) {
      reply(res, 404, { code: "NOT_FOUND", message: e instanceof Error ? e.message : String(e) });
      return;
    }
    // Counted from now until the exchange ends either way.
    const id = String(endpoint.endpointId ?? endpoint.name);
    this.inflight.set(id, (this.inflight.get(id) ?? 0) + 1);
    let counted = true;
    const uncount = (): void => {
      if (!counted) return;
      counted = false;
      const n = (this.inflight.get(id) ?? 1) - 1;
      if (n > 0) this.inflight.set(id, n);
      else this.inflight.delete(id);
    };
    res.on("close", uncount);
    const address = String(endpoint.address);
    let target: URL;
    try {
      target = new URL(/^[a-z]+:\/\//i.test(address) ? address : `http://${address}`);
    } catch {
      reply(res, 502, { code: "BAD_GATEWAY", message: `endpoint ${name} has address "${address}", not host:port or an http URL` });
      return;
    }
    const timeoutMs = proxyTimeoutOf(endpoint.metadata);
    const headers: http.OutgoingHttpHeaders = {};
    const connectionListed = new Set(String(req.headers.connection ?? "").toLowerCase().split(",").map((s) => s.trim()));
    for (const [k, v] of Object.entries(req.headers)) {
      // The caller's Authorization is for the controller, never for the service.
      if (k === "authorization" || HOP_BY_HOP.has(k) || connectionListed.has(k) || v === undefined) continue;
      headers[k] = v;
    }
    // Nor is the dashboard's session cookie (the caller's credentials, like Authorization).
    if (typeof headers.cookie === "string") {
      const kept = headers.cookie.split(";").filter((c) => c.split("=")[0]!.trim() !== SESSION_COOKIE).join(";").trim();
      if (kept === "") delete headers.cookie;
      else headers.cookie = kept;
    }
    headers["x-forwarded-host"] = req.headers.host ?? "";
    headers["x-forwarded-prefix"] = (req.url ?? "").slice(0, Math.max(0, (req.url ?? "").split("?")[0]!.length - pathAndQuery.split("?")[0]!.length));
    const basePath = target.pathname.replace(/\/$/, "");
    let settled = false;
    const fail = (code: number, kind: string, message: string): void => {
      if (settled) return;
      settled = true;
      if (!res.headersSent) reply(res, code, { code: kind, message });
      else res.destroy();
    };
    const upstream = http.request(
      { protocol: "http:", hostname: target.hostname, port: target.port || 80, method: req.method, path: basePath + pathAndQuery, headers },
      (up) => {
        const out: http.OutgoingHttpHeaders = {};
        const upConnection = new Set(String(up.headers.connection ?? "").toLowerCase().split(",").map((s) => s.trim()));
        for (const [k, v] of Object.entries(up.headers)) if (!HOP_BY_HOP.has(k) && !upConnection.has(k) && v !== undefined) out[k] = v;
        res.writeHead(up.statusCode ?? 502, out);
        res.flushHeaders();
        // Each chunk is written as it arrives (SSE events reach the caller one by one).
        up.on("data", (chunk: Buffer) => res.write(chunk));
        up.on("end", () => res.end());
        up.on("error", () => res.destroy());
        up.on("aborted", () => res.destroy());
      },
    );
    // Idle timeout: no response headers, or no byte either way, for that long.
    upstream.setTimeout(timeoutMs, () => {
      fail(504, "GATEWAY_TIMEOUT", `endpoint ${name} (${address}) did not answer within ${timeoutMs} ms (metadata ${PROXY_TIMEOUT_KEY})`);
      upstream.destroy();
    });
    upstream.on("error", (e) => fail(502, "BAD_GATEWAY", `endpoint ${name} (${address}): ${e.message}`));
    // The caller went away: stop the upstream request too (the service frees its slot).
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }
}
