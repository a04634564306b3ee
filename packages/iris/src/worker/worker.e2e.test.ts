// End-to-end tests of the worker daemon against a scripted controller (reconcile protocol, stops, restarts).
// restarts).
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runnerArgv } from "../runner/runnerSpec.ts";
import { AttemptStore, spawnedRecord } from "./attemptStore.ts";
import { allocatePorts } from "./ports.ts";
import { FakeController, runCommand } from "./testing/fakeController.ts";
import { childrenOf } from "../testkit/processes.ts";
import { processAlive, waitFor } from "./testing/waitFor.ts";
import { Worker, type WorkerEvent, type WorkerOptions } from "./worker.ts";
import { defaultStateRoot } from "./workerStateDir.ts";

let fc: FakeController | undefined;
let dir: string;
const cleanups: (() => unknown)[] = [];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-worker-test-"));
});

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await fc?.close();
  fc = undefined;
  fs.rmSync(dir, { recursive: true, force: true });
});

async function startWorker(opts: Partial<WorkerOptions> = {}) {
  const events: WorkerEvent[] = [];
  const worker = await Worker.start({
    controller: fc!.address,
    tickMs: 60_000, // dispatch must come from notices, not from the tick
    killGraceMs: 300,
    stateRoot: path.join(dir, "workers"),
    ...opts,
    onEvent: (e) => events.push(e),
  });
  cleanups.push(() => worker.stop());
  return { worker, events };
}

const observedState = (uid: string, state: string) =>
  waitFor(`${uid} to be observed ${state}`, () => {
    const o = fc!.observed.get(uid);
    return o?.state === state ? o : undefined;
  });

