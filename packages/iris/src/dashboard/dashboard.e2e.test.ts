// The dashboard's HTTP routes without a browser: auth on every page, stream and API route, login
// cookies, the Origin rule, pipeline records and their validation, vendored assets, /metrics.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpRouter } from "../http/router.ts";
import { LocalCluster } from "../localCluster.ts";

const TOKEN = "dash-http-token";

describe("dashboard HTTP routes (LocalCluster with a token)", () => {
  let cluster: LocalCluster;
  let base: string;
  let cookie: string;
  let csrf: string;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ workers: 1, token: TOKEN, httpPort: 0 });
    base = `http://${cluster.controller.httpAddress}`;
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("serves the login form at / when signed out (200, no redirect) and the app once signed in", async () => {
    const out = await fetch(`${base}/`, { redirect: "manual" });
    expect(out.status).toBe(200);
    const text = await out.text();
    expect(text).toContain('action="/login"');
    expect(text).not.toContain("app.mjs");
    const wrong = await fetch(`${base}/login`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", origin: base },
      body: JSON.stringify({ token: "nope" }),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    const cross = await fetch(`${base}/login`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://evil.example" },
      body: JSON.stringify({ token: TOKEN }),
    });
    expect(cross.status).toBe(403);
    const ok = await fetch(`${base}/login`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", origin: base },
      body: JSON.stringify({ token: TOKEN }),
    });
    expect(ok.status).toBe(200);
    const setCookie = ok.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    cookie = setCookie.split(";")[0]!;
    expect(await (await fetch(`${base}/`, { headers: { cookie } })).text()).toContain("/assets/app.mjs");
    const session = (await (await fetch(`${base}/api/session`, { headers: { cookie } })).json()) as { csrf: string; proxyOrigin: string };
    expect(session).toMatchObject({ auth: true, user: "admin", role: "admin", proxyOrigin: cluster.controller.proxyOrigin });
    expect(session.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(session.proxyOrigin).not.toBe(base);
    csrf = session.csrf;
  });

  it("answers 401 on every API route and stream without credentials, and accepts the cookie or Bearer", async () => {
    for (const [method, url] of [
      ["POST", "/api/ListJobs"],
      ["GET", "/api/stream/overview"],
      ["GET", "/api/stream/logs?name=/x/y"],
      ["GET", "/api/pipelines"],
      ["GET", "/api/session"],
      ["GET", "/metrics"],
    ] as const) {
      const r = await fetch(`${base}${url}`, { method, ...(method === "POST" ? { body: "{}" } : {}) });
      expect(r.status, `${method} ${url}`).toBe(401);
      await r.body?.cancel();
    }
    expect((await fetch(`${base}/api/ListJobs`, { method: "POST", headers: { cookie, origin: base, "x-iris-csrf": csrf }, body: "{}" })).status).toBe(200);
    // The cookie alone (no CSRF token, or another session's) proves nothing on a POST.
    expect((await fetch(`${base}/api/ListJobs`, { method: "POST", headers: { cookie, origin: base }, body: "{}" })).status).toBe(403);
    expect((await fetch(`${base}/api/ListJobs`, { method: "POST", headers: { cookie, origin: base, "x-iris-csrf": `${csrf.slice(1)}x` }, body: "{}" })).status).toBe(403);
    expect((await fetch(`${base}/api/ListJobs`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body: "{}" })).status).toBe(200);
    // The cookie never authenticates a state change from another site (or without Origin).
    expect((await fetch(`${base}/api/ListJobs`, { method: "POST", headers: { cookie, origin: "http://evil.example" }, body: "{}" })).status).toBe(401);
    expect((await fetch(`${base}/api/ListJobs`, { method: "POST", headers: { cookie }, body: "{}" })).status).toBe(401);
  });

  it("every route of both origins declares a policy, and every non-public one refuses an unauthenticated call", async () => {
    const origins = [
      { base, router: cluster.controller.httpRouter! },
      { base: cluster.controller.proxyOrigin!, router: cluster.controller.proxyRouter! },
    ];
    let checked = 0;
    for (const o of origins) {
      expect(o.router.routes().length).toBeGreaterThan(0);
      for (const route of o.router.routes()) {
        expect(["public", "user", "admin", "capability"], route.name).toContain(route.auth);
        if (route.auth === "public") continue;
        const method = route.methods.includes("GET") ? "GET" : route.methods[0]!;
        // A capability route refuses a made-up capability (on the dashboard's origin: after its redirect).
        const url = `${o.base}${HttpRouter.examplePath(route).replace(/\/cap\/x$/, "/cap/not-a-token/x")}`;
        const r = await fetch(url, { method, ...(method === "GET" || method === "HEAD" ? {} : { body: "{}" }), redirect: "follow" });
        expect(r.status, `${method} ${url} (${route.name})`).toBe(401);
        await r.body?.cancel();
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(20);
    // And a path nothing declares is refused on both origins, with a token too.
    for (const o of origins) expect((await fetch(`${o.base}/undeclared`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
  });

  it("streams the overview as server-sent events", async () => {
    const ctl = new AbortController();
    const r = await fetch(`${base}/api/stream/overview`, { headers: { cookie }, signal: ctl.signal });
    expect(r.headers.get("content-type")).toMatch(/text\/event-stream/);
    const reader = r.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("event: overview")) text += (await reader.read()).value ?? "";
    ctl.abort();
    expect(text).toMatch(/"workers":\[\{"workerId"/);
  });

  it("stores pipeline records (validated) and lists them", async () => {
    const run = {
      runId: "r-1",
      prefix: "/p",
      state: "finished",
      ok: true,
      startedAtMs: 1,
      finishedAtMs: 2,
      steps: [{ name: "a", id: "a-1", outputPath: "/p/a-1", deps: [], state: "done", durationMs: 5 }],
    };
    const put = (body: unknown, id = "r-1") =>
      fetch(`${base}/api/pipelines/${id}`, { method: "PUT", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await put(run)).status).toBe(200);
    const bad = await put({ ...run, steps: [{ ...run.steps[0], state: "exploded" }] });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/steps\.0\.state/);
    expect((await put(run, "other")).status).toBe(400);
    const list = (await (await fetch(`${base}/api/pipelines`, { headers: { cookie } })).json()) as { runs: { runId: string }[] };
    expect(list.runs.map((r) => r.runId)).toEqual(["r-1"]);
  });

  it("serves the vendored modules and its own assets, nothing else", async () => {
    for (const a of ["vendor/preact.mjs", "vendor/hooks.mjs", "vendor/htm.mjs", "vendor/uPlot.mjs", "vendor/uPlot.css", "app.mjs", "views.mjs", "style.css"]) {
      const r = await fetch(`${base}/assets/${a}`);
      expect(r.status, a).toBe(200);
      await r.arrayBuffer();
    }
    expect((await fetch(`${base}/assets/..%2Fserver.ts`)).status).toBe(404);
    expect((await fetch(`${base}/assets/vendor/left-pad.mjs`)).status).toBe(404);
  });

  it("adds RPC counts, latencies and the scheduler's cycle time to /metrics", async () => {
    const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(text).toMatch(/iris_rpc_requests_total\{method="ListJobs",code="OK"\} \d+/);
    expect(text).toMatch(/iris_rpc_duration_seconds_bucket\{method="RegisterWorker",le="\+Inf"\} 1/);
    expect(text).toMatch(/iris_scheduler_cycle_seconds_count [1-9]\d*/);
  });
});
