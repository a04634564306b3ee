// The iris web dashboard in headless Chromium (Debian `chromium`, driven by playwright-core): a
// LocalCluster with a token; sign in; live log lines and chart points; a failed job's failure
// kind; a marin run's DAG; the playground (a served model; Stop mid-stream); a wrong token; the
// narrow layout. Screenshots of each view go to
// test-artifacts/dashboard/ (git-ignored); the overview's is the one in packages/iris/README.md.
/// <reference lib="dom" />
// (page.evaluate callbacks run in the browser: they use its globals.)
import { spawn } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { LocalCluster } from "@marin/iris";
import { waitFor } from "@marin/iris/testing";
import { chromium } from "playwright-core";
import type { Browser, BrowserContext, Page, Request, Response } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ARTIFACTS = path.join(root, "test-artifacts", "dashboard");
const TOKEN = "dash-token-123";
const CHROMIUM = "/usr/bin/chromium";
const TASK = path.join(root, "test", "fixtures", "dashboardTask.ts");
const EXPERIMENT = path.join(root, "test", "fixtures", "dashboardExperiment.ts");

/** Runs the marin CLI from source; resolves with its exit code and output. */
function marin(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(root, "scripts", "dev.mjs"), path.join(root, "packages", "marin", "src", "cli", "main.ts"), ...args], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

// Without Debian's chromium the browser test is skipped with a notice (`apt-get install chromium`;
// .ci/run installs it), except under CI=true, where that is a failure.
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  if (process.env.CI === "true") throw new Error(`dashboard test: ${CHROMIUM} is required under CI=true (apt-get install chromium)`);
  console.warn(`dashboard test skipped: no ${CHROMIUM} (apt-get install --no-install-recommends chromium)`);
}