describe("Worker against a scripted controller", () => {
  it("registers once a controller appears on its address, whatever the start order", async () => {
    const [port] = Object.values(await allocatePorts(["controller"]));
    const events: WorkerEvent[] = [];
    const worker = await Worker.start({ controller: `127.0.0.1:${port}`, onEvent: (e) => events.push(e) });
    cleanups.push(() => worker.stop());
    await waitFor("a failed registration", () => events.some((e) => e.type === "controllerUnreachable"));
    fc = await FakeController.start({ port });
    await worker.registered;
    expect(fc.registrations).toEqual([worker.id]);
    // The backoff between attempts never exceeds 2 s.
    const waits = events.flatMap((e) => (e.type === "controllerUnreachable" ? [e.retryInMs] : []));
    expect(Math.max(...waits)).toBeLessThanOrEqual(2000);
  });

  it("reaches a controller that comes back after a long outage within its 2 s backoff", async () => {
    fc = await FakeController.start();
    const port = Number(fc.address.split(":")[1]);
    const { worker, events } = await startWorker({ tickMs: 100 });
    await worker.registered;
    await fc.close();
    // Long enough (≥ 12 s) for grpc-js's own exponential reconnect backoff (1 s × 1.6ⁿ, ±20 %
    // jitter) to have grown past 8 s: reconnecting within 6 s then proves the 2 s cap, with room
    // for a loaded 2-core machine.
    await waitFor("a long outage", () => events.filter((e) => e.type === "controllerUnreachable" && e.retryInMs === 2000).length >= 6, {
      timeoutMs: 30_000,
    });
    fc = await FakeController.start({ port });
    const back = Date.now();
    await waitFor("a reconcile with the new controller", () => fc!.reconciles > 0, { timeoutMs: 15_000 });
    expect(Date.now() - back).toBeLessThan(6000);
  });

  it("delivers lines printed while the controller was away, before reporting the attempt finished", async () => {
    fc = await FakeController.start();
    const port = Number(fc.address.split(":")[1]);
    const go = path.join(dir, "go");
    const spec = runCommand("d1", ["sh", "-c", `echo waiting; while [ ! -f ${go} ]; do sleep 0.02; done; i=0; while [ $i -lt 50 ]; do echo "late $i"; i=$((i+1)); done`]);
    fc.run.set("d1", spec);
    const { worker, events } = await startWorker({ tickMs: 100 });
    fc.notify();
    await waitFor("the first line", () => fc!.linesOf("d1").includes("waiting"));
    await fc.close();
    const outages = events.filter((e) => e.type === "controllerUnreachable").length;
    await waitFor("the worker to notice the outage", () => events.filter((e) => e.type === "controllerUnreachable").length > outages);
    fs.writeFileSync(go, "");
    await waitFor("the attempt to finish during the outage", () => worker.attempts()[0]?.state === "SUCCEEDED");
    fc = await FakeController.start({ port });
    fc.run.set("d1", spec);
    const done = await observedState("d1", "SUCCEEDED");
    // Every line reached the new controller before it heard that the attempt had finished.
    const late = Array.from({ length: 50 }, (_, i) => `late ${i}`);
    expect(fc.linesOf("d1")).toEqual(late);
    expect(done.logLines).toBe(51);
  });

  it("starts a run intent on a notice with the IRIS_* env and ports, pushes its lines, reports its exit", async () => {
    fc = await FakeController.start();
    const { worker } = await startWorker();
    await worker.registered;
    await waitFor("the first reconcile", () => fc!.reconciles > 0);
    fc.run.set(
      "a1",
      runCommand(
        "a1",
        [
          "sh",
          "-c",
          'echo "$IRIS_TASK_ID $IRIS_ATTEMPT $IRIS_WORKER_ID $IRIS_JOB_ID $IRIS_NUM_TASKS $IRIS_ADVERTISE_HOST $GREETING"; echo "port=$IRIS_PORT_HTTP"; echo oops >&2; i=0; while [ $i -lt 300 ]; do echo "line $i"; i=$((i+1)); done; exit 4',
        ],
        { env: { GREETING: "hi", IRIS_TASK_ID: "forged" }, ports: ["http"] },
      ),
    );
    fc.notify();
    const done = await observedState("a1", "FAILED");
    expect(done).toMatchObject({ failureKind: "APP_EXIT", exitCode: 4, taskId: "/test/job/0", attempt: 1 });
    expect(done.pid).toBeGreaterThan(0);
    expect(done.finishedAtMs).toBeGreaterThanOrEqual(done.startedAtMs);
    expect(done.logLines).toBe(303);
    await waitFor("all lines", () => fc!.linesOf("a1").length === 303);
    const lines = fc.linesOf("a1");
    expect(lines[0]).toBe(`/test/job/0 1 ${worker.id} /test/job 1 127.0.0.1 hi`);
    expect(lines[1]).toMatch(/^port=\d+$/);
    expect(lines.filter((l) => l.startsWith("line "))).toEqual(Array.from({ length: 300 }, (_, i) => `line ${i}`));
    expect(fc.lines.find((l) => l.line === "oops")?.stream).toBe("stderr");

    // Reported until the controller drops it from the desired set, then forgotten.
    fc.run.delete("a1");
    fc.notify();
    await waitFor("the worker to forget a1", () => worker.attempts().length === 0);
  });

  it("reports success as SUCCEEDED and never starts an attempt uid twice", async () => {
    fc = await FakeController.start();
    const { worker, events } = await startWorker({ tickMs: 50 });
    fc.run.set("ok", runCommand("ok", ["true"]));
    fc.notify();
    await observedState("ok", "SUCCEEDED");
    const before = fc.reconciles;
    await waitFor("more reconciles", () => fc!.reconciles > before + 3);
    expect(events.filter((e) => e.type === "attemptStarted")).toHaveLength(1);
    expect(worker.attempts()).toMatchObject([{ attemptUid: "ok", state: "SUCCEEDED", exitCode: 0 }]);
  });

  it("ends a stop intent with SIGTERM, then SIGKILL, and reports it KILLED", async () => {
    fc = await FakeController.start();
    await startWorker();
    fc.run.set("s1", runCommand("s1", ["sh", "-c", "trap 'echo term' TERM; echo ready; while true; do sleep 0.05; done"]));
    fc.notify();
    await waitFor("the attempt to print ready", () => fc!.linesOf("s1").includes("ready"));
    fc.run.delete("s1");
    fc.stop.set("s1", { attemptUid: "s1", reason: "KILLED" });
    fc.notify();
    const done = await observedState("s1", "KILLED");
    expect(done.failureKind).toBe("KILLED");
    expect(fc.linesOf("s1")).toContain("term");
  });

  it("kills a zombie (running but no longer wanted), reports its end once, then forgets it", async () => {
    fc = await FakeController.start();
    const { worker } = await startWorker();
    fc.run.set("z1", runCommand("z1", ["sh", "-c", "echo ready; exec sleep 1000"]));
    fc.notify();
    await waitFor("the zombie-to-be to run", () => fc!.linesOf("z1").includes("ready"));
    const pid = (await observedState("z1", "RUNNING")).pid;
    fc.run.delete("z1");
    fc.notify();
    expect(await observedState("z1", "KILLED")).toMatchObject({ failureKind: "KILLED" });
    expect(processAlive(pid)).toBe(false);
    await waitFor("the worker to forget z1", () => worker.attempts().length === 0);
  });

  it("classifies a timeout and a launch failure", async () => {
    fc = await FakeController.start();
    await startWorker();
    fc.run.set("t1", runCommand("t1", ["sleep", "1000"], { timeoutMs: 300 }));
    fc.run.set("l1", runCommand("l1", ["/nonexistent/iris-binary"], { taskId: "/test/job/1", taskIndex: 1 }));
    fc.notify();
    expect(await observedState("t1", "FAILED")).toMatchObject({ failureKind: "TIMEOUT" });
    const launch = await observedState("l1", "FAILED");
    expect(launch.failureKind).toBe("LAUNCH_FAILED");
    expect(launch.error).toContain("/nonexistent/iris-binary");
  });

  it("registers again, with the same id, when the controller no longer knows it", async () => {
    fc = await FakeController.start();
    const { worker } = await startWorker();
    await worker.registered;
    fc.forgetWorkerOnce = true;
    fc.notify();
    await waitFor("a second registration", () => fc!.registrations.length === 2);
    expect(fc.registrations).toEqual([worker.id, worker.id]);
  });

  it("carries the bearer token; a wrong or missing one stops the worker with UNAUTHENTICATED, no retries", async () => {
    fc = await FakeController.start({ token: "t0k" });
    const good = await startWorker({ token: "t0k" });
    await good.worker.registered;
    for (const token of ["wrong", undefined]) {
      const bad = await startWorker(token === undefined ? {} : { token });
      await expect(bad.worker.registered).rejects.toMatchObject({ name: "IrisError", code: "UNAUTHENTICATED" });
      await expect(bad.worker.done).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
      // It stopped by itself (its state directory is gone) and never treated the refusal as an outage.
      expect(fs.existsSync(bad.worker.stateDir)).toBe(false);
      expect(bad.events.filter((e) => e.type === "controllerUnreachable")).toEqual([]);
      expect(bad.events.filter((e) => e.type === "refused")).toHaveLength(1);
    }
    expect(fc.registrations).toEqual([good.worker.id]);
  });

  it("rejects registered when stopped before registering (no controller ever answers)", async () => {
    const [port] = Object.values(await allocatePorts(["nobody"]));
    const worker = await Worker.start({ controller: `127.0.0.1:${port}`, stateRoot: path.join(dir, "workers") });
    const registered = worker.registered.then(
      () => "registered",
      (e: unknown) => e,
    );
    await worker.stop();
    expect(await registered).toMatchObject({ code: "FAILED_PRECONDITION" });
    await expect(worker.done).resolves.toBeUndefined();
  });

  it("on stop, kills its attempts and reports them lost with the worker", async () => {
    fc = await FakeController.start();
    const { worker } = await startWorker();
    fc.run.set("w1", runCommand("w1", ["sh", "-c", "echo ready; exec sleep 1000"]));
    fc.notify();
    const pid = (await observedState("w1", "RUNNING")).pid;
    await worker.stop();
    expect(processAlive(pid)).toBe(false);
    expect(fc.observed.get("w1")).toMatchObject({ state: "FAILED", failureKind: "WORKER_LOST" });
    expect(fs.existsSync(worker.stateDir)).toBe(false);
  });

  it("refuses a state directory a live worker holds, and takes over one whose worker is gone", async () => {
    fc = await FakeController.start();
    const stateDir = path.join(dir, "shared");
    const first = await startWorker({ stateDir });
    await expect(startWorker({ stateDir })).rejects.toMatchObject({ code: "FAILED_PRECONDITION" });
    await first.worker.stop();
    const second = await startWorker({ stateDir });
    expect(second.worker.id).toBe(first.worker.id);
  });

  it("ends its attempts when the controller stays silent too long", async () => {
    fc = await FakeController.start();
    const { events } = await startWorker({ tickMs: 50, controllerSilenceMs: 600 });
    fc.run.set("f1", runCommand("f1", ["sh", "-c", "echo ready; exec sleep 1000"]));
    fc.notify();
    const pid = (await observedState("f1", "RUNNING")).pid;
    await fc.close();
    const silentSince = Date.now();
    const ended = await waitFor("the attempt to be fenced", () => events.find((e) => e.type === "attemptEnded"));
    expect(ended).toMatchObject({ attemptUid: "f1", state: "FAILED", failureKind: "WORKER_LOST" });
    expect(Date.now() - silentSince).toBeGreaterThanOrEqual(300);
    expect(processAlive(pid)).toBe(false);
  });

  it("keeps several workers on one host apart with no options", async () => {
    fc = await FakeController.start();
    // Truly no options: the default root ($IRIS_STATE_DIR, else ~/.cache/iris/workers).
    const a = await startWorker({ stateRoot: undefined });
    const b = await startWorker({ stateRoot: undefined });
    await Promise.all([a.worker.registered, b.worker.registered]);
    expect(a.worker.id).not.toBe(b.worker.id);
    expect(a.worker.stateDir).not.toBe(b.worker.stateDir);
    expect(path.dirname(a.worker.stateDir)).toBe(defaultStateRoot());
    expect(path.dirname(b.worker.stateDir)).toBe(defaultStateRoot());
  });
});

