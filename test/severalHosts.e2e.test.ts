// Several hosts on one machine: network namespaces joined by veth pairs, an iris controller in one,
// two workers in two others (each with its own state directory, bundle cache and a working
// directory outside the checkout), the test itself in the root namespace. A module job whose code
// exists only in its bundle succeeds; a marin experiment with --cluster runs its iris step there,
// from the bundle; cutting one worker's link makes its attempts WORKER_LOST and they finish on the
// other. Skipped with a notice where namespaces cannot be made (not root, no iproute2), except
// under CI=true, where that is a failure.
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { IrisClient } from "@marin/iris";
import { waitFor } from "@marin/iris/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DEV = path.join(root, "scripts", "dev.mjs");
const IRIS_CLI = path.join(root, "packages", "iris", "src", "cli", "main.ts");
const MARIN_CLI = path.join(root, "packages", "marin", "src", "cli", "main.ts");
const EXPERIMENT = path.join(root, "test", "fixtures", "severalHostsExperiment.ts");
const TOKEN = "several-hosts-token";
const EMPTY_LOCKFILE = "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n\nimporters:\n\n  .: {}\n";

const tag = randomBytes(2).toString("hex");
const NS = { controller: `iris${tag}c`, w1: `iris${tag}w1`, w2: `iris${tag}w2` };
/** 10.231.<net>.1 is the controller's end of each link, .2 the other end. */
const LINKS = [
  { net: 0, ns: undefined, name: `ir${tag}r` },
  { net: 1, ns: NS.w1, name: `ir${tag}a` },
  { net: 2, ns: NS.w2, name: `ir${tag}b` },
] as const;

function ip(...args: string[]): void {
  execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
}

/** Whether this process may create network namespaces (probed once, then removed). */
function namespacesPermitted(): { ok: true } | { ok: false; why: string } {
  const probe = `iris${tag}p`;
  const r = spawnSync("ip", ["netns", "add", probe], { encoding: "utf8" });
  if (r.error !== undefined) return { ok: false, why: `cannot run ip (${r.error.message}); install iproute2` };
  if (r.status !== 0) return { ok: false, why: `ip netns add failed: ${r.stderr.trim()}` };
  spawnSync("ip", ["netns", "del", probe]);
  return { ok: true };
}

const permitted = namespacesPermitted();
if (!permitted.ok) {
  if (process.env.CI === "true") throw new Error(`several-hosts test: network namespaces are required under CI=true: ${permitted.why}`);
  console.warn(`NOTICE: skipping the several-hosts test (network namespaces not permitted here): ${permitted.why}`);
}

function setUpNetwork(): void {
  for (const ns of Object.values(NS)) ip("netns", "add", ns);
  ip("-n", NS.controller, "link", "set", "lo", "up");
  for (const l of LINKS) {
    const peer = `${l.name}p`;
    ip("link", "add", l.name, "type", "veth", "peer", "name", peer);
    ip("link", "set", l.name, "netns", NS.controller);
    ip("-n", NS.controller, "addr", "add", `10.231.${l.net}.1/24`, "dev", l.name);
    ip("-n", NS.controller, "link", "set", l.name, "up");
    if (l.ns === undefined) {
      ip("addr", "add", `10.231.${l.net}.2/24`, "dev", peer);
      ip("link", "set", peer, "up");
    } else {
      ip("link", "set", peer, "netns", l.ns);
      ip("-n", l.ns, "addr", "add", `10.231.${l.net}.2/24`, "dev", peer);
      ip("-n", l.ns, "link", "set", peer, "up");
      ip("-n", l.ns, "link", "set", "lo", "up");
    }
  }
}

function tearDownNetwork(): void {
  // Removing a namespace removes the veth ends in it, and with them their peers.
  for (const ns of Object.values(NS)) spawnSync("ip", ["netns", "del", ns]);
  for (const l of LINKS) spawnSync("ip", ["link", "del", `${l.name}p`]);
}

