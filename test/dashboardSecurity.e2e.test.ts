// The dashboard's origins in a real Chromium (Debian `chromium`, playwright-core), on a local
// cluster started with no credentials (auth on by default, a minted token):
// - the one-time login URL signs a browser in once, and not a second time;
// - a page that another user's service returns, opened by a signed-in admin through the dashboard,
//   tries to terminate a job with the viewer's session: nothing happens (the proxy has its own
//   origin; the session cookie needs the page's CSRF token and this origin);
// - a cross-site page's POSTs are refused; a DNS-rebinding-style request (a foreign Host that
//   resolves to the controller) to a controller with auth off is refused with 421.
/// <reference lib="dom" />
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { LocalCluster } from "@marin/iris";
import { waitFor } from "@marin/iris/testing";
import { chromium } from "playwright-core";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CHROMIUM = "/usr/bin/chromium";
const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) {
  if (process.env.CI === "true") throw new Error(`dashboard security test: ${CHROMIUM} is required under CI=true (apt-get install chromium)`);
  console.warn(`dashboard security test skipped: no ${CHROMIUM}`);
}
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"];

/** A page whose script tries, in every way a page can, to POST `body` to `target`, then sets its title to `done:<results>`. */
function attackPage(target: string, body: unknown): string {
  const json = JSON.stringify(JSON.stringify(body));
  return `<!doctype html><html><head><title>loading</title></head><body>
<iframe name="sink" id="sink"></iframe>
<form id="f" method="post" action="${target}" target="sink" enctype="text/plain"><input name='${'{"x":"'}' value='"}'></form>
<script>
(async () => {
  const results = [];
  const body = ${json};
  try { const r = await fetch(${JSON.stringify(target)}, { method: "POST", credentials: "include", headers: { "content-type": "text/plain" }, body }); results.push("fetch:" + r.status); } catch (e) { results.push("fetch:blocked"); }
  try { await fetch(${JSON.stringify(target)}, { method: "POST", mode: "no-cors", credentials: "include", body }); results.push("nocors:sent"); } catch (e) { results.push("nocors:blocked"); }
  try { const s = await fetch(new URL("/api/session", ${JSON.stringify(target)}).href, { credentials: "include" }); results.push("session:" + s.status); } catch (e) { results.push("session:blocked"); }
  try { const r = await fetch(new URL(${JSON.stringify(target)}).pathname, { method: "POST", body }); results.push("own-origin:" + r.status); } catch (e) { results.push("own-origin:blocked"); }
  await new Promise((resolve) => { document.getElementById("sink").onload = resolve; document.getElementById("f").submit(); setTimeout(resolve, 3000); });
  results.push("form:submitted");
  document.title = "done:" + results.join(",");
})();
</script></body></html>`;
}

function serve(html: () => string): Promise<http.Server> {
  const srv = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(html());
  });
  return new Promise((r) => srv.listen(0, "127.0.0.1", () => r(srv)));
}