describe("Worker restarts", () => {
  it("without adoption, an attempt dies with its SIGKILLed worker; the restarted worker reports it lost and never reruns it", async () => {
    fc = await FakeController.start();
    fc.run.set("r1", runCommand("r1", ["sh", "-c", "echo ready; exec sleep 1000"]));
    const stateDir = path.join(dir, "state");
    const sourceArgv = runnerArgv({ module: "/unused", export: "unused" }, "unused").slice(0, 3);
    const proc: ChildProcess = spawn(sourceArgv[0], [...sourceArgv.slice(1), path.join(import.meta.dirname, "testing", "workerProcess.ts"), fc.address, stateDir, "no-adopt"], {
      stdio: ["ignore", "pipe", "inherit"],
      detached: true,
    });
    cleanups.push(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"));
    const events: WorkerEvent[] = [];
    readline.createInterface({ input: proc.stdout! }).on("line", (l) => events.push(JSON.parse(l) as WorkerEvent));
    const started = await waitFor("the attempt to start", () => events.find((e) => e.type === "attemptStarted"), {
      timeoutMs: 30_000,
    });
    const pid = started.type === "attemptStarted" ? started.pid : 0;
    // The command runs directly in its own group (no supervisor): only the group reaper can end it.
    expect(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0]).toBe("sleep"); // sh exec'd it
    await observedState("r1", "RUNNING");
    const oldId = fc.registrations[0];
    // The live worker process holds the state directory.
    await expect(startWorker({ stateDir })).rejects.toMatchObject({ code: "FAILED_PRECONDITION" });

    process.kill(proc.pid!, "SIGKILL");
    const killedAt = Date.now();
    await waitFor("the orphaned attempt to exit", () => !processAlive(pid), { timeoutMs: 8000 });
    expect(Date.now() - killedAt).toBeLessThan(5000);

    const restarted = await startWorker({ stateDir, adoptAttempts: false });
    expect(restarted.worker.id).toBe(oldId);
    expect(await observedState("r1", "FAILED")).toMatchObject({ failureKind: "WORKER_LOST" });
    expect(restarted.events.filter((e) => e.type === "attemptStarted")).toEqual([]);
  });

  it("a worker restarted on its state directory adopts a running attempt: it keeps running, its output and exit arrive", async () => {
    fc = await FakeController.start();
    const gate = path.join(dir, "gate");
    const script = `echo before; while [ ! -f ${gate} ]; do sleep 0.05; done; echo after; echo oops >&2; exit 0`;
    fc.run.set("r1", runCommand("r1", ["sh", "-c", script]));
    const stateDir = path.join(dir, "state");
    const sourceArgv = runnerArgv({ module: "/unused", export: "unused" }, "unused").slice(0, 3);
    const proc: ChildProcess = spawn(sourceArgv[0], [...sourceArgv.slice(1), path.join(import.meta.dirname, "testing", "workerProcess.ts"), fc.address, stateDir], {
      stdio: ["ignore", "pipe", "inherit"],
      detached: true,
    });
    cleanups.push(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"));
    const events: WorkerEvent[] = [];
    readline.createInterface({ input: proc.stdout! }).on("line", (l) => events.push(JSON.parse(l) as WorkerEvent));
    const started = await waitFor("the attempt to start", () => events.find((e) => e.type === "attemptStarted"), { timeoutMs: 30_000 });
    const pid = started.type === "attemptStarted" ? started.pid : 0;
    await observedState("r1", "RUNNING");
    await waitFor("the line printed before the restart", () => fc!.linesOf("r1").includes("before"));
    process.kill(proc.pid!, "SIGKILL");
    await new Promise<void>((resolve) => (proc.exitCode !== null || proc.signalCode !== null ? resolve() : proc.once("exit", () => resolve())));
    expect(processAlive(pid)).toBe(true);

    const restarted = await startWorker({ stateDir });
    await waitFor("the attempt to be adopted", () => restarted.events.find((e) => e.type === "attemptAdopted"));
    expect(processAlive(pid)).toBe(true);
    fs.writeFileSync(gate, "");
    expect(await observedState("r1", "SUCCEEDED")).toMatchObject({ exitCode: 0 });
    expect(fc.linesOf("r1")).toEqual(expect.arrayContaining(["before", "after", "oops"]));
    expect(restarted.events.filter((e) => e.type === "attemptStarted")).toEqual([]);
  });

  it("kills recorded attempts that outlived the previous run, whether the controller still wants them or not", async () => {
    const stateDir = path.join(dir, "state");
    const store = new AttemptStore(stateDir);
    const survivors: ChildProcess[] = [];
    for (const uid of ["old-unwanted", "old-wanted"]) {
      const p = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
      survivors.push(p);
      cleanups.push(() => p.exitCode === null && p.signalCode === null && p.kill("SIGKILL"));
      store.write(spawnedRecord({ attemptUid: uid, attemptId: `/test/job/0:1`, startedAtMs: Date.now() }, p.pid!));
    }
    fc = await FakeController.start();
    fc.run.set("old-wanted", runCommand("old-wanted", ["true"]));
    const { events } = await startWorker({ stateDir });
    await waitFor("both leftovers to be killed", () => survivors.every((p) => p.signalCode !== null));
    expect(await observedState("old-wanted", "FAILED")).toMatchObject({ failureKind: "WORKER_LOST" });
    expect(fc.observed.has("old-unwanted")).toBe(false);
    expect(events.filter((e) => e.type === "attemptStarted")).toEqual([]);
    expect(store.list().map((r) => r.attemptUid)).toEqual(["old-wanted"]);
  });
  it("a worker started with no flags cleans up after a SIGKILLed one: kills its recorded attempts, removes its directory", async () => {
    fc = await FakeController.start();
    fc.run.set("s1", runCommand("s1", ["sh", "-c", "echo ready; exec sleep 1000"]));
    const root = path.join(dir, "root");
    const sourceArgv = runnerArgv({ module: "/unused", export: "unused" }, "unused").slice(0, 3);
    // No state flags at all: the directory comes from IRIS_STATE_DIR, as for `iris worker`.
    const proc: ChildProcess = spawn(sourceArgv[0], [...sourceArgv.slice(1), path.join(import.meta.dirname, "testing", "workerProcess.ts"), fc.address, "-"], {
      stdio: ["ignore", "pipe", "inherit"],
      detached: true,
      env: { ...process.env, IRIS_STATE_DIR: root },
    });
    const exited = new Promise((resolve) => proc.on("exit", resolve));
    cleanups.push(() => proc.exitCode === null && proc.signalCode === null && proc.kill("SIGKILL"));
    const events: WorkerEvent[] = [];
    readline.createInterface({ input: proc.stdout! }).on("line", (l) => events.push(JSON.parse(l) as WorkerEvent));
    const started = await waitFor("the attempt to start", () => events.find((e) => e.type === "attemptStarted"), {
      timeoutMs: 30_000,
    });
    const pid = started.type === "attemptStarted" ? started.pid : 0;
    await observedState("s1", "RUNNING");
    // The (scripted) controller no longer wants it, so that the new workers are not asked to run it.
    fc.run.delete("s1");
    const [oldDir] = fs.readdirSync(root);
    expect(oldDir).toMatch(/^worker-/);
    // The worker dies together with its group reaper (say, the OOM killer took both), with a
    // wedged (stopped) attempt, so that nothing but the sweep can end it.
    process.kill(-pid, "SIGSTOP");
    cleanups.push(() => processAlive(pid) && process.kill(-pid, "SIGKILL"));
    const reapers = childrenOf(proc.pid!, "groupReaper.mjs");
    expect(reapers).toHaveLength(1);
    process.kill(reapers[0]!, "SIGKILL");
    process.kill(proc.pid!, "SIGKILL");
    await exited;
    expect(processAlive(pid)).toBe(true);

    // A sibling worker of this process, in the same root, is alive and must be left alone.
    const sibling = await startWorker({ stateRoot: root });
    const restarted = await startWorker({ stateRoot: root });
    const swept = await waitFor("the dead worker's directory to be swept", () => [...sibling.events, ...restarted.events].find((e) => e.type === "deadWorkerSwept"));
    expect(swept).toMatchObject({ dir: path.join(root, oldDir), ownerPid: proc.pid, killed: [{ attemptUid: "s1", pid }] });
    await waitFor("the wedged attempt to die", () => !processAlive(pid));
    expect(fs.existsSync(path.join(root, oldDir))).toBe(false);
    expect(fs.readdirSync(root).sort()).toEqual([path.basename(sibling.worker.stateDir), path.basename(restarted.worker.stateDir)].sort());
    // Neither new worker ran it; the controller learns of its loss from the old worker's silence.
    expect([...sibling.events, ...restarted.events].filter((e) => e.type === "attemptStarted")).toEqual([]);
  });
});
