// The endpoint proxy end to end: curl through /proxy with the cluster token and through capability
// URLs, SSE streamed event by event, Authorization never forwarded, upstream failure and timeout.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { IrisError } from "../errors.ts";
import { waitFor } from "../testing.ts";
import { LOCAL_ADMIN, mayControlJob } from "./auth.ts";
import type { Principal } from "./auth.ts";
import { HttpRouter } from "../http/router.ts";
import { Controller } from "./controller.ts";
import { EndpointProxy, proxyTimeoutOf } from "../http/endpointProxy.ts";

const run = promisify(execFile);

/** curl's body and status code (`-w` appends the code on its own line). */
async function curl(args: string[]): Promise<{ status: number; body: string }> {
  const { stdout } = await run("curl", ["-sS", "-w", "\n%{http_code}", ...args], { timeout: 20_000 });
  const i = stdout.lastIndexOf("\n");
  return { status: Number(stdout.slice(i + 1)), body: stdout.slice(0, i) };
}

describe("endpoint proxy", () => {
  let dir: string;
  let controller: Controller;
  let client: IrisClient;
  let upstream: http.Server;
  let upstreamAddr: string;
  const clock = {
    t: Date.now(),
    now(): number {
      return this.t;
    },
  };
  // The SSE route sends its next event only once the test has seen the previous one.
  let releaseNext: (() => void) | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "iris-proxy-"));
    upstream = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname === "/svc/echo") {
        let body = "";
        req.on("data", (d: Buffer) => (body += d.toString()));
        req.on("end", () => {
          res.writeHead(201, { "content-type": "application/json", "x-upstream": "yes" });
          res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
        });
        return;
      }
      if (url.pathname === "/svc/sse") {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        let i = 0;
        const next = (): void => {
          if (i === 3) {
            res.end("data: [DONE]\n\n");
            return;
          }
          res.write(`data: {"i":${i++}}\n\n`);
          releaseNext = next;
        };
        next();
        return;
      }
      if (url.pathname === "/svc/hang") return; // never answers
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    upstreamAddr = `127.0.0.1:${(upstream.address() as AddressInfo).port}/svc`;
    controller = await Controller.start({ host: "127.0.0.1", port: 0, httpPort: 0, dbPath: path.join(dir, "c.sqlite"), token: "tok", clock });
    client = IrisClient.connect(controller.address, { token: "tok" });
    await client.registerEndpoint("/alice/app/api", `http://${upstreamAddr}`, { metadata: { proxy_timeout_ms: "400" } });
    await client.registerEndpoint("/alice/app/other", `http://${upstreamAddr}`);
    // A bare host:port address (no scheme) with the default timeout.
    await client.registerEndpoint("/alice/app/dead", "127.0.0.1:1");
  });
  afterAll(async () => {
    client?.close();
    await controller?.stop();
    await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()));
    rmSync(dir, { recursive: true, force: true });
  });

  const base = (): string => `http://${controller.httpAddress}`;

  it("forwards method, path, query, body and headers with the cluster token (curl), never Authorization", async () => {
    const r = await curl([
      "-X",
      "POST",
      `${base()}/proxy/alice/app/api/echo?x=1&y=two`,
      "-H",
      "authorization: Bearer tok",
      "-H",
      "x-custom: 42",
      "-H",
      "content-type: application/json",
      "-d",
      '{"hello":"world"}',
    ]);
    expect(r.status).toBe(201);
    const echoed = JSON.parse(r.body) as { method: string; url: string; headers: Record<string, string>; body: string };
    expect(echoed).toMatchObject({ method: "POST", url: "/svc/echo?x=1&y=two", body: '{"hello":"world"}' });
    expect(echoed.headers["x-custom"]).toBe("42");
    expect(echoed.headers.authorization).toBeUndefined();
    expect(echoed.headers["x-forwarded-prefix"]).toBe("/proxy/alice/app/api");
    // The name may also be one percent-encoded segment.
    const enc = await curl([`${base()}/proxy/${encodeURIComponent("/alice/app/api")}/echo`, "-H", "authorization: Bearer tok"]);
    expect(enc.status).toBe(201);
    expect((JSON.parse(enc.body) as { url: string }).url).toBe("/svc/echo");
  });

  it("never takes the dashboard's session cookie: a cookie request is sent to the proxy's origin, which refuses it; the cookie is never forwarded", async () => {
    const login = await fetch(`${base()}/login`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ token: "tok" }),
    });
    expect(login.status).toBe(200);
    const session = /^(iris_session=[^;]+)/.exec(login.headers.get("set-cookie") ?? "")?.[1];
    expect(session).toBeDefined();
    const moved = await fetch(`${base()}/proxy/alice/app/api/echo?a=1`, { headers: { cookie: `theme=dark; ${session}` }, redirect: "manual" });
    expect(moved.status).toBe(307);
    expect(moved.headers.get("location")).toBe(`${controller.proxyOrigin}/proxy/alice/app/api/echo?a=1`);
    expect(controller.proxyOrigin).not.toBe(base());
    expect((await curl([`${controller.proxyOrigin}/proxy/alice/app/api/echo`, "-H", `cookie: theme=dark; ${session}`])).status).toBe(401);
    // With the token (on either origin) the session cookie is stripped, other cookies travel.
    for (const origin of [base(), controller.proxyOrigin!]) {
      const r = await curl([`${origin}/proxy/alice/app/api/echo`, "-H", `cookie: theme=dark; ${session}`, "-H", "authorization: Bearer tok"]);
      expect(r.status).toBe(201);
      expect((JSON.parse(r.body) as { headers: Record<string, string> }).headers.cookie).toBe("theme=dark");
    }
  });

  it("refuses without the token and answers 404 for an unknown endpoint", async () => {
    expect((await curl([`${base()}/proxy/alice/app/api/echo`])).status).toBe(401);
    expect((await curl([`${base()}/proxy/alice/app/api/echo`, "-H", "authorization: Bearer wrong"])).status).toBe(401);
    const missing = await curl([`${base()}/proxy/alice/nope/x`, "-H", "authorization: Bearer tok"]);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body)).toMatchObject({ code: "NOT_FOUND" });
  });

  it("streams server-sent events through event by event", async () => {
    const res = await fetch(`${base()}/proxy/alice/app/api/sse`, { headers: { authorization: "Bearer tok" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const events: string[] = [];
    let buf = "";
    // The upstream sends event k+1 only after we have read event k: a buffering proxy would hang here.
    while (!events.includes("data: [DONE]")) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        events.push(buf.slice(0, cut));
        buf = buf.slice(cut + 2);
        const next = releaseNext;
        releaseNext = undefined;
        next?.();
      }
    }
    expect(events).toEqual(['data: {"i":0}', 'data: {"i":1}', 'data: {"i":2}', "data: [DONE]"]);
  });

  it("answers 502 when the upstream is down and 504 after the endpoint's timeout", async () => {
    const dead = await curl([`${base()}/proxy/alice/app/dead/x`, "-H", "authorization: Bearer tok"]);
    expect(dead.status).toBe(502);
    expect(JSON.parse(dead.body)).toMatchObject({ code: "BAD_GATEWAY" });
    const t0 = Date.now();
    const slow = await curl([`${base()}/proxy/alice/app/api/hang`, "-H", "authorization: Bearer tok"]);
    expect(slow.status).toBe(504);
    expect(JSON.parse(slow.body).message).toMatch(/400 ms.*proxy_timeout_ms/);
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it("mints capability URLs that work for one endpoint until they expire", async () => {
    const cap = await client.mintEndpointToken("/alice/app/api", { ttlSeconds: 5 });
    expect(cap.name).toBe("/alice/app/api");
    expect(cap.url).toBe(`${controller.proxyOrigin}/cap/${cap.token}`);
    // An old capability URL on the dashboard's origin moves to the proxy's (307 keeps method and body).
    const old = await fetch(`${base()}/cap/${cap.token}/echo?q=1`, { method: "POST", body: "x", redirect: "manual" });
    expect(old.status).toBe(307);
    expect(old.headers.get("location")).toBe(`${cap.url}/echo?q=1`);
    expect((await curl(["-L", "-X", "POST", "-d", "x", `${base()}/cap/${cap.token}/echo`])).status).toBe(201);
    // Clamped to the 60 s minimum.
    expect(cap.expiresAtMs).toBe(clock.t + 60_000);
    const ok = await curl([`${cap.url}/echo?q=1`]);
    expect(ok.status).toBe(201);
    expect((JSON.parse(ok.body) as { url: string }).url).toBe("/svc/echo?q=1");
    // A caller's Authorization header (any) is not forwarded either.
    const withAuth = await curl([`${cap.url}/echo`, "-H", "authorization: Bearer secret-of-the-caller"]);
    expect((JSON.parse(withAuth.body) as { headers: Record<string, string> }).headers.authorization).toBeUndefined();
    // The token is no cluster token: not for /proxy, not for another endpoint, not for the API.
    expect((await curl([`${base()}/proxy/alice/app/other/echo`, "-H", `authorization: Bearer ${cap.token}`])).status).toBe(401);
    expect((await curl(["-X", "POST", `${base()}/api/ListJobs`, "-H", `authorization: Bearer ${cap.token}`, "-d", "{}"])).status).toBe(401);
    const forged = cap.token.replace(/^[^.]+/, Buffer.from(JSON.stringify({ n: "/alice/app/other", e: cap.expiresAtMs })).toString("base64url"));
    expect((await curl([`${controller.proxyOrigin}/cap/${forged}/echo`])).status).toBe(401);
    // After the expiry: 401 naming it.
    clock.t += 61_000;
    const late = await curl([`${cap.url}/echo`]);
    expect(late.status).toBe(401);
    expect(JSON.parse(late.body).message).toMatch(/expired/);
  });

  it("clamps the TTL and refuses unknown endpoints and unauthenticated minting", async () => {
    const day = await client.mintEndpointToken("/alice/app/api", { ttlSeconds: 10 * 86_400 });
    expect(day.expiresAtMs).toBe(clock.t + 86_400_000);
    const dflt = await client.mintEndpointToken("/alice/app/api");
    expect(dflt.expiresAtMs).toBe(clock.t + 3_600_000);
    await expect(client.mintEndpointToken("/alice/app/none")).rejects.toMatchObject({ code: "NOT_FOUND" });
    const anon = IrisClient.connect(controller.address);
    await expect(anon.mintEndpointToken("/alice/app/api")).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    anon.close();
    // The same for server-side callers (the dashboard), with the caller's principal: the
    // endpoints were registered outside any job with the admin token, so they are admin's.
    expect(controller.mintEndpointCapability({ user: "admin", role: "admin" }, "/alice/app/api", 120).expiresAtMs).toBe(clock.t + 120_000);
    expect(() => controller.mintEndpointCapability({ user: "alice", role: "user" }, "/alice/app/api")).toThrow(/belongs to \/admin/);
  });
});

describe("endpoint ownership and timeouts", () => {
  it("spreads requests over the replicas of one name by fewest in flight", async () => {
    // Two replicas under one name (as the tasks of one service job register it); each holds its
    // requests until the test lets them go.
    const held: { replica: string; res: http.ServerResponse }[] = [];
    const replicas = await Promise.all(
      ["a", "b"].map(async (id) => {
        const srv = http.createServer((_req, res) => held.push({ replica: id, res }));
        await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
        return { id, srv, address: `http://127.0.0.1:${(srv.address() as AddressInfo).port}` };
      }),
    );
    const endpoints = replicas.map((r) => ({ endpointId: r.id, name: "/alice/svc", address: r.address, metadata: {} }));
    const proxy = new EndpointProxy({
      resolve: () => endpoints[0]!,
      resolveAll: () => endpoints,
      ownerOf: () => "/alice",
      exists: (n) => n === "/alice/svc",
      proxyOrigin: () => undefined,
    });
    const router = new HttpRouter({ auth: { enabled: false, fromAuthorization: () => LOCAL_ADMIN } });
    proxy.addProxyOriginRoutes(router);
    const front = http.createServer((req, res) => router.handle(req, res));
    await new Promise<void>((r) => front.listen(0, "127.0.0.1", r));
    try {
      const ask = () => fetch(`http://127.0.0.1:${(front.address() as AddressInfo).port}/proxy/alice/svc/v1/models`);
      const first = ask();
      await waitFor("the first request to arrive", () => held.length === 1);
      expect(held[0]!.replica).toBe("a"); // a tie goes to the newest (listed first)
      const second = ask();
      await waitFor("the second request to arrive", () => held.length === 2);
      expect(held[1]!.replica).toBe("b"); // the idle replica, not the newest again
      expect(proxy.inFlight("a")).toBe(1);
      held[0]!.res.end("from a");
      expect(await (await first).text()).toBe("from a");
      await waitFor("a to be idle", () => proxy.inFlight("a") === 0);
      // Now a is idle and b busy: the third goes to a.
      const third = ask();
      await waitFor("the third request to arrive", () => held.length === 3);
      expect(held[2]!.replica).toBe("a");
      held[1]!.res.end("from b");
      held[2]!.res.end("from a");
      expect([await (await second).text(), await (await third).text()]).toEqual(["from b", "from a"]);
      await waitFor("nothing in flight", () => proxy.inFlight("a") + proxy.inFlight("b") === 0);
    } finally {
      front.closeAllConnections();
      await new Promise<void>((done) => front.close(() => done()));
      for (const r of replicas) r.srv.closeAllConnections();
      await Promise.all(replicas.map((r) => new Promise<void>((done) => r.srv.close(() => done()))));
    }
  });

  it("lets only the owner's tree (or an admin) mint", () => {
    const proxy = new EndpointProxy({
      mayControl: (p, owner) => mayControlJob(p as Principal, owner),
      resolve: () => ({}),
      ownerOf: () => "/alice/job",
      exists: () => false,
      proxyOrigin: () => "http://h:1",
    });
    const e = { name: "/alice/job/serve/m", attemptId: "/alice/job/0:0", address: "x:1" };
    expect(proxy.mint({ user: "alice", role: "user" }, e, 0).url).toMatch(/^http:\/\/h:1\/cap\//);
    expect(proxy.mint({ user: "x", role: "task", job: "/alice" } as Principal, e, 0).name).toBe("/alice/job/serve/m");
    expect(() => proxy.mint({ user: "bob", role: "user" }, e, 0)).toThrow(IrisError);
    expect(() => proxy.mint({ user: "bob", role: "user" }, e, 0)).toThrow(/belongs to \/alice\/job/);
    expect(() => proxy.mint({ user: "w", role: "worker" }, e, 0)).toThrow(/PERMISSION|may not/);
    expect(() => proxy.mint({ user: "alice", role: "task", job: "/alice/other" } as Principal, e, 0)).toThrow(/may not/);
  });

  it("clamps proxy_timeout_ms", () => {
    expect(proxyTimeoutOf({})).toBe(300_000);
    expect(proxyTimeoutOf({ proxy_timeout_ms: "abc" })).toBe(300_000);
    expect(proxyTimeoutOf({ proxy_timeout_ms: "5" })).toBe(100);
    expect(proxyTimeoutOf({ proxy_timeout_ms: "1e12" })).toBe(3_600_000);
    expect(proxyTimeoutOf({ proxy_timeout_ms: "2500" })).toBe(2500);
  });
});