describe.skipIf(!haveChromium)("the dashboard's origins in Chromium", () => {
  let cluster: LocalCluster;
  let open: LocalCluster;
  let browser: Browser;
  let base: string;
  let dir: string;
  const servers: http.Server[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-dashsec-"));
    cluster = await LocalCluster.start({ workers: 1, httpPort: 0, workerCpuMillis: 2000, workerMemoryBytes: 2 * 1024 ** 3 });
    base = cluster.controller.httpOrigin!;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
    await cluster?.stop();
    await open?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("the one-time login URL signs in once, and not twice", async () => {
    const url = cluster.controller.loginUrl()!;
    expect(url).toMatch(/\/login\?code=[A-Za-z0-9_-]{20,}$/);
    const first = await browser.newContext();
    const p1 = await first.newPage();
    await p1.goto(url);
    await p1.waitForSelector("h1#h-overview");
    expect(p1.url()).toBe(`${base}/`);
    const second = await browser.newContext();
    const p2 = await second.newPage();
    const again = await p2.goto(url);
    expect(again?.status()).toBe(401);
    expect(await p2.textContent("#login-error")).toMatch(/already used/);
    expect(await p2.$("#app")).toBeNull();
    expect((await second.cookies()).find((c) => c.name === "iris_session")).toBeUndefined();
    await first.close();
    await second.close();
  });

  it("a page of another user's service, opened by a signed-in admin, cannot terminate a job with the viewer's session", async () => {
    const job = await cluster.client.submit({ name: "/alice/long", entrypoint: { command: ["sleep", "600"] }, resources: { cpuMillis: 100 } });
    await waitFor("alice's job to run", async () => (await job.status()).state === "RUNNING", { timeoutMs: 60_000 });
    const svc = await serve(() => attackPage(`${base}/api/TerminateJob`, { name: "/alice/long" }));
    servers.push(svc);
    await cluster.client.registerEndpoint("/bob/svc", `127.0.0.1:${(svc.address() as AddressInfo).port}`);
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(cluster.controller.loginUrl()!);
    await page.waitForSelector("h1#h-overview");
    await page.evaluate(() => (location.hash = "#/endpoints"));
    await page.waitForSelector('a[data-endpoint="/bob/svc"]');
    const [tab] = await Promise.all([ctx.waitForEvent("page"), page.click('a[data-endpoint="/bob/svc"]')]);
    await tab.waitForFunction(() => document.title.startsWith("done:"), undefined, { timeout: 60_000 });
    // The service's page is on the proxy's own origin, not the dashboard's.
    expect(new URL(tab.url()).origin).toBe(cluster.controller.proxyOrigin);
    expect(new URL(tab.url()).origin).not.toBe(base);
    const results = (await tab.title()).slice("done:".length).split(",");
    // Cross-origin reads are blocked (no CSRF token to be had), and on its own origin there is no API.
    expect(results).toContain("fetch:blocked");
    expect(results).toContain("session:blocked");
    expect(results).toContain("own-origin:404");
    expect((await job.status()).state).toBe("RUNNING");
    // The viewer's own page still can (its session and CSRF token work).
    await page.evaluate(() => (location.hash = `#/job/${encodeURIComponent("/alice/long")}`));
    await page.waitForSelector('button:has-text("Terminate")');
    page.once("dialog", (d) => void d.accept());
    await page.click('button:has-text("Terminate")');
    await waitFor("alice's job to end by the viewer's own click", async () => (await job.status()).state === "KILLED", { timeoutMs: 30_000 });
    await ctx.close();
  }, 180_000);

  it("a cross-site page's POSTs are refused", async () => {
    const marker = path.join(dir, "cross-site-ran");
    const site = await serve(() => attackPage(`${base}/api/LaunchJob`, { spec: { name: "/admin/evil", entrypoint: { command: { argv: ["touch", marker] } } } }));
    servers.push(site);
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(cluster.controller.loginUrl()!);
    await page.waitForSelector("h1#h-overview");
    // Another site (localhost is not 127.0.0.1's site) the signed-in viewer visits.
    await page.goto(`http://localhost:${(site.address() as AddressInfo).port}/`);
    await page.waitForFunction(() => document.title.startsWith("done:"), undefined, { timeout: 60_000 });
    expect(await page.title()).toContain("fetch:blocked");
    await expect(cluster.client.job("/admin/evil").status()).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(fs.existsSync(marker)).toBe(false);
    await ctx.close();
  }, 120_000);

  it("with auth off, a rebinding-style request (a foreign Host resolving to the controller) is refused with 421", async () => {
    open = await LocalCluster.start({ workers: 1, noAuth: true, httpPort: 0, workerCpuMillis: 1000, workerMemoryBytes: 1024 ** 3 });
    const port = new URL(open.controller.httpOrigin!).port;
    const rebinding = await chromium.launch({ executablePath: CHROMIUM, args: [...ARGS, "--host-resolver-rules=MAP rebind.test 127.0.0.1"] });
    try {
      const page = await rebinding.newPage();
      const res = await page.goto(`http://rebind.test:${port}/`);
      expect(res?.status()).toBe(421);
      const status = await page.evaluate(
        async () =>
          (
            await fetch("/api/LaunchJob", {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ spec: { name: "/admin/rebound", entrypoint: { command: { argv: ["true"] } } } }),
            })
          ).status,
      );
      expect(status).toBe(421);
      await expect(open.client.job("/admin/rebound").status()).rejects.toMatchObject({ code: "NOT_FOUND" });
      // Its own name still works.
      const own = await page.goto(`${open.controller.httpOrigin}/`);
      expect(own?.status()).toBe(200);
    } finally {
      await rebinding.close();
    }
  }, 120_000);
});
