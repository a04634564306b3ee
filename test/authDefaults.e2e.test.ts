// Auth on by default: `iris controller` and a LocalCluster started with no credentials mint an admin
// token, record it in the user's credentials file (mode 0600), and refuse unauthenticated calls on
// gRPC and HTTP; the CLI, `iris worker` and `marin run` (embedded cluster) of the same user work without a
// token; `--no-auth` warns and answers only its own Host names (421).
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { IrisClient, LocalCluster } from "@marin/iris";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DEV = path.join(root, "scripts", "dev.mjs");
const IRIS = path.join(root, "packages", "iris", "src", "cli", "main.ts");
const MARIN = path.join(root, "packages", "marin", "src", "cli", "main.ts");
const EXPERIMENT = path.join(root, "test", "fixtures", "severalHostsExperiment.ts");

let dir: string;
let env: NodeJS.ProcessEnv;

class Proc {
  readonly child: ChildProcess;
  out = "";
  err = "";
  readonly exited: Promise<number | null>;
  constructor(main: string, args: string[], extra: NodeJS.ProcessEnv = {}) {
    this.child = spawn(process.execPath, [DEV, main, ...args], { cwd: root, env: { ...env, ...extra }, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.setEncoding("utf8").on("data", (d: string) => (this.out += d));
    this.child.stderr!.setEncoding("utf8").on("data", (d: string) => (this.err += d));
    this.exited = new Promise((r) => this.child.on("close", (c) => r(c)));
  }
  async waitFor(re: RegExp, stream: "out" | "err" = "out", timeoutMs = 90_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this[stream].match(re);
      if (m) return m;
      if (Date.now() > deadline || this.child.exitCode !== null) throw new Error(`no ${re}: exit ${this.child.exitCode}\nstdout: ${this.out}\nstderr: ${this.err}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    return this.exited;
  }
}

async function run(main: string, args: string[], extra: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string; err: string }> {
  const p = new Proc(main, args, extra);
  const code = await p.exited;
  return { code, out: p.out, err: p.err };
}

function get(port: number, pathName: string, host: string): Promise<number> {
  return new Promise((resolve, reject) =>
    http.get({ host: "127.0.0.1", port, path: pathName, headers: { host } }, (res) => (res.resume(), resolve(res.statusCode ?? 0))).on("error", reject),
  );
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-authdefaults-"));
  // A credentials file of this test's own; no token anywhere in the environment.
  env = { ...process.env, IRIS_CREDENTIALS_FILE: path.join(dir, "config", "iris", "credentials.json") };
  delete env.IRIS_AUTH_TOKEN;
  delete env.IRIS_CONTROLLER_ADDRESS;
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("iris controller with no credentials", () => {
  let controller: Proc;
  let worker: Proc | undefined;
  let address: string;
  let httpPort: number;

  beforeAll(async () => {
    controller = new Proc(IRIS, ["controller", "--port", "0", "--http-port", "0", "--db", path.join(dir, "c.sqlite")]);
    address = (await controller.waitFor(/listening on (127\.0\.0\.1:\d+)/))[1]!;
    httpPort = Number((await controller.waitFor(/dashboard: http:\/\/127\.0\.0\.1:(\d+)\/login\?code=/))[1]);
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await controller?.stop();
  });

  it("mints a token into a 0600 credentials file keyed by its address and says so", async () => {
    expect(controller.out).toMatch(/auth on: minted an admin token, in .*credentials\.json \(mode 0600/);
    const file = env.IRIS_CREDENTIALS_FILE!;
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    const data = JSON.parse(fs.readFileSync(file, "utf8")) as { controllers: Record<string, { token: string; http: string }> };
    expect(data.controllers[address]?.token).toMatch(/^iris-admin\./);
    expect(data.controllers[address]?.http).toBe(`127.0.0.1:${httpPort}`);
  });

  it("refuses unauthenticated calls on gRPC and HTTP", async () => {
    const anon = IrisClient.connect(address, { token: "" });
    await expect(anon.list()).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    anon.close();
    const r = await fetch(`http://127.0.0.1:${httpPort}/api/ListJobs`, { method: "POST", body: "{}" });
    expect(r.status).toBe(401);
  });

  it("the CLI and a worker of the same user work without a token (localhost names the same controller)", async () => {
    worker = new Proc(IRIS, ["worker", "--controller", address.replace("127.0.0.1", "localhost"), "--cpu", "2", "--memory", "2G"]);
    await worker.waitFor(/registered/);
    const job = await run(IRIS, ["job", "run", "--controller", address, "--name", "hello", "--", "sh", "-c", "echo hi-from-task"]);
    expect(job.code, job.out + job.err).toBe(0);
    expect(job.out).toContain("hi-from-task");
    const status = await run(IRIS, ["status"], { IRIS_CONTROLLER_ADDRESS: address.replace("127.0.0.1", "localhost") });
    expect(status.code, status.err).toBe(0);
    expect(status.out).toMatch(/workers: 1 alive/);
  }, 240_000);

  it("removes its entry when it stops", async () => {
    await worker?.stop();
    worker = undefined;
    expect(await controller.stop()).toBe(0);
    const data = JSON.parse(fs.readFileSync(env.IRIS_CREDENTIALS_FILE!, "utf8")) as { controllers: Record<string, unknown> };
    expect(data.controllers[address]).toBeUndefined();
  });
});

describe("LocalCluster with no options", () => {
  it("has auth on, exposes its token, and refuses unauthenticated HTTP and gRPC calls", async () => {
    const prev = process.env.IRIS_CREDENTIALS_FILE;
    process.env.IRIS_CREDENTIALS_FILE = env.IRIS_CREDENTIALS_FILE;
    const cluster = await LocalCluster.start({ httpPort: 0 });
    try {
      expect(cluster.token).toMatch(/^iris-admin\./);
      const anon = IrisClient.connect(cluster.address, { token: "" });
      await expect(anon.list()).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
      anon.close();
      expect((await fetch(`http://${cluster.controller.httpAddress}/api/ListJobs`, { method: "POST", body: "{}" })).status).toBe(401);
      // A client of the same user finds the token by address, `localhost` or not.
      const same = IrisClient.connect(cluster.address.replace("127.0.0.1", "localhost"));
      expect(Array.isArray(await same.list())).toBe(true);
      same.close();
      expect(fs.statSync(env.IRIS_CREDENTIALS_FILE!).mode & 0o777).toBe(0o600);
    } finally {
      await cluster.stop();
      process.env.IRIS_CREDENTIALS_FILE = prev;
    }
  }, 120_000);
});

describe("marin run", () => {
  it("runs a step with resources on its embedded cluster (auth on, a minted token) without the user typing a token", async () => {
    const marin = await run(MARIN, ["run", EXPERIMENT, "--prefix", path.join(dir, "marin-out"), "--no-dashboard"]);
    expect(marin.code, marin.out + marin.err).toBe(0);
    // The step ran as an iris task of the embedded cluster.
    expect(marin.out).toMatch(/hosts\/remote +ran/);
    expect(marin.out).toMatch(/worker: "/);
  }, 240_000);
});

describe("--no-auth", () => {
  it("warns, writes no credentials, and answers only its own Host names (421 otherwise)", async () => {
    const creds = path.join(dir, "noauth-credentials.json");
    const c = new Proc(IRIS, ["controller", "--no-auth", "--port", "0", "--http-port", "0", "--db", path.join(dir, "n.sqlite")], { IRIS_CREDENTIALS_FILE: creds });
    try {
      await c.waitFor(/listening on 127\.0\.0\.1:\d+/);
      const port = Number((await c.waitFor(/dashboard: http:\/\/127\.0\.0\.1:(\d+)\//))[1]);
      expect(c.err).toMatch(/WARNING: auth is OFF \(--no-auth\)/);
      expect(c.out).toMatch(/auth off/);
      expect(fs.existsSync(creds)).toBe(false);
      expect(await get(port, "/", `127.0.0.1:${port}`)).toBe(200);
      expect(await get(port, "/", `localhost:${port}`)).toBe(200);
      expect(await get(port, "/", `[::1]:${port}`)).toBe(200);
      expect(await get(port, "/", `rebind.attacker.example:${port}`)).toBe(421);
      expect(await get(port, "/api/session", "attacker.example")).toBe(421);
    } finally {
      await c.stop();
    }
  }, 120_000);
});
