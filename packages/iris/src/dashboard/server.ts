// The web dashboard's HTTP routes on the controller's HTTP port: the page at `/` (a login form when
// signed out), its static assets and vendored ES modules, `POST /login` / `POST /logout` and the
// one-time login link `GET /login?code=` (session cookie), `GET /api/session` (who, the CSRF
// token, the proxy's origin), the live streams (`/api/stream/*`, server-sent events) and the
// pipeline records. Each route declares its auth policy on the router (http/router.ts).
import { readFileSync } from "node:fs";
import type http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ControllerServiceHandlers } from "../internal/generated/iris/v1/ControllerService.ts";
import { BodyTooLargeError, readBody } from "../http/body.ts";
import { cookieOf, sameOrigin, SESSION_COOKIE, SESSION_TTL_MS, sessionsOf } from "../http/principal.ts";
import type { HttpAuthenticator } from "../http/principal.ts";
import { reply } from "../http/respond.ts";
import type { HttpRouter } from "../http/router.ts";
import { appPage, loginPage } from "./page.ts";
import { addPipelineRoutes, PipelineStore } from "./pipelines.ts";
import { addStreamRoutes } from "./streams.ts";
import type { ChangeSource } from "./streams.ts";

/** What the dashboard needs from the controller. */
export interface DashboardOptions {
  auth: HttpAuthenticator;
  /** The ControllerService handlers, called in-process as the HTTP API does. */
  handlers: ControllerServiceHandlers;
  /** Subscribes to every job/worker change. */
  onChange: ChangeSource;
  /** The endpoint proxy's origin (`http://host:port`), once bound: the page links services there. */
  proxyOrigin?: () => string | undefined;
}

/** Bytes a login body may have. */
const MAX_LOGIN_BODY = 16 * 1024;

const ASSETS_DIR = fileURLToPath(new URL("./assets/", import.meta.url));
const TYPES: Record<string, string> = {
  ".mjs": "text/javascript; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".png": "image/png",
  ".svg": "image/svg+xml",
};

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
 * Adds the dashboard's routes. The page and every stream use only the public HTTP API
 * (`POST /api/<Method>`, `/api/stream/*`, `/api/pipelines`).
 */
export function addDashboardRoutes(router: HttpRouter, opts: DashboardOptions): void {
  const { auth } = opts;
  const sessions = sessionsOf(auth);
  let vendor: Record<string, string> | undefined;
  const pipelines = new PipelineStore();
  const signIn = (req: http.IncomingMessage, authorization: string): Record<string, string> =>
    auth.enabled ? { "set-cookie": sessionCookie(req, sessions.create(authorization), Math.floor(SESSION_TTL_MS / 1000)) } : {};
  const loginFailed = (res: http.ServerResponse, error: string): void => {
    res.writeHead(401, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    res.end(loginPage({ error }));
  };

  router.add({
    name: "GET /",
    methods: ["GET"],
    path: /^\/(index\.html)?$/,
    example: "/",
    auth: "public",
    handler: ({ res, principal }) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "x-frame-options": "DENY", "x-content-type-options": "nosniff" });
      res.end(principal ? appPage({ auth: auth.enabled }) : loginPage({}));
    },
  });
  router.add({
    name: "GET /assets/vendor/<module>",
    methods: ["GET"],
    path: { prefix: "/assets/vendor/" },
    auth: "public",
    handler: ({ res, url }) => {
      vendor ??= vendorFiles();
      const name = url.pathname.slice("/assets/vendor/".length);
      const file = vendor[name];
      if (!file) reply(res, 404, { code: "NOT_FOUND", message: `no vendored asset ${name}` });
      else sendFile(res, file, TYPES[path.extname(name)] ?? "application/octet-stream", true);
    },
  });
  router.add({
    name: "GET /assets/<file>",
    methods: ["GET"],
    path: { prefix: "/assets/" },
    auth: "public",
    handler: ({ res, url }) => {
      const rel = url.pathname.slice("/assets/".length);
      if (!/^[a-zA-Z0-9_-]+\.(mjs|css|png|svg)$/.test(rel)) return reply(res, 404, { code: "NOT_FOUND", message: `no asset ${rel}` });
      sendFile(res, path.join(ASSETS_DIR, rel), TYPES[path.extname(rel)]!, false);
    },
  });
  // The printed dashboard URL's one-time login code: signs this browser in once, then is gone.
  router.add({
    name: "GET /login?code=<one-time code>",
    methods: ["GET"],
    path: "/login",
    auth: "public",
    handler: ({ req, res, url }) => {
      const code = url.searchParams.get("code") ?? "";
      const authorization = code === "" ? undefined : sessions.redeemLoginCode(code);
      if (!auth.enabled || (authorization !== undefined && auth.fromAuthorization(authorization))) {
        res.writeHead(303, { ...(authorization ? signIn(req, authorization) : {}), location: "/", "cache-control": "no-store", "referrer-policy": "no-referrer" });
        res.end();
        return;
      }
      loginFailed(res, "This login link was already used or has expired: sign in with the token.");
    },
  });
  router.add({
    name: "POST /login",
    methods: ["POST"],
    path: "/login",
    auth: "public",
    handler: async ({ req, res }) => {
      if (!sameOrigin(req)) return reply(res, 403, { code: "PERMISSION_DENIED", message: "cross-origin login refused" });
      const wantsJson = String(req.headers.accept ?? "").includes("application/json");
      let token: string;
      try {
        token = tokenOfBody(req, await readBody(req, MAX_LOGIN_BODY));
      } catch (e) {
        return reply(res, e instanceof BodyTooLargeError ? 413 : 400, { code: "INVALID_ARGUMENT", message: `login body: ${(e as Error).message}` });
      }
      const authorization = `Bearer ${token}`;
      if (!auth.enabled || (token !== "" && auth.fromAuthorization(authorization))) {
        const headers = signIn(req, authorization);
        if (wantsJson) {
          res.writeHead(200, { ...headers, "content-type": "application/json" });
          res.end(JSON.stringify({ ok: true }));
        } else {
          res.writeHead(303, { ...headers, location: "/" });
          res.end();
        }
        return;
      }
      if (wantsJson) reply(res, 401, { code: "UNAUTHENTICATED", message: "wrong token" });
      else loginFailed(res, "Wrong token: not signed in.");
    },
  });
  router.add({
    name: "POST /logout",
    methods: ["POST"],
    path: "/logout",
    auth: "public",
    handler: ({ req, res }) => {
      if (!sameOrigin(req)) return reply(res, 403, { code: "PERMISSION_DENIED", message: "cross-origin logout refused" });
      const id = cookieOf(req, SESSION_COOKIE);
      if (id) sessions.delete(id);
      res.writeHead(303, { "set-cookie": sessionCookie(req, "", 0), location: "/" });
      res.end();
    },
  });
  router.add({
    name: "GET /api/session",
    methods: ["GET"],
    path: "/api/session",
    auth: "user",
    handler: ({ res, principal, credentials }) =>
      reply(res, 200, {
        auth: auth.enabled,
        user: principal!.user,
        role: principal!.role,
        ...(credentials.csrf ? { csrf: credentials.csrf } : {}),
        ...(opts.proxyOrigin?.() ? { proxyOrigin: opts.proxyOrigin() } : {}),
      }),
  });
  addStreamRoutes(router, { handlers: opts.handlers, onChange: opts.onChange, pipelines });
  addPipelineRoutes(router, { pipelines });
}