/** A daemon started with `ip netns exec NS node scripts/dev.mjs …`. */
interface Daemon {
  proc: ChildProcess;
  output(): string;
  /** Resolves with the first match of `re` in its stdout. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  stop(): Promise<void>;
}

function startIn(ns: string, cwd: string, cli: string, args: string[]): Daemon {
  const proc = spawn("ip", ["netns", "exec", ns, process.execPath, DEV, cli, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  return {
    proc,
    output: () => `${out}\n--- stderr\n${err}`,
    waitFor: (re, timeoutMs = 60_000) =>
      waitFor(
        `${cli} ${args[0]} in ${ns} to print ${re}`,
        () => {
          if (proc.exitCode !== null) throw new Error(`${args[0]} in ${ns} exited ${proc.exitCode}:\n${out}\n${err}`);
          return re.exec(out) ?? undefined;
        },
        { timeoutMs, intervalMs: 50 },
      ),
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 8000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function makeWorkspace(dir: string, files: Record<string, string>): string {
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  const git = (...args: string[]): void => void execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q");
  git("add", "-A");
  git("-c", "user.name=iris-test", "-c", "user.email=iris-test@localhost", "commit", "-qm", "workspace");
  return dir;
}

describe.skipIf(!permitted.ok)("several hosts on one machine (network namespaces)", () => {
  let scratch: string;
  let client: IrisClient;
  let address: string;
  const daemons: Daemon[] = [];
  const workerIds: Record<"w1" | "w2", string> = { w1: "", w2: "" };

  beforeAll(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), "iris-hosts-"));
    setUpNetwork();
    const home = (name: string): string => {
      const d = path.join(scratch, name);
      fs.mkdirSync(path.join(d, "cwd"), { recursive: true });
      return d;
    };
    const c = home("controller");
    const controller = startIn(NS.controller, path.join(c, "cwd"), IRIS_CLI, [
      "controller",
      "--host",
      "0.0.0.0",
      "--port",
      "0",
      "--db",
      path.join(c, "state", "iris.sqlite"),
      "--token",
      TOKEN,
      "--worker-timeout",
      "2",
    ]);
    daemons.push(controller);
    const port = (await controller.waitFor(/listening on \S+:(\d+)/))[1]!;
    address = `10.231.0.1:${port}`;
    for (const [w, net] of [
      ["w1", 1],
      ["w2", 2],
    ] as const) {
      const d = home(w);
      const worker = startIn(NS[w], path.join(d, "cwd"), IRIS_CLI, [
        "worker",
        "--controller",
        `10.231.${net}.1:${port}`,
        "--token",
        TOKEN,
        "--cpu",
        "1",
        "--memory",
        "4G",
        "--state-dir",
        path.join(d, "state"),
        "--bundle-cache",
        path.join(d, "bundles"),
        "--advertise-host",
        `10.231.${net}.2`,
        // The workspace's prepare script builds every package; the tasks here run from source.
        "--bundle-install-flag=--ignore-scripts",
      ]);
      daemons.push(worker);
      workerIds[w] = (await worker.waitFor(/iris worker (\S+) registered/))[1]!;
    }
    client = IrisClient.connect(address, { token: TOKEN });
  }, 120_000);

  afterAll(async () => {
    client?.close();
    await Promise.all(
      daemons
        .splice(0)
        .reverse()
        .map((d) => d.stop()),
    );
    tearDownNetwork();
    fs.rmSync(scratch, { recursive: true, force: true });
  }, 60_000);

  it("runs a module job whose code exists only in its bundle", async () => {
    const ws = makeWorkspace(path.join(scratch, "ws"), {
      "package.json": JSON.stringify({ name: "ws", private: true, type: "module" }),
      "pnpm-lock.yaml": EMPTY_LOCKFILE,
      "src/job.ts":
        "import os from 'node:os';\nexport function main(a: { x: number }) { return { y: a.x * 2, cwd: process.cwd(), host: process.env.IRIS_WORKER_ID, pid: process.pid, node: os.platform() }; }\n",
    });
    const t0 = Date.now();
    const job = await client.submit({ name: "hosts-module", entrypoint: { module: path.join(ws, "src/job.ts"), export: "main", args: { x: 21 } } }, { bundle: ws });
    fs.rmSync(ws, { recursive: true, force: true });
    const st = await job.wait({ timeoutMs: 60_000 });
    expect(st.state, JSON.stringify(st.tasks[0])).toBe("SUCCEEDED");
    const [r] = (await job.results()) as { y: number; cwd: string; host: string }[];
    expect(r!.y).toBe(42);
    const w = r!.host === workerIds.w1 ? "w1" : "w2";
    expect(r!.cwd.startsWith(path.join(scratch, w, "bundles"))).toBe(true);
    console.log(`several hosts: bundled module job (tiny workspace) submitted → SUCCEEDED in ${Date.now() - t0} ms`);
  }, 90_000);

  it("runs a marin experiment's iris step on the cluster, from the bundle of this checkout", async () => {
    const prefix = path.join(scratch, "marin-out");
    const t0 = Date.now();
    const r = spawnSync(process.execPath, [DEV, MARIN_CLI, "run", EXPERIMENT, "--prefix", prefix, "--cluster", address], {
      cwd: path.join(scratch, "controller", "cwd"),
      env: { ...process.env, IRIS_AUTH_TOKEN: TOKEN },
      encoding: "utf8",
      timeout: 150_000,
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/hosts\/remote\s+ran/);
    const jobs = await client.list();
    const stepJob = jobs.find((j) => j.name.includes("marin-hosts.remote-") && j.state === "SUCCEEDED");
    expect(stepJob, JSON.stringify(jobs.map((j) => [j.name, j.state]))).toBeDefined();
    const [where] = (await client.job(stepJob!.name).results()) as { worker: string; cwd: string }[];
    expect(Object.values(workerIds)).toContain(where!.worker);
    // The step ran from the bundle in that worker's cache, not from this checkout.
    const w = where!.worker === workerIds.w1 ? "w1" : "w2";
    expect(where!.cwd.startsWith(path.join(scratch, w, "bundles"))).toBe(true);
    const build: string[] = [];
    for await (const e of client.job(stepJob!.name).logs()) if (e.line.startsWith("[iris build]")) build.push(e.line);
    expect(build.some((l) => l.includes("pnpm install --frozen-lockfile --ignore-scripts --offline"))).toBe(true);
    console.log(
      `several hosts: marin run --cluster (bundle of this checkout, offline install) in ${Date.now() - t0} ms; build: ${build.filter((l) => / in \d+ ms/.test(l)).join(" | ")}`,
    );
  }, 180_000);

  it("cutting one worker's link makes its attempts WORKER_LOST; they finish on the other", async () => {
    const script = `if [ "$IRIS_WORKER_ID" = "${workerIds.w1}" ]; then exec sleep 600; fi; echo "done on $IRIS_WORKER_ID"`;
    const job = await client.submit({ name: "hosts-cut", replicas: 2, resources: { cpuMillis: 1000 }, entrypoint: { command: ["sh", "-c", script] }, maxRetriesPreemption: 3 });
    // One task per worker (each offers one core): wait until w1 holds one.
    await waitFor("a task running on w1", async () => (await job.status()).tasks.some((t) => t.workerId === workerIds.w1 && t.state === "RUNNING"), { timeoutMs: 30_000 });
    const t0 = Date.now();
    ip("-n", NS.controller, "link", "set", LINKS[1].name, "down");
    const st = await job.wait({ timeoutMs: 60_000 });
    expect(st.state).toBe("SUCCEEDED");
    const moved = st.tasks.find((t) => t.attempts.length > 1)!;
    expect(moved.attempts[0]).toMatchObject({ workerId: workerIds.w1, state: "WORKER_LOST", failureKind: "WORKER_LOST" });
    expect(moved.attempts.at(-1)).toMatchObject({ workerId: workerIds.w2, state: "SUCCEEDED" });
    console.log(`several hosts: link cut → moved task SUCCEEDED on the other worker in ${Date.now() - t0} ms (worker timeout 2 s)`);
  }, 90_000);
});
