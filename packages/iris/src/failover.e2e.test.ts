// Failures of whole processes: a worker and the controller are SIGKILLed mid-job.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { IrisClient } from "./client/irisClient.ts";
import { Controller } from "./controller/controller.ts";
import { startControllerProcess, startWorkerProcess, until } from "./testkit/processes.ts";
import type { ChildHandle } from "./testkit/processes.ts";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

describe("failover", () => {
  let dir: string;
  const children: ChildHandle[] = [];
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "iris-failover-"));
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    await Promise.all(children.splice(0).map((c) => c.kill()));
    rmSync(dir, { recursive: true, force: true });
  });

  it("retries on another worker when a worker is SIGKILLed mid-task; the orphan exits", async () => {
    const controller = await Controller.start({ host: "127.0.0.1", port: 0, dbPath: path.join(dir, "c.sqlite"), workerTimeoutMs: 2000 });
    cleanups.push(() => controller.stop());
    const client = IrisClient.connect(controller.address);
    cleanups.push(() => client.close());
    const w1 = await startWorkerProcess({ controller: controller.address, cpuMillis: 1000 });
    children.push(w1);
    const script = 'echo $$ > "$PIDDIR/attempt-$IRIS_ATTEMPT"; if [ "$IRIS_ATTEMPT" = 1 ]; then exec sleep 60; fi; echo "second attempt on $IRIS_WORKER_ID"';
    const job = await client.submit({ name: "survivor", entrypoint: { command: ["sh", "-c", script] }, env: { PIDDIR: dir } });
    const pidFile = path.join(dir, "attempt-1");
    await until("attempt 1 running", () => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "");
    const orphan = Number(readFileSync(pidFile, "utf8").trim());
    expect(alive(orphan)).toBe(true);
    const w2 = await startWorkerProcess({ controller: controller.address, cpuMillis: 1000 });
    children.push(w2);
    await w1.kill("SIGKILL");
    const st = await job.wait({ timeoutMs: 30_000 });
    expect(st.state).toBe("SUCCEEDED");
    const t = st.tasks[0]!;
    expect(t.attempts[0]).toMatchObject({ workerId: w1.value, state: "WORKER_LOST", failureKind: "WORKER_LOST" });
    expect(t.attempts[1]).toMatchObject({ workerId: w2.value, state: "SUCCEEDED" });
    // The orphaned attempt notices its worker is gone and exits.
    await until("the orphaned attempt to exit", () => !alive(orphan), 30_000);
  });

  it("a worker SIGKILLed and restarted on its state directory adopts its running attempt, which succeeds", async () => {
    const controller = await Controller.start({ host: "127.0.0.1", port: 0, dbPath: path.join(dir, "c.sqlite"), workerTimeoutMs: 5000 });
    cleanups.push(() => controller.stop());
    const client = IrisClient.connect(controller.address);
    cleanups.push(() => client.close());
    const stateDir = path.join(dir, "worker-state");
    const w1 = await startWorkerProcess({ controller: controller.address, cpuMillis: 1000, stateDir });
    children.push(w1);
    const go = path.join(dir, "go");
    const job = await client.submit({
      name: "adopted",
      entrypoint: { command: ["sh", "-c", 'echo $$ > "$PIDFILE"; echo started; while [ ! -f "$GO" ]; do sleep 0.05; done; echo done'] },
      env: { GO: go, PIDFILE: path.join(dir, "pid") },
    });
    await until("the attempt to print", async () => {
      for await (const e of job.logs()) if (e.line === "started") return true;
      return false;
    });
    const pid = Number(readFileSync(path.join(dir, "pid"), "utf8").trim());
    await w1.kill("SIGKILL");
    expect(alive(pid)).toBe(true);
    const w2 = await startWorkerProcess({ controller: controller.address, cpuMillis: 1000, stateDir });
    children.push(w2);
    expect(w2.value).toBe(w1.value);
    expect(alive(pid)).toBe(true);
    writeFileSync(go, "");
    const st = await job.wait({ timeoutMs: 30_000 });
    expect(st.state).toBe("SUCCEEDED");
    // One attempt, never reported lost: the restarted worker took it over.
    expect(st.tasks[0]!.attempts).toHaveLength(1);
    expect(st.tasks[0]!.attempts[0]).toMatchObject({ workerId: w1.value, state: "SUCCEEDED" });
    const lines: string[] = [];
    for await (const e of job.logs({ follow: true })) lines.push(e.line);
    expect(lines).toEqual(["started", "done"]);
  });

  it("a kept attempt whose worker never comes back ends by itself after the adoption grace", async () => {
    const controller = await Controller.start({ host: "127.0.0.1", port: 0, dbPath: path.join(dir, "c.sqlite"), workerTimeoutMs: 5000 });
    cleanups.push(() => controller.stop());
    const client = IrisClient.connect(controller.address);
    cleanups.push(() => client.close());
    const w1 = await startWorkerProcess({ controller: controller.address, cpuMillis: 1000, stateDir: path.join(dir, "worker-state"), adoptGraceMs: 500 });
    children.push(w1);
    await client.submit({ name: "orphan", entrypoint: { command: ["sh", "-c", 'echo $$ > "$PIDFILE"; exec sleep 600'] }, env: { PIDFILE: path.join(dir, "pid") } });
    await until("the attempt to start", () => existsSync(path.join(dir, "pid")) && readFileSync(path.join(dir, "pid"), "utf8").trim() !== "");
    const pid = Number(readFileSync(path.join(dir, "pid"), "utf8").trim());
    await w1.kill("SIGKILL");
    const killedAt = Date.now();
    await until("the orphaned attempt to exit", () => !alive(pid), 10_000);
    expect(Date.now() - killedAt).toBeLessThan(5000);
  });

  it("keeps jobs, attempts and logs across a controller SIGKILL and adopts running attempts", async () => {
    const dbPath = path.join(dir, "c.sqlite");
    let controller = await startControllerProcess({ port: 0, dbPath, workerTimeoutMs: 3000 });
    children.push(controller);
    const address = controller.value;
    const port = Number(address.split(":")[1]);
    const client = IrisClient.connect(address);
    cleanups.push(() => client.close());
    const worker = await startWorkerProcess({ controller: address, cpuMillis: 2000 });
    children.push(worker);

    const before = await client.submit({ name: "before", entrypoint: { command: ["sh", "-c", "echo finished before the crash"] }, resources: { cpuMillis: 100 } });
    expect((await before.wait({ timeoutMs: 30_000 })).state).toBe("SUCCEEDED");
    const go = path.join(dir, "go");
    const job = await client.submit({
      name: "spans-restart",
      entrypoint: { command: ["sh", "-c", 'echo started; while [ ! -f "$GO" ]; do sleep 0.05; done; echo done'] },
      env: { GO: go },
      resources: { cpuMillis: 100 },
    });
    await until("the job to run and print", async () => {
      const st = await job.status();
      if (st.state !== "RUNNING") return false;
      for await (const e of job.logs()) if (e.line === "started") return true;
      return false;
    });
    const waiting = job.wait({ timeoutMs: 60_000 });

    await controller.kill("SIGKILL");
    controller = await startControllerProcess({ port, dbPath, workerTimeoutMs: 3000 });
    children.push(controller);
    // Lines a task prints while its worker is still reconnecting can be lost (PushLogs has no
    // acknowledgement); let the worker reach the new controller before the task prints again.
    // (The client's channel may still be backing off too: errors just mean "not yet".)
    const lastSeen = () =>
      client.listWorkers().then(
        (ws) => ws[0]!.lastSeenMs,
        () => undefined,
      );
    const seenAtRestart = await until("the new controller to answer", lastSeen);
    await until("the worker to reconcile with the new controller", async () => {
      const seen = await lastSeen();
      return seen !== undefined && seen !== seenAtRestart;
    });
    writeFileSync(go, "");

    const st = await waiting;
    expect(st.state).toBe("SUCCEEDED");
    expect(st.tasks[0]!.attempts).toHaveLength(1);
    expect(st.tasks[0]!.attempts[0]!.workerId).toBe(worker.value);
    const lines: string[] = [];
    // follow: the stream ends once the finished attempt's lines have all arrived.
    for await (const e of job.logs({ follow: true })) lines.push(e.line);
    expect(lines).toEqual(["started", "done"]);
    const history = await client.list();
    expect(history.map((j) => [j.name, j.state])).toEqual([
      [before.name, "SUCCEEDED"],
      [job.name, "SUCCEEDED"],
    ]);
    const beforeLines: string[] = [];
    for await (const e of before.logs()) beforeLines.push(e.line);
    expect(beforeLines).toEqual(["finished before the crash"]);
  });
});
