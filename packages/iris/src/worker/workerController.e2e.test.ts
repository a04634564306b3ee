// End-to-end tests of a real worker with a real controller (context API, failures, logs).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { Controller } from "../controller/controller.ts";
import type { LogEntry } from "../jobSpec.ts";
import { allocatePorts } from "./ports.ts";
import { waitFor } from "./testing/waitFor.ts";
import { Worker, type WorkerEvent } from "./worker.ts";

// One controller and two workers for the whole file; the workers start before the controller.
let dir: string;
let controller: Controller;
let workers: Worker[];
let client: IrisClient;
const events: WorkerEvent[] = [];

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-worker-ctrl-"));
  const [port] = Object.values(await allocatePorts(["controller"]));
  const address = `127.0.0.1:${port}`;
  workers = await Promise.all([0, 1].map(() => Worker.start({ controller: address, token: "tok", tickMs: 200, killGraceMs: 500, onEvent: (e) => events.push(e) })));
  await waitFor("the workers to find no controller", () => events.filter((e) => e.type === "controllerUnreachable").length >= 2);
  controller = await Controller.start({ host: "127.0.0.1", port, dbPath: path.join(dir, "c.sqlite"), token: "tok" });
  await Promise.all(workers.map((w) => w.registered));
  client = IrisClient.connect(address, { token: "tok", user: "tester" });
});

afterAll(async () => {
  client?.close();
  await Promise.all((workers ?? []).map((w) => w.stop()));
  await controller?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function allLogs(name: string): Promise<LogEntry[]> {
  const out: LogEntry[] = [];
  for await (const entry of client.job(name).logs({ follow: true })) out.push(entry);
  return out;
}

describe("Worker with the real controller", () => {
  it("runs a command job end to end: env, output in order, exit", async () => {
    const job = await client.submit({
      name: "cmd",
      entrypoint: { command: ["sh", "-c", 'echo "$IRIS_JOB_ID $IRIS_TASK_ID $IRIS_ATTEMPT"; for i in 1 2 3 4 5; do echo "n $i"; done; echo warn >&2'] },
      resources: { cpuMillis: 100 },
    });
    const status = await job.wait({ timeoutMs: 60_000 });
    expect(status.state).toBe("SUCCEEDED");
    expect(status.tasks[0]).toMatchObject({ state: "SUCCEEDED", exitCode: 0 });
    const logs = await allLogs("cmd");
    const stdout = logs.filter((l) => l.stream === "stdout").map((l) => l.line);
    expect(stdout).toEqual(["/tester/cmd /tester/cmd/0 1", "n 1", "n 2", "n 3", "n 4", "n 5"]);
    expect(logs.filter((l) => l.stream === "stderr").map((l) => l.line)).toEqual(["warn"]);
  });

  it("runs module tasks that rendezvous through the context: ports, endpoints, status, child jobs", async () => {
    const job = await client.submit({
      name: "ctx",
      entrypoint: { module: path.join(import.meta.dirname, "testing", "contextTasks.ts"), export: "rendezvous", args: { endpoint: "coord" } },
      replicas: 2,
      ports: ["coord"],
      env: { TEAM: "blue", ROLE: "parent" },
      resources: { cpuMillis: 100 },
    });
    const status = await job.wait({ timeoutMs: 120_000 });
    const logs = await allLogs("ctx");
    expect(status.state, JSON.stringify(logs.map((l) => l.line))).toBe("SUCCEEDED");
    const lines = logs.map((l) => `${l.taskIndex}: ${l.line}`);
    expect(lines).toContain("0: registered /tester/ctx/coord");
    expect(lines).toContain("1: reply: hello from task 0 of 2 (rank 0)");
    expect(lines).toContain("1: child /tester/ctx/kid SUCCEEDED");
    const metrics = await client.getTaskMetrics("/tester/ctx/0");
    expect(metrics.statusText).toBe("still serving");
    expect(metrics.points.map((p) => [p.step, p.metrics.loss])).toEqual([
      [1, 0.5],
      [2, 0.25],
    ]);
    const kid = await client.job("/tester/ctx/kid").status();
    expect(kid.state).toBe("SUCCEEDED");
    // The child inherited the parent's env, its own values winning.
    expect((await allLogs("/tester/ctx/kid")).map((l) => l.line)).toEqual(["child /tester/ctx/kid blue kid"]);
  });

  it("maps a module's throw to APP_EXIT 1 with the stack in the job's logs", async () => {
    const job = await client.submit({
      name: "explode",
      entrypoint: { module: path.join(import.meta.dirname, "testing", "contextTasks.ts"), export: "explode" },
      resources: { cpuMillis: 100 },
    });
    const status = await job.wait({ timeoutMs: 60_000 });
    expect(status.state).toBe("FAILED");
    expect(status.tasks[0]).toMatchObject({ exitCode: 1, failureKind: "APP_EXIT" });
    const stderr = (await allLogs("explode")).filter((l) => l.stream === "stderr").map((l) => l.line);
    expect(stderr[0]).toBe("TypeError: exploded in /tester/explode/0");
    expect(stderr.some((l) => /at explode .*contextTasks\.ts/.test(l))).toBe(true);
  });

  it("reports an attempt over its memory request as OOM", async () => {
    const job = await client.submit({
      name: "hog",
      entrypoint: { command: [process.execPath, "-e", "const b = Buffer.alloc(400 * 1024 * 1024, 1); setInterval(() => b, 1000);"] },
      resources: { cpuMillis: 100, memoryBytes: 128 * 1024 * 1024 },
    });
    const status = await job.wait({ timeoutMs: 60_000 });
    expect(status.state).toBe("FAILED");
    expect(status.tasks[0].failureKind).toBe("OOM");
  });

  it("kills a running attempt when its job is terminated", async () => {
    const job = await client.submit({
      name: "long",
      entrypoint: { command: ["sh", "-c", "echo started; exec sleep 1000"] },
      resources: { cpuMillis: 100 },
    });
    await waitFor("the attempt to run", () => workers.some((w) => w.attempts().some((a) => a.taskId === "/tester/long/0" && a.state === "RUNNING")), {
      timeoutMs: 60_000,
    });
    const pid = workers.flatMap((w) => w.attempts()).find((a) => a.taskId === "/tester/long/0")!.pid;
    await job.terminate();
    const status = await job.wait({ timeoutMs: 30_000 });
    expect(status.state).toBe("KILLED");
    await waitFor("the process to be gone", () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
  });
});