describe.skipIf(!haveChromium)("iris dashboard in Chromium", () => {
  let cluster: LocalCluster;
  let base: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let tmp: string;
  const consoleErrors: string[] = [];
  const offMachine: string[] = [];

  const shot = (name: string, p: Page = page) => p.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
  /** Goes to a view by its hash (no reload: the streams stay open). */
  const view = async (hash: string) => {
    await page.evaluate((h) => (location.hash = h), hash);
  };

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    tmp = mkdtempSync(path.join(os.tmpdir(), "iris-dash-"));
    cluster = await LocalCluster.start({ workers: 1, token: TOKEN, httpPort: 0, workerCpuMillis: 4000, workerMemoryBytes: 4 * 1024 ** 3 });
    base = `http://${cluster.controller.httpAddress}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text());
    });
    page.on("pageerror", (e) => consoleErrors.push(String(e)));
    page.on("request", (r) => {
      if (!r.url().startsWith(base) && !r.url().startsWith(cluster.controller.proxyOrigin!) && !r.url().startsWith("data:") && r.url() !== "about:blank") offMachine.push(r.url());
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await cluster?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it("a wrong token shows an error and no data", async () => {
    const other = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await other.newPage();
    const first = await p.goto(`${base}/`);
    expect(first?.status()).toBe(200);
    await p.fill("#token", "not-the-token");
    await p.click("button[type=submit]");
    await p.waitForSelector("#login-error");
    expect(await p.textContent("#login-error")).toMatch(/wrong token/i);
    expect(await p.$("#app")).toBeNull();
    // No cookie was set: the API still refuses this browser.
    const status = await p.evaluate(async () => (await fetch("/api/ListJobs", { method: "POST", body: "{}" })).status);
    expect(status).toBe(401);
    await shot("login-wrong-token", p);
    await other.close();
  });

  it("signs in with the token and shows the overview (workers, capacity, jobs by state)", async () => {
    const res = await page.goto(`${base}/`);
    expect(res?.status()).toBe(200);
    await page.fill("#token", TOKEN);
    await Promise.all([page.waitForURL(`${base}/`), page.click("button[type=submit]")]);
    await page.waitForSelector("h1#h-overview");
    await page.waitForFunction(() => document.querySelector(".card .big")?.textContent === "1");
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === "iris_session");
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe("Strict");
    expect(await page.textContent("main")).toContain("Capacity");
  });

  it("shows a job's log lines and chart points as they arrive, without a reload", async () => {
    const gate1 = path.join(tmp, "gate1");
    const gate2 = path.join(tmp, "gate2");
    const job = await cluster.client.submit({ name: "train-demo", entrypoint: { module: TASK, export: "train", args: { gate1, gate2 } }, resources: { cpuMillis: 500 } });
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
    await view(`#/logs/${encodeURIComponent(job.name)}`);
    await page.waitForFunction(() => document.querySelector("pre.log")?.textContent?.includes("training step 3"), undefined, { timeout: 60_000 });
    expect(await page.textContent("pre.log")).not.toContain("gate one opened");
    const t0 = Date.now();
    writeFileSync(gate1, "");
    await page.waitForFunction(() => document.querySelector("pre.log")?.textContent?.includes("gate one opened"), undefined, { timeout: 30_000, polling: 20 });
    // From the gate to the line on screen: the task's 50 ms poll, the worker's log shipping, the
    // controller, the SSE stream, one animation frame. The issue asks for "within a second".
    const latencyMs = Date.now() - t0;
    console.log(`dashboard: a new log line was on screen ${latencyMs} ms after the gate opened`);
    expect(latencyMs).toBeLessThan(2000);
    await shot("logs");
    // The overview while the job runs (the README's screenshot).
    await view("#/");
    await page.waitForFunction(() => /RUNNING\s*1/.test(document.querySelector("ul.states")?.textContent ?? ""));
    await shot("overview");

    await view(`#/job/${encodeURIComponent(job.name)}`);
    await page.waitForSelector('figure[data-chart="Loss"][data-points="3"]', { timeout: 30_000 });
    writeFileSync(gate2, "");
    await page.waitForSelector('figure[data-chart="Loss"][data-points="8"]', { timeout: 30_000 });
    expect(await page.textContent('[data-testid="current-step"]')).toBe("8");
    for (const chart of ["Learning rate", "Tokens per second", "MFU (%)"]) expect(await page.$(`figure[data-chart="${chart}"]`)).not.toBeNull();
    await page.waitForFunction(() => document.querySelector("#h-job .badge")?.textContent === "SUCCEEDED", undefined, { timeout: 30_000 });
    expect(await page.textContent("main")).toContain("step 8");
    expect(await page.textContent("main")).toContain('"steps":8');
    // Still the same document: everything came over the streams.
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(42);
    await shot("job-training");
  });

  it("shows a failed job's failure kind and exit code", async () => {
    const job = await cluster.client.submit({ name: "fails", entrypoint: { command: ["sh", "-c", "echo about to fail; exit 3"] }, resources: { cpuMillis: 200 } });
    await view(`#/job/${encodeURIComponent(job.name)}`);
    await page.waitForSelector('[data-failure="APP_EXIT"]', { timeout: 60_000 });
    expect(await page.textContent('[data-failure="APP_EXIT"]')).toBe("APP_EXIT(3)");
    await page.waitForFunction(() => document.querySelector("#h-job .badge")?.textContent === "FAILED");
    await shot("job-failed");
    await view("#/jobs?state=FAILED");
    await page.waitForFunction(() => document.querySelector("main table")?.textContent?.includes("/fails"));
    expect(await page.textContent("main table")).not.toContain("train-demo");
    await shot("jobs-filtered");
  });

  it("shows workers and endpoints", async () => {
    await cluster.client.registerEndpoint("/root/demo/serve/tiny", "127.0.0.1:9");
    await view("#/workers");
    await page.waitForSelector("#h-workers");
    await page.waitForFunction(() => document.querySelector("main table tbody tr")?.textContent?.includes("ALIVE"));
    await shot("workers");
    await view("#/endpoints");
    await page.waitForFunction(() => document.querySelector("main")?.textContent?.includes("/root/demo/serve/tiny"));
    expect(await page.getAttribute('a[href^="#/playground/"]', "href")).toBe(`#/playground/${encodeURIComponent("/root/demo/serve/tiny")}`);
    await shot("endpoints");
  });

  it("shows a marin run as a DAG with every step's final state", async () => {
    const prefix = path.join(tmp, "marin-out");
    const r = await marin(["run", EXPERIMENT, "--prefix", prefix, "--cluster", cluster.address, "--dashboard", base], { IRIS_AUTH_TOKEN: TOKEN });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    await view("#/pipelines");
    await page.waitForSelector('[data-testid="pipeline"][data-state="finished"]', { timeout: 30_000 });
    const states = await page.$$eval("g.node", (nodes) => Object.fromEntries(nodes.map((n) => [n.getAttribute("data-step"), n.getAttribute("data-state")])));
    expect(states).toEqual({ "dash/source": "done", "dash/square": "done", "dash/broken": "failed", "dash/after-broken": "dep_failed" });
    await page.focus('g.node[data-step="dash/broken"]');
    await page.keyboard.press("Enter");
    await page.waitForSelector('[data-testid="step-details"]');
    const details = await page.textContent('[data-testid="step-details"]');
    expect(details).toContain("this step fails on purpose");
    expect(details).toContain(path.join(prefix, "dash/broken-"));
    expect(details).toMatch(/why: /);
    await shot("pipeline");
  });

  it("marin run's embedded cluster prints the dashboard URL on its first line", async () => {
    const r = await marin(["run", EXPERIMENT, "--prefix", path.join(tmp, "embedded"), "--only", "dash/square"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr.split("\n")[0]).toMatch(/^marin: dashboard at http:\/\/127\.0\.0\.1:\d+\/login\?code=[A-Za-z0-9_-]+#\/pipelines\//);
  });

  it("the playground streams a completion and a chat reply from a served tiny model through the controller's proxy", async () => {
    const lev = await import("@marin/levanter");
    await lev.selectBackend({ force: "wasm" });
    const ckpt = path.join(tmp, "tiny-lm", "step-1");
    const rng = new lev.Rng(1);
    const model = lev.TransformerLm.init(lev.resolveModelConfig(lev.ModelConfigSchema.parse({ nLayers: 1, dModel: 16, nHeads: 2, seqLen: 64 }), 257), rng);
    const optimizer = new lev.AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 0, decayMask: lev.defaultDecayMask });
    await lev.saveTrainState(ckpt, false, { step: 1, model, optimizer, rng, tokenizer: "byte", loader: { seed: 0, step: 1, batchSize: 1, seqLen: 64 } });
    model.dispose();
    optimizer.dispose();
    const { createInferenceServer } = await import("@marin/levanter/serve");
    const server = await createInferenceServer({ checkpoint: ckpt });
    try {
      await server.ready;
      const name = "/root/demo/serve/tiny-lm";
      await cluster.client.registerEndpoint(name, server.url.replace(/^http:\/\//, ""));
      // The page calls the model through the controller's endpoint proxy on its own origin (a
      // capability URL, /cap/<token>/…; never the session cookie); the test only watches what it
      // sends and what comes back.
      const proxied = `${cluster.controller.proxyOrigin}/cap/`;
      const bodies: Record<string, unknown>[] = [];
      const statuses: number[] = [];
      const onRequest = (r: Request): void => {
        if (r.url().startsWith(proxied) && r.method() === "POST") bodies.push(r.postDataJSON() as Record<string, unknown>);
      };
      const onResponse = (r: Response): void => {
        if (r.url().startsWith(proxied) && r.request().method() === "POST") statuses.push(r.status());
      };
      page.on("request", onRequest);
      page.on("response", onResponse);
      await view("#/endpoints");
      await page.click(`a[href="#/playground/${encodeURIComponent(name)}"]`);
      await page.waitForSelector("#h-play");
      await page.fill('label:has-text("Max tokens") input', "6");
      await page.fill('label:has-text("Temperature") input', "0");
      await page.fill("textarea", "Once upon");
      await page.click('button:has-text("Generate")');
      await page.waitForFunction(() => (document.querySelector('[data-testid="completion"]')?.textContent ?? "").length > "Once upon".length, undefined, { timeout: 30_000 });
      await page.waitForSelector('button:has-text("Generate"):not([disabled])');
      expect(bodies[0]).toMatchObject({ prompt: "Once upon", stream: true, temperature: 0, top_k: 40, top_p: 1, max_tokens: 6 });
      await shot("playground");
      await page.click('button[role="tab"]:has-text("Chat")');
      await page.fill("textarea", "hello");
      await page.click('button:has-text("Send")');
      await page.waitForFunction(() => (document.querySelector(".chat .msg.assistant")?.textContent ?? "").replace("assistant", "").trim().length > 0, undefined, {
        timeout: 30_000,
      });
      expect(bodies[1]).toMatchObject({ messages: [{ role: "user", content: "hello" }], stream: true });
      expect(statuses).toEqual([200, 200]);
      page.off("request", onRequest);
      page.off("response", onResponse);
    } finally {
      await server.close();
    }
  });

  it("the playground's Stop button ends a stream: the text stops growing and the model's server sees the request closed", async () => {
    // A slow OpenAI-style server (one token every 100 ms, up to 300), so that Stop comes mid-stream.
    let served = 0;
    let closedEarly = false;
    const slow = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      let n = 0;
      const timer = setInterval(() => {
        if (n === 300) {
          clearInterval(timer);
          res.end("data: [DONE]\n\n");
          return;
        }
        n++;
        served = n;
        res.write(`data: ${JSON.stringify({ object: "text_completion", choices: [{ index: 0, text: " t", finish_reason: null }] })}\n\n`);
      }, 100);
      res.on("close", () => {
        clearInterval(timer);
        if (n < 300) closedEarly = true;
      });
    });
    await new Promise<void>((r) => slow.listen(0, "127.0.0.1", r));
    try {
      const name = "/root/demo/serve/slow";
      await cluster.client.registerEndpoint(name, `127.0.0.1:${(slow.address() as AddressInfo).port}`);
      await view("#/endpoints");
      await page.click(`a[href="#/playground/${encodeURIComponent(name)}"]`);
      await page.waitForSelector("#h-play");
      await page.click('button[role="tab"]:has-text("Completion")');
      await page.fill("textarea", "Slowly");
      await page.click('button:has-text("Generate")');
      const text = () => page.evaluate(() => document.querySelector('[data-testid="completion"]')?.textContent ?? "");
      // A few tokens in, press Stop.
      await page.waitForFunction(() => (document.querySelector('[data-testid="completion"]')?.textContent ?? "").split("t").length > 3, undefined, { timeout: 30_000 });
      await page.click('button:has-text("Stop")');
      await page.waitForSelector('button:has-text("Generate"):not([disabled])', { timeout: 10_000 });
      // The abort reached the model's server through the controller's proxy...
      await waitFor("the model's server to see the request closed", () => closedEarly);
      expect(closedEarly).toBe(true);
      expect(served).toBeLessThan(300);
      // ...and nothing more is shown: the text is the same after five more token intervals (a
      // window to observe that nothing arrives, not a wait for something to happen).
      const atStop = await text();
      const servedAtStop = served;
      await page.waitForTimeout(500);
      expect(await text()).toBe(atStop);
      expect(served).toBe(servedAtStop);
      expect(await page.locator(".error").count()).toBe(0);
    } finally {
      await new Promise<void>((r) => slow.close(() => r()));
    }
  });

  it("the narrow layout (400 px) has no horizontal scroll", async () => {
    await page.setViewportSize({ width: 400, height: 800 });
    for (const [hash, name] of [
      ["#/", "overview"],
      ["#/jobs", "jobs"],
      [`#/job/${encodeURIComponent("/root/train-demo")}`, "job"],
      [`#/logs/${encodeURIComponent("/root/train-demo")}`, "logs"],
      ["#/workers", "workers"],
      ["#/endpoints", "endpoints"],
      ["#/pipelines", "pipelines"],
    ] as const) {
      await view(hash);
      await page.waitForSelector("main h1");
      await page.waitForFunction(() => !document.querySelector('main [role="status"]')?.textContent?.startsWith("Loading"));
      const { scroll, width } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
      expect(scroll, `${name}: page ${scroll}px wide in a ${width}px window`).toBeLessThanOrEqual(width);
      await shot(`narrow-${name}`);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it("loaded nothing from off the machine and logged no console error", () => {
    expect(offMachine).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
