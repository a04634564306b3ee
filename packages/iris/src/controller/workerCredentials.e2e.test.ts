// Worker credentials end to end: a real controller with an auth file on loopback, workers played
// by raw gRPC clients (so that each call's credential is exact) and real workers. A shared worker
// token only registers, each registration gets a session bound to its worker and process, a
// session acts only for its own worker, minted registration credentials are single-use, revoking
// ends a worker, and sessions survive a controller restart.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { IrisError } from "../errors.ts";
import { createWorkerControlClient, unary, type WorkerControlServiceClient } from "../internal/rpc.ts";
import { waitFor } from "../testing.ts";
import { Worker } from "../worker/worker.ts";
import { sha256Hex } from "./auth.ts";
import { Controller } from "./controller.ts";

const ADMIN = "admin-token-0123456789";
const ALICE = "alice-token-0123456789";
const WORKER = "worker-token-0123456789";

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "OK";
  } catch (e) {
    if (e instanceof IrisError) return e.code;
    throw e;
  }
}

describe("iris worker credentials", () => {
  let dir: string;
  let authFile: string;
  let controller: Controller;
  const rpcClients: WorkerControlServiceClient[] = [];
  const clients: IrisClient[] = [];
  const wc = (token: string): WorkerControlServiceClient => {
    const c = createWorkerControlClient(controller.address, { token });
    rpcClients.push(c);
    return c;
  };
  const register = (token: string, workerId: string, instanceId: string, cpuMillis = 1000) =>
    unary(wc(token), "registerWorker", { workerId, host: "127.0.0.1", attributes: { pool: workerId }, capacity: { cpuMillis, memoryBytes: 1024 ** 3 }, instanceId });
  const reconcile = (token: string, workerId: string, observed: object[] = []) => unary(wc(token), "reconcile", { workerId, observed, health: { healthy: true, error: "" } });
  const pushLogs = (token: string, lines: { attemptUid: string; stream: string; line: string; timeMs: number }[]): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const call = wc(token).pushLogs((err, res) =>
        err ? reject(new IrisError(err.code === 7 ? "PERMISSION_DENIED" : err.code === 16 ? "UNAUTHENTICATED" : "UNKNOWN", err.details)) : resolve(res),
      );
      call.write({ lines });
      call.end();
    });
  const fetchBundle = (token: string, bundleId: string): Promise<string> =>
    new Promise((resolve) => {
      const call = wc(token).fetchBundle({ bundleId });
      call.on("data", () => undefined);
      call.on("error", (e: { code: number }) => resolve(e.code === 7 ? "PERMISSION_DENIED" : e.code === 16 ? "UNAUTHENTICATED" : String(e.code)));
      call.on("end", () => resolve("OK"));
    });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-wcred-"));
    authFile = path.join(dir, "auth.yaml");
    fs.writeFileSync(
      authFile,
      [
        "tokens:",
        `  - { user: root, role: admin, sha256: ${sha256Hex(ADMIN)} }`,
        `  - { user: alice, role: user, token: ${ALICE} }`,
        `  - { user: fleet, role: worker, sha256: ${sha256Hex(WORKER)} }`,
        "",
      ].join("\n"),
    );
    controller = await Controller.start({ host: "127.0.0.1", port: 0, dbPath: path.join(dir, "c.sqlite"), authFile, workerTimeoutMs: 60_000 });
  });
  afterAll(async () => {
    for (const c of rpcClients) c.close();
    for (const c of clients) c.close();
    await controller?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a shared worker token registers many workers, each swapping it for its own session; alone it may only register", async () => {
    const a = await register(WORKER, "wa", "inst-a", 0);
    const b = await register(WORKER, "wb", "inst-b", 0);
    expect(a.sessionToken).toMatch(/^iris-wsess\./);
    expect(b.sessionToken).toMatch(/^iris-wsess\./);
    expect(a.sessionToken).not.toBe(b.sessionToken);
    // The shared token itself acts for no worker.
    expect(await codeOf(reconcile(WORKER, "wa"))).toBe("PERMISSION_DENIED");
    expect(await codeOf(unary(wc(WORKER), "deregisterWorker", { workerId: "wa" }))).toBe("PERMISSION_DENIED");
    expect(await codeOf(pushLogs(WORKER, []))).toBe("PERMISSION_DENIED");
    expect(await codeOf(reconcile(a.sessionToken, "wa"))).toBe("OK");
    // A session is no client token either.
    const asClient = IrisClient.connect(controller.address, { token: a.sessionToken });
    clients.push(asClient);
    expect(await codeOf(asClient.list())).toBe("PERMISSION_DENIED");
  });

  it("a second worker using another's session is refused: no registering with it, no acting for the other", async () => {
    const a = await register(WORKER, "wc", "inst-c", 0);
    const b = await register(WORKER, "wd", "inst-d", 0);
    // Another process presenting wc's session to register (as wc, or as itself) is refused.
    expect(await codeOf(register(a.sessionToken, "wc", "thief-instance"))).toBe("PERMISSION_DENIED");
    expect(await codeOf(register(a.sessionToken, "wd", "inst-d"))).toBe("PERMISSION_DENIED");
    // The same process registering again with its session keeps it.
    const again = await register(a.sessionToken, "wc", "inst-c", 0);
    expect(again.sessionToken).toBe("");
    expect(await codeOf(reconcile(a.sessionToken, "wc"))).toBe("OK");
    // wd's session acts for wd only.
    expect(await codeOf(reconcile(b.sessionToken, "wc"))).toBe("PERMISSION_DENIED");
    expect(await codeOf(unary(wc(b.sessionToken), "deregisterWorker", { workerId: "wc" }))).toBe("PERMISSION_DENIED");
    const watchCode = await new Promise<number>((resolve) => {
      const call = wc(b.sessionToken).watchAssignments({ workerId: "wc" });
      call.on("error", (e: { code: number }) => resolve(e.code));
      call.on("data", () => resolve(0));
    });
    expect(watchCode).toBe(7);
    expect((await unary(wc(ADMIN), "reconcile", { workerId: "wc", observed: [] })).run).toEqual([]);
    // A new process of wc (a restart) registers with the worker token: the old session is refused.
    const restarted = await register(WORKER, "wc", "inst-c2", 0);
    expect(await codeOf(reconcile(a.sessionToken, "wc"))).toBe("UNAUTHENTICATED");
    expect(await codeOf(reconcile(restarted.sessionToken, "wc"))).toBe("OK");
  });

  it("a worker never sees an attempt not assigned to it, and cannot report, log or fetch for one", async () => {
    const alice = IrisClient.connect(controller.address, { token: ALICE });
    clients.push(alice);
    // A bundle of a tiny git repository, so that the attempt has something to fetch.
    const repo = path.join(dir, "repo");
    fs.mkdirSync(repo);
    fs.writeFileSync(path.join(repo, "main.sh"), "echo hi\n");
    execFileSync("git", ["init", "-q"], { cwd: repo });
    execFileSync("git", ["add", "main.sh"], { cwd: repo });
    const bundle = await alice.uploadBundle(repo);
    const owner = await register(WORKER, "owner", "inst-owner", 2000);
    const other = await register(WORKER, "other", "inst-other", 2000);
    const job = await alice.submit({
      name: "secret",
      entrypoint: { command: ["sh", "main.sh"] },
      env: { SECRET: "s3cr3t" },
      resources: { cpuMillis: 1000 },
      constraints: [{ key: "pool", op: "EQ", value: "owner" }],
      bundle: bundle.id,
    });
    const run = await waitFor(
      "the attempt assigned to worker owner",
      async () => {
        const r = await reconcile(owner.sessionToken, "owner");
        return r.run.length > 0 ? r.run : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    expect(run).toHaveLength(1);
    const attempt = run[0]!;
    expect(attempt.env.SECRET).toBe("s3cr3t");
    // The other worker's desired set never holds it.
    const theirs = await reconcile(other.sessionToken, "other");
    expect(theirs.run.map((r) => r.attemptUid)).not.toContain(attempt.attemptUid);
    // Forged results for it are ignored (and it is told to stop nothing of its own).
    await reconcile(other.sessionToken, "other", [
      { attemptUid: attempt.attemptUid, taskId: attempt.taskId, attempt: attempt.attempt, state: "SUCCEEDED", exitCode: 0, resultJson: "1" },
    ]);
    expect((await job.status()).state).not.toBe("SUCCEEDED");
    // Its logs and its bundle are refused.
    expect(await codeOf(pushLogs(other.sessionToken, [{ attemptUid: attempt.attemptUid, stream: "stdout", line: "forged", timeMs: Date.now() }]))).toBe("PERMISSION_DENIED");
    expect(await fetchBundle(other.sessionToken, bundle.id)).toBe("PERMISSION_DENIED");
    expect(await fetchBundle(owner.sessionToken, bundle.id)).toBe("OK");
    // Its own worker reports it.
    expect(await codeOf(pushLogs(owner.sessionToken, [{ attemptUid: attempt.attemptUid, stream: "stdout", line: "real", timeMs: Date.now() }]))).toBe("OK");
    await reconcile(owner.sessionToken, "owner", [
      { attemptUid: attempt.attemptUid, taskId: attempt.taskId, attempt: attempt.attempt, state: "SUCCEEDED", exitCode: 0, logLines: 1 },
    ]);
    expect((await job.wait({ timeoutMs: 10_000 })).state).toBe("SUCCEEDED");
    const lines: string[] = [];
    for await (const e of job.logs()) lines.push(e.line);
    expect(lines).toEqual(["real"]);
  });

  it("a minted registration credential registers its named worker once; revoke ends the worker", async () => {
    const cred = controller.workerCredentials.mint("slurm-7", { ttlMs: 60_000 });
    expect(cred).toMatch(/^iris-wreg\./);
    expect(await codeOf(register(cred, "someone-else", "i1"))).toBe("PERMISSION_DENIED");
    // Before registering it acts for nobody.
    expect(await codeOf(reconcile(cred, "slurm-7"))).toBe("PERMISSION_DENIED");
    const r = await register(cred, "slurm-7", "i1");
    expect(r.workerId).toBe("slurm-7");
    // Spent: a second registration with it is refused.
    expect(await codeOf(register(cred, "slurm-7", "i2"))).toBe("UNAUTHENTICATED");
    expect(await codeOf(reconcile(r.sessionToken, "slurm-7"))).toBe("OK");
    // Expired ones are refused too.
    const short = controller.workerCredentials.mint("slurm-8", { ttlMs: 1 });
    await waitFor("the credential to expire", () => !controller.workerCredentials.has("slurm-8"), { timeoutMs: 5000, intervalMs: 5 });
    expect(await codeOf(register(short, "slurm-8", "i1"))).toBe("UNAUTHENTICATED");
    expect(() => controller.workerCredentials.mint("bad id!")).toThrow(/worker id/);
    // Revoked: its session is refused at once and it is no longer registered.
    expect(controller.workerCredentials.revoke("slurm-7")).toBe(true);
    expect(await codeOf(reconcile(r.sessionToken, "slurm-7"))).toBe("UNAUTHENTICATED");
    expect(controller.state.queries.listWorkers().map((w) => w.workerId)).not.toContain("slurm-7");
  });

  it("a real worker started with a minted credential registers, runs its job, and its task never gets a worker credential", async () => {
    const cred = controller.workerCredentials.mint("slurm-9");
    const w = await Worker.start({ controller: controller.address, token: cred, workerId: "slurm-9", cpuMillis: 2000, memoryBytes: 1024 ** 3, attributes: { pool: "slurm-9" } });
    try {
      await w.registered;
      const alice = IrisClient.connect(controller.address, { token: ALICE });
      clients.push(alice);
      const job = await alice.submit({
        name: "on-slurm",
        entrypoint: { command: ["sh", "-c", 'echo "T=${IRIS_AUTH_TOKEN%%.*}"'] },
        resources: { cpuMillis: 100 },
        constraints: [{ key: "pool", op: "EQ", value: "slurm-9" }],
      });
      expect((await job.wait({ timeoutMs: 30_000 })).state).toBe("SUCCEEDED");
      const lines: string[] = [];
      for await (const e of job.logs()) lines.push(e.line);
      expect(lines).toEqual(["T=iris-task"]);
      // The credential was spent by the worker.
      expect(await codeOf(register(cred, "slurm-9", "x"))).toBe("UNAUTHENTICATED");
    } finally {
      await w.stop();
    }
    // Deregistering ended its session.
    expect(controller.workerCredentials.has("slurm-9")).toBe(false);
  });

  it("sessions survive a controller restart: a real worker carries on with its session", async () => {
    const r = await register(WORKER, "durable", "inst-durable", 0);
    const w = await Worker.start({
      controller: controller.address,
      token: WORKER,
      workerId: "carry-on",
      cpuMillis: 2000,
      memoryBytes: 1024 ** 3,
      attributes: { pool: "carry-on" },
    });
    try {
      await w.registered;
      const port = controller.port;
      await controller.stop();
      controller = await Controller.start({ host: "127.0.0.1", port, dbPath: path.join(dir, "c.sqlite"), authFile, workerTimeoutMs: 60_000 });
      expect(await codeOf(reconcile(r.sessionToken, "durable"))).toBe("OK");
      expect(await codeOf(register(r.sessionToken, "durable", "inst-other"))).toBe("PERMISSION_DENIED");
      const alice = IrisClient.connect(controller.address, { token: ALICE });
      clients.push(alice);
      const job = await alice.submit({
        name: "after-restart",
        entrypoint: { command: ["true"] },
        resources: { cpuMillis: 100 },
        constraints: [{ key: "pool", op: "EQ", value: "carry-on" }],
      });
      expect((await job.wait({ timeoutMs: 30_000 })).state).toBe("SUCCEEDED");
    } finally {
      await w.stop();
    }
  });
});
