// The one reverse-proxy forwarder of the HTTP faces: a request streamed to an upstream and its
// answer streamed back chunk by chunk (server-sent events arrive event by event), with one list of
// hop-by-hop headers, the caller's credentials never forwarded, an idle timeout (504) and 502 when
// the upstream cannot be reached. A caller that goes away cancels the upstream request.
import http from "node:http";
import { SESSION_COOKIE } from "./principal.ts";
import { reply } from "./respond.ts";

/** Headers that describe one connection, not the message (RFC 9110 §7.6.1), never forwarded (nor Host). */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);

/** The headers of a message that may travel on: hop-by-hop ones and those `Connection` lists left out. */
export function endToEndHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  const listed = new Set(
    String(headers.connection ?? "")
      .toLowerCase()
      .split(",")
      .map((s) => s.trim()),
  );
  for (const [k, v] of Object.entries(headers)) if (!HOP_BY_HOP.has(k) && !listed.has(k) && v !== undefined) out[k] = v;
  return out;
}

/** One forwarded exchange. */
export interface ForwardOptions {
  /** The upstream: `http://host:port[/base]` (its path is prepended). */
  target: URL;
  /** Path and query sent upstream (after the base path). */
  pathAndQuery: string;
  /** Idle timeout: no response headers, or no byte either way, for this long → 504. */
  timeoutMs: number;
  /** For error messages: what the upstream is. */
  label: string;
  /** Appended to the timeout's message (where the timeout is set). */
  timeoutHint?: string;
  /** Extra request headers (X-Forwarded-*). */
  addHeaders?: http.OutgoingHttpHeaders;
  /** Extra response headers (CORS, sandboxing), set over the upstream's. */
  responseHeaders?: http.OutgoingHttpHeaders;
  /** Called once when the exchange ends either way. */
  onDone?: () => void;
}

/** Forwards `req` upstream and streams the answer into `res`. */
export function forward(req: http.IncomingMessage, res: http.ServerResponse, opts: ForwardOptions): void {
  let doneCalled = false;
  const done = (): void => {
    if (doneCalled) return;
    doneCalled = true;
    opts.onDone?.();
  };
  res.on("close", done);
  const headers = endToEndHeaders(req.headers);
  // The caller's Authorization is for the controller, never for the service; nor is the
  // dashboard's session cookie (the caller's credentials too).
  delete headers.authorization;
  if (typeof headers.cookie === "string") {
    const kept = headers.cookie
      .split(";")
      .filter((c) => c.split("=")[0]!.trim() !== SESSION_COOKIE)
      .join(";")
      .trim();
    if (kept === "") delete headers.cookie;
    else headers.cookie = kept;
  }
  Object.assign(headers, opts.addHeaders ?? {});
  const basePath = opts.target.pathname.replace(/\/$/, "");
  let settled = false;
  const fail = (code: number, kind: string, message: string): void => {
    if (settled) return;
    settled = true;
    if (!res.headersSent) reply(res, code, { code: kind, message });
    else res.destroy();
  };
  const upstream = http.request(
    { protocol: "http:", hostname: opts.target.hostname, port: opts.target.port || 80, method: req.method, path: basePath + opts.pathAndQuery, headers },
    (up) => {
      res.writeHead(up.statusCode ?? 502, { ...endToEndHeaders(up.headers), ...(opts.responseHeaders ?? {}) });
      res.flushHeaders();
      // Each chunk is written as it arrives (SSE events reach the caller one by one).
      up.on("data", (chunk: Buffer) => res.write(chunk));
      up.on("end", () => res.end());
      up.on("error", () => res.destroy());
      up.on("aborted", () => res.destroy());
    },
  );
  upstream.setTimeout(opts.timeoutMs, () => {
    fail(504, "GATEWAY_TIMEOUT", `${opts.label} did not answer within ${opts.timeoutMs} ms${opts.timeoutHint ? ` (${opts.timeoutHint})` : ""}`);
    upstream.destroy();
  });
  upstream.on("error", (e) => fail(502, "BAD_GATEWAY", `${opts.label}: ${e.message}`));
  // The caller went away: stop the upstream request too (the service frees its slot).
  res.on("close", () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}
