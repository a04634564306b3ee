// The router's contract: every route declares a policy (or is refused when added), undeclared
// paths are refused, the policy is enforced before the handler, and a cookie's state change needs
// the session's CSRF token while a bearer token needs none.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { singleTokenAuthenticator } from "../controller/auth.ts";
import { SESSION_COOKIE, sessionsOf } from "./principal.ts";
import { reply } from "./respond.ts";
import { HttpRouter } from "./router.ts";
import type { AuthPolicy } from "./router.ts";

describe("HttpRouter", () => {
  const auth = singleTokenAuthenticator("tok");
  const router = new HttpRouter({ auth, permits: (p, perm) => perm !== "nobody" || p.role === "none" });
  let calls = 0;
  const ok =
    () =>
    ({ res }: { res: http.ServerResponse }) => {
      calls++;
      reply(res, 200, { ok: true });
    };
  router.add({ name: "GET /open", methods: ["GET"], path: "/open", auth: "public", handler: ok() });
  router.add({ name: "POST /do", methods: ["POST"], path: "/do", auth: "user", handler: ok() });
  router.add({ name: "GET /admin", methods: ["GET"], path: "/admin", auth: "admin", handler: ok() });
  router.add({ name: "GET /never", methods: ["GET"], path: "/never", auth: "user", permission: "nobody", handler: ok() });
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => router.handle(req, res));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("refuses a route without a valid policy when it is added", () => {
    expect(() => router.add({ name: "x", methods: ["GET"], path: "/x", auth: undefined as unknown as AuthPolicy, handler: ok() })).toThrow(
      /auth policy must be one of public, user, admin, capability/,
    );
    expect(() => router.add({ name: "x", methods: ["GET"], path: "/x", auth: "open" as AuthPolicy, handler: ok() })).toThrow(/auth policy/);
    expect(() => router.add({ name: "x", methods: ["GET"], path: /^\/y$/, auth: "user", handler: ok() })).toThrow(/example/);
    expect(router.routes().map((r) => r.name)).toEqual(["GET /open", "POST /do", "GET /admin", "GET /never"]);
  });

  it("refuses undeclared paths (404) and methods (405) without calling anything", async () => {
    const before = calls;
    expect((await fetch(`${base}/nothing`, { headers: { authorization: "Bearer tok" } })).status).toBe(404);
    expect((await fetch(`${base}/open`, { method: "DELETE", headers: { authorization: "Bearer tok" } })).status).toBe(405);
    expect(calls).toBe(before);
  });

  it("enforces each policy before the handler; a cookie POST needs the CSRF token, a bearer one does not", async () => {
    const before = calls;
    expect((await fetch(`${base}/open`)).status).toBe(200);
    expect((await fetch(`${base}/do`, { method: "POST" })).status).toBe(401);
    expect((await fetch(`${base}/admin`)).status).toBe(401);
    expect((await fetch(`${base}/never`, { headers: { authorization: "Bearer tok" } })).status).toBe(403);
    expect(calls).toBe(before + 1);
    expect((await fetch(`${base}/do`, { method: "POST", headers: { authorization: "Bearer tok" } })).status).toBe(200);
    const id = sessionsOf(auth).create("Bearer tok");
    const csrf = sessionsOf(auth).session(id)!.csrf;
    const cookie = `${SESSION_COOKIE}=${id}`;
    expect((await fetch(`${base}/do`, { method: "POST", headers: { cookie, origin: base } })).status).toBe(403);
    expect((await fetch(`${base}/do`, { method: "POST", headers: { cookie, origin: base, "x-iris-csrf": csrf } })).status).toBe(200);
    expect((await fetch(`${base}/do`, { method: "POST", headers: { cookie, origin: "http://127.0.0.1:1", "x-iris-csrf": csrf } })).status).toBe(401);
    expect((await fetch(`${base}/admin`, { headers: { cookie } })).status).toBe(200);
  });

  it("with auth off, answers only its own Host names (421 otherwise)", async () => {
    const open = new HttpRouter({ auth: singleTokenAuthenticator(undefined), servesHost: (h) => h === "127.0.0.1:1234" });
    open.add({ name: "GET /", methods: ["GET"], path: "/", auth: "public", handler: ok() });
    const srv = http.createServer((req, res) => open.handle(req, res));
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const port = (srv.address() as AddressInfo).port;
    const get = (host: string) =>
      new Promise<number>((resolve, reject) =>
        http.get({ host: "127.0.0.1", port, path: "/", headers: { host } }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on("error", reject),
      );
    expect(await get("127.0.0.1:1234")).toBe(200);
    expect(await get("attacker.example:1234")).toBe(421);
    await new Promise<void>((r) => srv.close(() => r()));
  });
});
