// Code bundles and worker lifecycle on loopback: a module job whose code exists only in its bundle,
// upload deduplication, the controller's pruning of unused bundles, a failed build (BUILD_FAILED with the log's tail), drain (PREEMPTED, the
// task finishes elsewhere, the drained worker deregisters) and a stopped worker deregistering.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { IrisClient } from "./client/irisClient.ts";
import { Controller } from "./controller/controller.ts";
import { EMPTY_LOCKFILE, makeWorkspace } from "./testkit/workspace.ts";
import { waitFor } from "./worker/testing/waitFor.ts";
import { Worker } from "./worker/worker.ts";

describe("code bundles", () => {
  let dir: string;
  let controller: Controller;
  let client: IrisClient;
  const workers: Worker[] = [];

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-bundles-"));
    controller = await Controller.start({ host: "127.0.0.1", port: 0, dbPath: path.join(dir, "controller", "c.sqlite"), workerTimeoutMs: 3000 });
    client = IrisClient.connect(controller.address);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    client.close();
    await controller.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function startWorker(name: string, extra: Partial<Parameters<typeof Worker.start>[0]> = {}): Promise<Worker> {
    const w = await Worker.start({
      controller: controller.address,
      stateDir: path.join(dir, name, "state"),
      bundleCacheDir: path.join(dir, name, "bundles"),
      workerId: name,
      cpuMillis: 2000,
      killGraceMs: 300,
      ...extra,
    });
    workers.push(w);
    await w.registered;
    return w;
  }

  it("runs a module whose code exists only in its bundle, and uploads the same workspace once", async () => {
    await startWorker("w1");
    const ws = makeWorkspace(path.join(dir, "ws"), {
      "package.json": JSON.stringify({ name: "ws", private: true, type: "module" }),
      "pnpm-lock.yaml": EMPTY_LOCKFILE,
      "jobs/add.ts": "import { helper } from './helper.ts';\nexport function main(a: { x: number }) { return { y: helper(a.x), cwd: process.cwd() }; }\n",
      "jobs/helper.ts": "export const helper = (x: number): number => x + 1;\n",
    });
    fs.writeFileSync(path.join(ws, "untracked.txt"), "not shipped");
    const job = await client.submit({ name: "bundled", entrypoint: { module: path.join(ws, "jobs/add.ts"), export: "main", args: { x: 41 } } }, { bundle: ws });
    // The code is gone from where it was submitted: only the bundle has it.
    fs.rmSync(ws, { recursive: true, force: true });
    const st = await job.wait({ timeoutMs: 60_000 });
    expect(st.state, JSON.stringify(st.tasks[0])).toBe("SUCCEEDED");
    const result = (await job.results())[0] as { y: number; cwd: string };
    expect(result.y).toBe(42);
    const bundleDir = result.cwd;
    expect(bundleDir.startsWith(path.join(dir, "w1", "bundles"))).toBe(true);
    expect(fs.existsSync(path.join(bundleDir, "jobs", "helper.ts"))).toBe(true);
    expect(fs.existsSync(path.join(bundleDir, "untracked.txt"))).toBe(false);
    const lines: string[] = [];
    for await (const e of job.logs()) lines.push(e.line);
    expect(lines.some((l) => l.startsWith("[iris build] fetched bundle sha256:"))).toBe(true);
    expect(lines.some((l) => l.includes("pnpm install --frozen-lockfile --offline"))).toBe(true);

    // The same files again (a fresh copy, a fresh client): same id, nothing uploaded.
    const again = makeWorkspace(path.join(dir, "ws2"), {
      "package.json": JSON.stringify({ name: "ws", private: true, type: "module" }),
      "pnpm-lock.yaml": EMPTY_LOCKFILE,
      "jobs/add.ts": "import { helper } from './helper.ts';\nexport function main(a: { x: number }) { return { y: helper(a.x), cwd: process.cwd() }; }\n",
      "jobs/helper.ts": "export const helper = (x: number): number => x + 1;\n",
    });
    const other = IrisClient.connect(controller.address);
    try {
      const b = await other.uploadBundle(again);
      expect(b.uploaded).toBe(false);
      expect(`sha256:${path.basename(bundleDir)}`).toBe(b.id);
      expect(fs.readdirSync(controller.bundles.dir).filter((f) => f.endsWith(".tgz"))).toHaveLength(1);
    } finally {
      other.close();
    }
  }, 90_000);

  it("an attempt holds its bundle while it runs; the cache keeps bundleCacheKeep and removes older unused ones", async () => {
    await startWorker("w1", { bundleCacheKeep: 1 });
    const files = (tag: string) => ({
      "package.json": JSON.stringify({ name: "ws", private: true, type: "module" }),
      "pnpm-lock.yaml": EMPTY_LOCKFILE,
      // The task reports its bundle's holds (their pids) as it runs, and its own pid.
      "jobs/holds.mjs": `import fs from "node:fs";\nexport function main() { const d = ".iris-holders"; return { tag: ${JSON.stringify(tag)}, pid: process.pid, cwd: process.cwd(), holds: fs.readdirSync(d).map((f) => JSON.parse(fs.readFileSync(d + "/" + f, "utf8")).pid) }; }\n`,
    });
    const runFrom = async (tag: string) => {
      const ws = makeWorkspace(path.join(dir, `ws-${tag}`), files(tag));
      const job = await client.submit({ name: `holds-${tag}`, entrypoint: { module: path.join(ws, "jobs/holds.mjs"), export: "main" } }, { bundle: ws });
      const st = await job.wait({ timeoutMs: 60_000 });
      expect(st.state, JSON.stringify(st.tasks[0])).toBe("SUCCEEDED");
      const lines: string[] = [];
      for await (const e of job.logs()) lines.push(e.line);
      return { result: (await job.results())[0] as { pid: number; cwd: string; holds: number[] }, lines };
    };
    const a = await runFrom("a");
    // While it ran, the one hold on its bundle was the attempt's process (its keeper, which runs
    // the task), no longer the worker (this test's process); it is gone once the attempt ended.
    expect(a.result.holds).toHaveLength(1);
    expect(a.result.holds[0]).not.toBe(process.pid);
    expect(a.result.holds[0]).toBeGreaterThan(0);
    await waitFor("the hold released", () => fs.readdirSync(path.join(a.result.cwd, ".iris-holders")).length === 0, { timeoutMs: 10_000 });
    // Time passes (pruning spares a bundle used in the last minute), then another bundle is built.
    const old = new Date(Date.now() - 10 * 60_000);
    fs.utimesSync(path.join(a.result.cwd, ".iris-bundle-built"), old, old);
    const b = await runFrom("b");
    expect(b.lines.some((l) => l.includes("removed 1 older unused bundle(s) from the cache (it keeps 1)"))).toBe(true);
    expect(fs.existsSync(a.result.cwd)).toBe(false);
    expect(fs.existsSync(path.join(b.result.cwd, "jobs", "holds.mjs"))).toBe(true);
  }, 90_000);

  it("the controller removes bundles nothing needs (bundleKeep); a client whose bundle was removed uploads it again", async () => {
    // A controller that keeps 1 bundle beyond those live jobs use, with no grace time.
    await controller.stop();
    client.close();
    const logs: string[] = [];
    controller = await Controller.start({
      host: "127.0.0.1",
      port: 0,
      dbPath: path.join(dir, "controller2", "c.sqlite"),
      workerTimeoutMs: 3000,
      bundleKeep: 1,
      bundleGraceMs: 0,
      log: (l) => logs.push(l),
    });
    client = IrisClient.connect(controller.address);
    await startWorker("w1");
    const stored = () =>
      fs
        .readdirSync(controller.bundles.dir)
        .filter((f) => f.endsWith(".tgz"))
        .map((f) => `sha256:${f.slice(0, -4)}`)
        .sort();
    const ws = (tag: string, body: string) =>
      makeWorkspace(path.join(dir, `ws-${tag}`), {
        "package.json": JSON.stringify({ name: `ws-${tag}`, private: true, type: "module" }),
        "pnpm-lock.yaml": EMPTY_LOCKFILE,
        "jobs/main.mjs": body,
      });
    const wsA = ws("a", "export function main() { return 'a'; }\n");
    const wsB = ws("b", "export async function main() { await new Promise((r) => setTimeout(r, 120_000)); }\n");
    const wsC = ws("c", "export function main() { return 'c'; }\n");
    const run = (name: string, root: string) => client.submit({ name, entrypoint: { module: path.join(root, "jobs/main.mjs"), export: "main" } }, { bundle: root });

    const a = await run("a", wsA);
    expect((await a.wait({ timeoutMs: 60_000 })).state).toBe("SUCCEEDED");
    const idA = (await client.uploadBundle(wsA)).id;
    const b = await run("b", wsB);
    const idB = (await client.uploadBundle(wsB)).id;
    await waitFor("b running", async () => (await b.status()).state === "RUNNING", { timeoutMs: 30_000 });
    // Storing C pushes out A (ended, least recently used); B stays while its job runs.
    const idC = (await client.uploadBundle(wsC)).id;
    expect(stored()).toEqual([idB, idC].sort());
    expect(logs.some((l) => l.includes(`removed 1 unused code bundle (${idA})`))).toBe(true);

    // The same client submits A's code again: the controller refuses the spec (A is gone), the
    // client uploads A again and the job runs.
    const again = await run("a2", wsA);
    expect((await again.wait({ timeoutMs: 60_000 })).state).toBe("SUCCEEDED");
    expect(await again.results()).toEqual(["a"]);
    expect(stored()).toEqual([idA, idB].sort());

    // A spec that names a removed bundle itself gets a clear error; uploading it again works.
    const refused = await client.submit({ name: "c", entrypoint: { module: "jobs/main.mjs", export: "main" }, bundle: idC }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "FAILED_PRECONDITION", message: expect.stringContaining(`bundle ${idC} is not stored on this controller`) });
    expect((await client.uploadBundle(wsC)).uploaded).toBe(true);
    const c = await client.submit({ name: "c", entrypoint: { module: "jobs/main.mjs", export: "main" }, bundle: idC });
    expect((await c.wait({ timeoutMs: 60_000 })).state).toBe("SUCCEEDED");

    // Once B ends nothing holds its bundle: the next prune removes it.
    await b.terminate();
    await b.wait({ timeoutMs: 30_000 });
    controller.pruneBundles();
    expect(stored()).not.toContain(idB);
  }, 120_000);

  it("fails the task BUILD_FAILED with the build log's tail when the install fails", async () => {
    await startWorker("w1");
    const ws = makeWorkspace(path.join(dir, "ws"), {
      // A dependency the lockfile does not list: `--frozen-lockfile` refuses at once.
      "package.json": JSON.stringify({ name: "ws", private: true, dependencies: { "left-pad": "1.3.0" } }),
      "pnpm-lock.yaml": EMPTY_LOCKFILE,
      "main.mjs": "export const main = () => 1;\n",
    });
    const job = await client.submit({ name: "broken", entrypoint: { module: path.join(ws, "main.mjs"), export: "main" } }, { bundle: ws });
    const st = await job.wait({ timeoutMs: 60_000 });
    expect(st.state).toBe("FAILED");
    const t = st.tasks[0]!;
    expect(t.failureKind).toBe("BUILD_FAILED");
    expect(t.error).toMatch(/pnpm install failed for bundle sha256:[0-9a-f]{64}/);
    expect(t.error).toMatch(/ERR_PNPM/);
  }, 90_000);

  it("drain moves a running task to another worker as PREEMPTED; the drained worker deregisters", async () => {
    const w1 = await startWorker("w1");
    const script = 'if [ "$IRIS_ATTEMPT" = 1 ]; then exec sleep 60; fi; echo "attempt $IRIS_ATTEMPT on $IRIS_WORKER_ID"';
    const job = await client.submit({ name: "drained", entrypoint: { command: ["sh", "-c", script] } });
    await waitFor("the task to run on w1", async () => (await job.status()).tasks[0]?.state === "RUNNING");
    await startWorker("w2");
    expect(await client.drainWorker("w1")).toBe(1);
    const st = await job.wait({ timeoutMs: 30_000 });
    expect(st.state).toBe("SUCCEEDED");
    expect(st.tasks[0]!.attempts[0]).toMatchObject({ workerId: "w1", state: "PREEMPTED", failureKind: "PREEMPTED" });
    expect(st.tasks[0]!.attempts[1]).toMatchObject({ workerId: "w2", state: "SUCCEEDED" });
    // Idle now, w1 leaves by itself.
    await w1.done;
    await waitFor("w1 to deregister", async () => !(await client.listWorkers()).some((w) => w.workerId === "w1"));
    // Nothing new goes to a draining worker; a stopped worker deregisters too.
    const w2 = workers.find((w) => w.id === "w2")!;
    await w2.stop();
    expect(await client.listWorkers()).toEqual([]);
  }, 60_000);
});
