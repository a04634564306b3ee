// The web dashboard's HTTP routes on the controller's HTTP port: the page at `/` (a login form when
// signed out), its static assets and vendored ES modules, `POST /login` / `POST /logout` (session
// cookie), the live streams (`/api/stream/*`, server-sent events) and the pipeline records.
import { readFileSync } from "node:fs";
import type http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ControllerServiceHandlers } from "../internal/generated/iris/v1/ControllerService.ts";
import type { Authenticator } from "../controller/auth.ts";
import { reply } from "../controller/httpFace.ts";
import type { HttpRoute } from "../controller/httpFace.ts";
import { authorizationOfRequest, cookieOf, principalOfRequest, sameOrigin, SESSION_COOKIE, SESSION_TTL_MS, sessionsOf } from "../controller/httpAuth.ts";
import { appPage, loginPage } from "./page.ts";
import { PipelineStore, pipelineRoutes, readBody } from "./pipelines.ts";
import { streamRoutes } from "./streams.ts";
import type { ChangeSource } from "./streams.ts";

/** What the dashboard needs from the controller. */
export interface DashboardOptions {
  auth: Authenticator;
  /** The ControllerService handlers, called in-process as the HTTP API does. */
  handlers: ControllerServiceHandlers;
  /** Subscribes to every job/worker change. */
  onChange: ChangeSource;
}

/** Bytes a login body may have. */
const MAX_LOGIN_BODY = 16 * 1024;

const ASSETS_DIR = fileURLToPath(new URL("./assets/", import.meta.url));
const TYPES: Record<string, string> = { ".mjs": "text/javascript; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".png": "image/png", ".svg": "image/svg+xml" };

/**
 * The third-party ES modules the page imports, resolved from the installed packages (so the page
 * works from the workspace and from a packed install, offline: no CDN). Names are the import map's.
 */
function vendorFiles(): Record<string, string> {
  const require = createRequire(import.meta.url);
  return {
    "preact.mjs": require.resolve("preact"),
    "hooks.mjs": require.resolve("preact/hooks"),
    "htm.mjs": path.join(path.dirname(require.resolve("htm")), "htm.mjs"),
    "uPlot.mjs": require.resolve("uplot/dist/uPlot.esm.js"),
    "uPlot.css": require.resolve("uplot/dist/uPlot.min.css"),
  };
}

function sendFile(res: http.ServerResponse, file: string, type: string, cache: boolean): void {
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch {
    return reply(res, 404, { code: "NOT_FOUND", message: "no such asset" });
  }
  res.writeHead(200, { "content-type": type, "cache-control": cache ? "public, max-age=3600" : "no-cache", "x-content-type-options": "nosniff" });
  res.end(data);
}

function sessionCookie(req: http.IncomingMessage, value: string, maxAgeS: number): string {
  const secure = (req.socket as { encrypted?: boolean }).encrypted ? "; Secure" : "";
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeS}${secure}`;
}

/** The token of a login body: JSON `{"token": …}` or a form's `token=…`. */
function tokenOfBody(req: http.IncomingMessage, body: string): string {
  if (String(req.headers["content-type"] ?? "").includes("application/json")) {
    const v = (JSON.parse(body || "{}") as { token?: unknown }).token;
    return typeof v === "string" ? v : "";
  }
  return new URLSearchParams(body).get("token") ?? "";
}

/**
 * The dashboard's routes, tried before the controller's JSON API. The page and every stream use
 * only the public HTTP API (`POST /api/<Method>`, `/api/stream/*`, `/api/pipelines`).
 */
export function dashboardRoutes(opts: DashboardOptions): HttpRoute[] {
  const { auth } = opts;
  const sessions = sessionsOf(auth);
  let vendor: Record<string, string> | undefined;
  const pipelines = new PipelineStore();

  const page: HttpRoute = async (req, res, url) => {
    const p = url.pathname;
    if (req.method === "GET" && (p === "/" || p === "/index.html")) {
      const signedIn = principalOfRequest(auth, req) !== undefined;
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "x-frame-options": "DENY", "x-content-type-options": "nosniff" });
      res.end(signedIn ? appPage({ auth: auth.enabled }) : loginPage({}));
      return true;
    }
    if (req.method === "GET" && p.startsWith("/assets/vendor/")) {
      vendor ??= vendorFiles();
      const name = p.slice("/assets/vendor/".length);
      const file = vendor[name];
      if (!file) reply(res, 404, { code: "NOT_FOUND", message: `no vendored asset ${name}` });
      else sendFile(res, file, TYPES[path.extname(name)] ?? "application/octet-stream", true);
      return true;
    }
    if (req.method === "GET" && p.startsWith("/assets/")) {
      const rel = p.slice("/assets/".length);
      if (!/^[a-zA-Z0-9_-]+\.(mjs|css|png|svg)$/.test(rel)) {
        reply(res, 404, { code: "NOT_FOUND", message: `no asset ${rel}` });
        return true;
      }
      sendFile(res, path.join(ASSETS_DIR, rel), TYPES[path.extname(rel)]!, false);
      return true;
    }
    if (p === "/login" && req.method === "POST") {
      if (!sameOrigin(req)) {
        reply(res, 403, { code: "PERMISSION_DENIED", message: "cross-origin login refused" });
        return true;
      }
      const wantsJson = String(req.headers.accept ?? "").includes("application/json");
      let token: string;
      try {
        token = tokenOfBody(req, await readBody(req, MAX_LOGIN_BODY));
      } catch (e) {
        reply(res, 400, { code: "INVALID_ARGUMENT", message: `login body: ${(e as Error).message}` });
        return true;
      }
      const authorization = `Bearer ${token}`;
      if (!auth.enabled || (token !== "" && auth.fromAuthorization(authorization))) {
        const headers: Record<string, string> = {};
        if (auth.enabled) headers["set-cookie"] = sessionCookie(req, sessions.create(authorization), Math.floor(SESSION_TTL_MS / 1000));
        if (wantsJson) {
          res.writeHead(200, { ...headers, "content-type": "application/json" });
          res.end(JSON.stringify({ ok: true }));
        } else {
          res.writeHead(303, { ...headers, location: "/" });
          res.end();
        }
        return true;
      }
      if (wantsJson) reply(res, 401, { code: "UNAUTHENTICATED", message: "wrong token" });
      else {
        res.writeHead(401, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
        res.end(loginPage({ error: "Wrong token: not signed in." }));
      }
      return true;
    }
    if (p === "/logout" && req.method === "POST") {
      if (!sameOrigin(req)) {
        reply(res, 403, { code: "PERMISSION_DENIED", message: "cross-origin logout refused" });
        return true;
      }
      const id = cookieOf(req, SESSION_COOKIE);
      if (id) sessions.delete(id);
      res.writeHead(303, { "set-cookie": sessionCookie(req, "", 0), location: "/" });
      res.end();
      return true;
    }
    if (p === "/api/session" && req.method === "GET") {
      const who = principalOfRequest(auth, req);
      if (!who) reply(res, 401, { code: "UNAUTHENTICATED", message: "not signed in" });
      else reply(res, 200, { auth: auth.enabled, user: who.user, role: who.role });
      return true;
    }
    return false;
  };
  const authorize = (req: http.IncomingMessage) => (principalOfRequest(auth, req) ? (authorizationOfRequest(auth, req) ?? "") : undefined);
  return [page, ...streamRoutes({ handlers: opts.handlers, onChange: opts.onChange, authorize, pipelines }), ...pipelineRoutes({ authorize, principalOf: (req) => principalOfRequest(auth, req), pipelines })];
}
