// Scheduler fairness end to end: a real controller (gRPC on loopback, SQLite) with a huge pending
// job. A 100,000-member gang waiting for workers costs a scheduling pass one task, other users'
// LaunchJob stays within 2× of idle, and a small job runs as soon as a worker comes; 100,000
// single tasks waiting for a busy worker do not take a freed slot before another user's first
// task. Figures with a real load: bench/iris/fairness.bench.ts.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { waitFor } from "../testing.ts";
import { Worker } from "../worker/worker.ts";
import { Controller } from "./controller.ts";

const MEMBERS = 100_000;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

describe("iris scheduler fairness under a huge pending job", () => {
  let dir: string | undefined;
  let controller: Controller | undefined;
  let client: IrisClient | undefined;
  let worker: Worker | undefined;
  const start = async (): Promise<{ controller: Controller; client: IrisClient }> => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-fair-"));
    controller = await Controller.start({ port: 0, dbPath: path.join(dir, "c.sqlite"), schedulingTimeoutMs: 10 * 60_000, workerTimeoutMs: 10 * 60_000 });
    client = IrisClient.connect(controller.address);
    return { controller, client };
  };
  afterEach(async () => {
    await worker?.stop();
    client?.close();
    await controller?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    worker = undefined;
    client = undefined;
    controller = undefined;
    dir = undefined;
  });

  let seq = 0;
  async function launchTimes(c: IrisClient, n: number): Promise<number[]> {
    const xs: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const job = await c.submit({ name: `/bob/probe-${seq++}`, entrypoint: { command: ["true"] }, resources: { cpuMillis: 1 } });
      xs.push(performance.now() - t0);
      await c.terminate(job.name);
    }
    return xs;
  }

  it("a 100,000-member gang waiting for workers: passes see one member, LaunchJob within 2× of idle, a small job runs when a worker comes", async () => {
    const { controller: c, client: cl } = await start();
    await launchTimes(cl, 5);
    const idle = median(await launchTimes(cl, 15));
    const gang = await cl.submit({ name: "/alice/huge", entrypoint: { command: ["true"] }, replicas: MEMBERS, gang: true, resources: { cpuMillis: 1000 } });
    const loaded = median(await launchTimes(cl, 15));
    // The gang stands in as one task (beside, at most, the last probe before it was terminated).
    expect(c.state.jobs.lastPass.tasks).toBeLessThanOrEqual(2);
    expect((await gang.status()).state).toBe("PENDING");
    // 2× of idle, with a little slack for a loaded machine's scheduling noise.
    expect(loaded).toBeLessThanOrEqual(2 * idle + 25);
    // Every member says why it waits, though the pass looked at one.
    const tasks = (await gang.status()).tasks;
    expect(tasks.at(-1)!.pendingReason).toBe(`gang of ${MEMBERS}: no workers registered`);

    const small = await cl.submit({ name: "/bob/small", entrypoint: { command: ["true"] }, resources: { cpuMillis: 100 } });
    worker = await Worker.start({ controller: c.address, cpuMillis: 2000, memoryBytes: 1024 ** 3 });
    expect((await small.wait({ timeoutMs: 60_000 })).state).toBe("SUCCEEDED");
    // One worker can never hold the gang: it ends at once, every member saying why.
    const ended = await gang.wait({ timeoutMs: 60_000 });
    expect(ended.state).not.toBe("PENDING");
    expect(ended.tasks.at(-1)!.state).toBe("UNSCHEDULABLE");
    expect(ended.tasks.at(-1)!.error).toMatch(new RegExp(`gang of ${MEMBERS}`));
  }, 240_000);

  it("100,000 single tasks waiting for busy workers: the pass is bounded, and users take turns at freed slots", async () => {
    const { controller: c, client: cl } = await start();
    for (const id of ["w1", "w2"])
      c.state.workers.registerWorker({ workerId: id, host: "127.0.0.1", attributes: {}, capacity: { cpuMillis: 1000, memoryBytes: 1024 ** 3, devices: {} } });
    const filler = await cl.submit({ name: "/alice/filler", entrypoint: { command: ["true"] }, replicas: 2, resources: { cpuMillis: 1000 } });
    await waitFor("the filler to be placed", async () => (await filler.status()).tasks.every((t) => t.state === "ASSIGNED"), { timeoutMs: 30_000, intervalMs: 10 });
    const many = await cl.submit({ name: "/alice/many", entrypoint: { command: ["true"] }, replicas: MEMBERS, resources: { cpuMillis: 1000 } });
    const carol = await cl.submit({ name: "/carol/small", entrypoint: { command: ["true"] }, resources: { cpuMillis: 1000 } });
    await waitFor("a pass with both pending", () => c.state.jobs.lastPass.tasks > 1, { timeoutMs: 30_000, intervalMs: 10 });
    // A window of the big job and carol's one task, not 100,000.
    expect(c.state.jobs.lastPass.tasks).toBeLessThanOrEqual(501);
    await cl.terminate(filler.name);
    // The workers report, one after the other, that the filler is gone: two slots come free. The
    // first goes to the oldest job (neither user runs anything), the second to carol, not to the
    // next of alice's 100,000.
    c.state.workers.reconcile("w1", [], { healthy: true });
    await waitFor("a task of alice's to be placed", async () => (await many.status()).tasks.some((t) => t.state === "ASSIGNED"), { timeoutMs: 30_000, intervalMs: 10 });
    c.state.workers.reconcile("w2", [], { healthy: true });
    await waitFor("carol's task to be placed", async () => (await carol.status()).tasks[0]?.state === "ASSIGNED", { timeoutMs: 30_000, intervalMs: 10 });
    expect((await many.status()).tasks.filter((t) => t.state !== "PENDING")).toHaveLength(1);
  }, 240_000);
});
