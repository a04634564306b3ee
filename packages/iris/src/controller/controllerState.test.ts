// Tests of the controller's state machine on a fake clock and a real SQLite file.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AttemptObservation__Output } from "../internal/generated/iris/v1/AttemptObservation.ts";
import { normalizeJobSpec } from "../jobSpec.ts";
import type { JobSpecInput } from "../jobSpec.ts";
import { ControllerState, deriveJobState } from "./controllerState.ts";
import { openDb } from "./db.ts";
import type { Db } from "./db.ts";
import { MAX_TASK_RESULT_BYTES } from "../taskResult.ts";

const GB = 1024 ** 3;

class FakeClock {
  t = 1_000_000;
  now(): number {
    return this.t;
  }
}

function obs(uid: string, state: string, extra: Partial<AttemptObservation__Output> = {}): AttemptObservation__Output {
  return {
    attemptUid: uid,
    taskId: "",
    attempt: 0,
    state,
    failureKind: "",
    error: "",
    pid: 1,
    startedAtMs: 0,
    finishedAtMs: 0,
    logLines: 0,
    resultJson: "",
    errorCode: "",
    ...extra,
  };
}

describe("ControllerState", () => {
  let dir: string;
  let db: Db;
  let clock: FakeClock;
  let s: ControllerState;

  const launch = (name: string, spec: Partial<JobSpecInput> = {}) => s.jobs.launchJob(normalizeJobSpec({ entrypoint: { command: ["true"] }, ...spec }, name));
  const addWorker = (id: string, cpuMillis = 4000) =>
    s.workers.registerWorker({ workerId: id, host: "127.0.0.1", attributes: {}, capacity: { cpuMillis, memoryBytes: 8 * GB, devices: {} } });
  const runSet = (w: string) => s.workers.reconcile(w, [], { healthy: true }).run;
  const job = (name: string) => s.queries.jobStatus(s.queries.findJob(name).instance_id);

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "iris-state-"));
    db = openDb(path.join(dir, "c.sqlite"));
    clock = new FakeClock();
    s = new ControllerState(db, { clock, workerTimeoutMs: 3000, metricsLimit: 5, logLinesLimit: 6 });
  });
  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("derives job state from task states", () => {
    expect(deriveJobState(["PENDING", "PENDING"], 0)).toBe("PENDING");
    expect(deriveJobState(["RUNNING", "PENDING"], 0)).toBe("RUNNING");
    expect(deriveJobState(["SUCCEEDED", "SUCCEEDED"], 0)).toBe("SUCCEEDED");
    expect(deriveJobState(["SUCCEEDED", "FAILED"], 0)).toBe("FAILED");
    expect(deriveJobState(["SUCCEEDED", "FAILED"], 1)).toBe("SUCCEEDED");
    expect(deriveJobState(["KILLED", "KILLED"], 0)).toBe("KILLED");
    expect(deriveJobState(["WORKER_LOST", "RUNNING"], 0)).toBe("FAILED");
  });

  it("runs a job to success and keeps history when the name is reused", () => {
    addWorker("w1");
    const first = launch("/alice/job", { replicas: 2 });
    expect(() => launch("/alice/job")).toThrow(/ALREADY_EXISTS|still/);
    s.jobs.schedulePass();
    const run = runSet("w1");
    expect(run.map((r) => r.taskIndex).sort()).toEqual([0, 1]);
    expect(run[0]!.numTasks).toBe(2);
    s.workers.reconcile(
      "w1",
      run.map((r) => obs(r.attemptUid!, "RUNNING")),
      { healthy: true },
    );
    expect(job("/alice/job").state).toBe("RUNNING");
    s.workers.reconcile(
      "w1",
      run.map((r) => obs(r.attemptUid!, "SUCCEEDED", { exitCode: 0 })),
      { healthy: true },
    );
    expect(job("/alice/job").state).toBe("SUCCEEDED");
    expect(runSet("w1")).toEqual([]);
    const second = launch("/alice/job");
    expect(second.instanceId).not.toBe(first.instanceId);
    expect(s.queries.jobStatus(first.instanceId).state).toBe("SUCCEEDED");
    expect(job("/alice/job").instanceId).toBe(second.instanceId);
  });

  it("retries a failed task within maxRetriesFailure, then fails the job", () => {
    addWorker("w1");
    launch("/alice/flaky", { maxRetriesFailure: 1 });
    for (let i = 0; i < 2; i++) {
      s.jobs.schedulePass();
      const [r] = runSet("w1");
      expect(r!.attempt).toBe(i + 1);
      s.workers.reconcile("w1", [obs(r!.attemptUid!, "FAILED", { exitCode: 3, failureKind: "APP_EXIT" })], { healthy: true });
    }
    const st = job("/alice/flaky");
    expect(st.state).toBe("FAILED");
    expect(st.tasks![0]!.failures).toBe(2);
    expect(st.error).toMatch(/APP_EXIT\(3\)/);
  });

  it("fails an APP_ERROR for good whatever the budget, and keeps a success's result", () => {
    addWorker("w1");
    launch("/alice/refused", { maxRetriesFailure: 5 });
    launch("/alice/answered", { replicas: 2 });
    s.jobs.schedulePass();
    const run = runSet("w1");
    const byJob = (name: string) => run.filter((r) => r.jobId === name);
    const [refused] = byJob("/alice/refused");
    const [a0, a1] = byJob("/alice/answered");
    s.workers.reconcile(
      "w1",
      [
        obs(refused!.attemptUid!, "FAILED", { exitCode: 1, failureKind: "APP_ERROR", errorCode: "BAD_INPUT", error: "no such dataset" }),
        obs(a0!.attemptUid!, "SUCCEEDED", { exitCode: 0, resultJson: '{"n":1}' }),
        obs(a1!.attemptUid!, "SUCCEEDED", { exitCode: 0, resultJson: "x".repeat(MAX_TASK_RESULT_BYTES + 1) }),
      ],
      { healthy: true },
    );
    s.jobs.schedulePass();
    expect(runSet("w1")).toEqual([]);
    const r = job("/alice/refused");
    expect(r.state).toBe("FAILED");
    expect(r.tasks![0]).toMatchObject({ state: "FAILED", failureKind: "APP_ERROR", errorCode: "BAD_INPUT", failures: 1 });
    expect(r.tasks![0]!.attempts).toHaveLength(1);
    expect(r.error).toBe("task /alice/refused/0 failed: APP_ERROR(BAD_INPUT): no such dataset");
    // A result over the limit is refused here too, whatever the worker let through.
    const a = job("/alice/answered");
    expect(a.tasks![0]).toMatchObject({ state: "SUCCEEDED", resultJson: '{"n":1}' });
    expect(a.tasks![0]!.attempts![0]).toMatchObject({ resultJson: '{"n":1}' });
    expect(a.tasks![1]).toMatchObject({ state: "FAILED", failureKind: "APP_ERROR", errorCode: "RESULT_TOO_LARGE", resultJson: "" });
    expect(a.state).toBe("FAILED");
  });

  it("declares a silent worker lost and retries its attempts elsewhere against the preemption budget", () => {
    addWorker("w1");
    launch("/alice/long", { maxRetriesFailure: 0 });
    s.jobs.schedulePass();
    const [r] = runSet("w1");
    addWorker("w2");
    clock.t += 2000;
    s.workers.reconcile("w2", [], { healthy: true });
    clock.t += 2000;
    expect(s.workers.checkWorkers().lost).toEqual(["w1"]);
    let st = job("/alice/long");
    expect(st.tasks![0]!.attempts![0]!.failureKind).toBe("WORKER_LOST");
    expect(st.tasks![0]!.preemptions).toBe(1);
    expect(st.tasks![0]!.failures).toBe(0);
    s.jobs.schedulePass();
    const [r2] = runSet("w2");
    expect(r2!.attempt).toBe(2);
    // The lost worker comes back still running the old attempt: it is told to stop it.
    expect(() => s.workers.reconcile("w1", [], { healthy: true })).toThrow(/register again/);
    addWorker("w1");
    expect(s.workers.reconcile("w1", [obs(r!.attemptUid!, "RUNNING")], { healthy: true }).stop.map((x) => x.attemptUid)).toEqual([r!.attemptUid]);
    s.workers.reconcile("w2", [obs(r2!.attemptUid!, "SUCCEEDED", { exitCode: 0 })], { healthy: true });
    st = job("/alice/long");
    expect(st.state).toBe("SUCCEEDED");
  });

  it("ends a gang's other members as PEER_FAILED and reruns the whole gang", () => {
    addWorker("w1");
    addWorker("w2");
    launch("/alice/gang", { replicas: 2, gang: true, maxRetriesFailure: 1 });
    s.jobs.schedulePass();
    const a = runSet("w1")[0]!;
    const b = runSet("w2")[0]!;
    s.workers.reconcile("w1", [obs(a.attemptUid!, "FAILED", { exitCode: 1, failureKind: "APP_EXIT" })], { healthy: true });
    const st = job("/alice/gang");
    const peer = st.tasks!.find((t) => t.index === b.taskIndex)!;
    expect(peer.attempts![0]!.failureKind).toBe("PEER_FAILED");
    expect(peer.failures).toBe(0);
    expect(s.workers.reconcile("w2", [obs(b.attemptUid!, "RUNNING")], { healthy: true }).stop.map((x) => x.reason)).toEqual(["PEER_FAILED"]);
    s.workers.reconcile("w2", [obs(b.attemptUid!, "KILLED", { failureKind: "KILLED" })], { healthy: true });
    s.jobs.schedulePass();
    const again = [...runSet("w1"), ...runSet("w2")];
    expect(again.map((r) => r.attempt)).toEqual([2, 2]);
    // Every member of a round gets the same IRIS_GANG_SECRET; the rerun gets a new one.
    const secret = (r: { env?: Record<string, string> }) => r.env?.IRIS_GANG_SECRET;
    expect(secret(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(secret(b)).toBe(secret(a));
    expect(secret(again[0]!)).toBe(secret(again[1]!));
    expect(secret(again[0]!)).not.toBe(secret(a));
  });

  it("charges one preemption when a worker running several gang members is lost", () => {
    addWorker("w1");
    addWorker("w2");
    launch("/alice/gang2", { replicas: 2, gang: true });
    s.jobs.schedulePass();
    const [a] = runSet("w1");
    const [b] = runSet("w2");
    s.workers.reconcile("w1", [obs(a!.attemptUid!, "RUNNING")], { healthy: true });
    s.workers.reconcile("w2", [obs(b!.attemptUid!, "RUNNING")], { healthy: true });
    clock.t += 4000;
    expect(s.workers.checkWorkers().lost.sort()).toEqual(["w1", "w2"]);
    const st = job("/alice/gang2");
    expect(st.tasks!.map((t) => t.preemptions).sort()).toEqual([0, 1]);
    expect(st.tasks!.map((t) => t.attempts![0]!.failureKind).sort()).toEqual(["PEER_FAILED", "WORKER_LOST"]);
    expect(st.tasks!.every((t) => t.state === "PENDING")).toBe(true);
  });

  it("keeps a gang that fits the registered capacity but not the free capacity pending with a reason", () => {
    addWorker("w1", 2000);
    addWorker("w2", 2000);
    launch("/alice/hog", { resources: { cpuMillis: 2000 } });
    s.jobs.schedulePass();
    launch("/alice/gang2", { replicas: 2, gang: true, resources: { cpuMillis: 2000 } });
    s.jobs.schedulePass();
    const st = job("/alice/gang2");
    expect(st.state).toBe("PENDING");
    expect(st.tasks![0]!.pendingReason).toMatch(/gang of 2 needs 2 workers/);
  });

  it("ends a job no registered worker could ever hold as UNSCHEDULABLE at once, with the reason", () => {
    addWorker("w1");
    launch("/alice/biggang", { replicas: 3, gang: true });
    launch("/alice/huge", { resources: { cpuMillis: 64_000 } });
    s.jobs.schedulePass();
    const gang = job("/alice/biggang");
    expect(gang.state).toBe("UNSCHEDULABLE");
    expect(gang.tasks!.map((t) => t.state)).toEqual(["UNSCHEDULABLE", "UNSCHEDULABLE", "UNSCHEDULABLE"]);
    expect(gang.error).toMatch(/^task \/alice\/biggang\/0 is unschedulable: gang of 3 needs 3 workers .* only 1 of 1 registered worker could ever hold a member/);
    const huge = job("/alice/huge");
    expect(huge.state).toBe("UNSCHEDULABLE");
    expect(huge.error).toBe("task /alice/huge/0 is unschedulable: needs cpu 64 cores, the largest of 1 registered worker has 4 cores");
    expect(huge.finishedAtMs).toBe(clock.t);
  });

  it("with no worker registered, ends a job UNSCHEDULABLE once its scheduling timeout runs out (fake clock)", () => {
    s = new ControllerState(db, { clock, workerTimeoutMs: 3000, schedulingTimeoutMs: 60_000 });
    launch("/alice/waits");
    launch("/alice/short", { schedulingTimeoutMs: 10_000 });
    launch("/alice/forever", { schedulingTimeoutMs: 0 });
    s.jobs.schedulePass();
    expect(job("/alice/waits").tasks![0]!.pendingReason).toBe("no workers registered");
    clock.t += 10_000;
    s.jobs.schedulePass(); // nothing changed but a deadline ran out: the pass runs anyway
    expect(job("/alice/short").state).toBe("UNSCHEDULABLE");
    expect(job("/alice/waits").state).toBe("PENDING");
    clock.t += 50_000;
    s.jobs.schedulePass();
    expect(job("/alice/waits").state).toBe("UNSCHEDULABLE");
    expect(job("/alice/waits").error).toBe("task /alice/waits/0 is unschedulable: no worker registered within the scheduling timeout (1 min)");
    clock.t += 3_600_000;
    s.jobs.schedulePass();
    expect(job("/alice/forever").state).toBe("PENDING");
  });

  it("counts the scheduling timeout from when the last worker went away, not from submission", () => {
    s = new ControllerState(db, { clock, workerTimeoutMs: 3000, schedulingTimeoutMs: 60_000 });
    addWorker("w1");
    launch("/alice/hog", { resources: { cpuMillis: 4000 } });
    s.jobs.schedulePass();
    launch("/alice/queued", { resources: { cpuMillis: 4000 } });
    s.jobs.schedulePass();
    clock.t += 120_000; // queued for two minutes behind the hog: still fits the cluster, still waits
    s.workers.checkWorkers(); // w1 silent: lost, no worker left
    s.jobs.schedulePass();
    expect(job("/alice/queued").state).toBe("PENDING");
    clock.t += 60_000;
    s.jobs.schedulePass();
    expect(job("/alice/queued").state).toBe("UNSCHEDULABLE");
  });

  it("terminates a job and its children, and drops endpoints leased to ended attempts", () => {
    addWorker("w1");
    launch("/alice/parent");
    s.jobs.schedulePass();
    const [p] = runSet("w1");
    s.workers.reconcile("w1", [obs(p!.attemptUid!, "RUNNING")], { healthy: true });
    launch("/alice/parent/child");
    s.jobs.schedulePass();
    s.records.registerEndpoint({ name: "svc", address: "127.0.0.1:1", metadata: {}, attemptId: "/alice/parent/0:1", scopeJob: "" });
    expect(s.queries.resolveEndpoint("/alice/parent/svc", "").address).toBe("127.0.0.1:1");
    expect(s.queries.resolveEndpoint("svc", "/alice/parent/child").name).toBe("/alice/parent/svc");
    s.jobs.terminateJob("/alice/parent");
    expect(job("/alice/parent").state).toBe("KILLED");
    expect(job("/alice/parent/child").state).toBe("KILLED");
    expect(() => s.queries.resolveEndpoint("/alice/parent/svc", "")).toThrow(/no endpoint/);
    const after = s.workers.reconcile("w1", [obs(p!.attemptUid!, "RUNNING")], { healthy: true });
    expect(after.stop).toEqual([{ attemptUid: p!.attemptUid, reason: "KILLED" }]);
    expect(after.run).toEqual([]);
  });

  it("keeps a bounded metrics series per attempt", () => {
    addWorker("w1");
    launch("/alice/train");
    s.jobs.schedulePass();
    for (let i = 0; i < 8; i++) s.records.reportTaskStatus("/alice/train/0", 0, `step ${i}`, { step: i, loss: 10 - i });
    const m = s.queries.taskMetrics("/alice/train/0", 0);
    expect(m.statusText).toBe("step 7");
    expect(m.points.map((p) => p.step)).toEqual([3, 4, 5, 6, 7]);
  });

  it("keeps everything across a reopen of the database and adopts what workers still run", () => {
    addWorker("w1");
    launch("/alice/keep", { replicas: 2 });
    s.jobs.schedulePass();
    const run = runSet("w1");
    s.workers.reconcile(
      "w1",
      run.map((r, i) => obs(r.attemptUid!, "RUNNING", { logLines: i === 0 ? 1 : 0 })),
      { healthy: true },
    );
    s.records.appendLogs([{ attemptUid: run[0]!.attemptUid!, stream: "stdout", line: "hello", timeMs: clock.t }]);
    s.records.registerEndpoint({ name: "svc", address: "127.0.0.1:9", metadata: {}, attemptId: "/alice/keep/0:1", scopeJob: "" });
    s.records.reportTaskStatus("/alice/keep/0", 0, "halfway", { step: 1, loss: 2 });
    db.close();

    // A new process on the same file, much later: the worker gets a full timeout to come back.
    clock.t += 60_000;
    db = openDb(path.join(dir, "c.sqlite"));
    s = new ControllerState(db, { clock, workerTimeoutMs: 3000 });
    expect(s.workers.checkWorkers().lost).toEqual([]);
    const again = s.workers.reconcile(
      "w1",
      run.map((r, i) => obs(r.attemptUid!, "RUNNING", { logLines: i === 0 ? 1 : 0 })),
      { healthy: true },
    );
    expect(again.run.map((r) => r.attemptUid).sort()).toEqual(run.map((r) => r.attemptUid).sort());
    expect(again.stop).toEqual([]);
    const st = job("/alice/keep");
    expect(st.state).toBe("RUNNING");
    expect(st.tasks!.map((t) => t.attempts!.length)).toEqual([1, 1]);
    expect(s.queries.readLogs(st.instanceId!, 0, undefined).map((l) => l.line)).toEqual(["hello"]);
    expect(s.queries.resolveEndpoint("/alice/keep/svc", "").address).toBe("127.0.0.1:9");
    expect(s.queries.taskMetrics("/alice/keep/0", 0)).toMatchObject({ statusText: "halfway", points: [{ step: 1, metrics: { step: 1, loss: 2 } }] });
    s.workers.reconcile(
      "w1",
      run.map((r, i) => obs(r.attemptUid!, "SUCCEEDED", { exitCode: 0, logLines: i === 0 ? 1 : 0 })),
      { healthy: true },
    );
    expect(job("/alice/keep").state).toBe("SUCCEEDED");
    expect(s.queries.logsComplete(st.instanceId!)).toBe(true);
  });

  it("tells workers how many log lines it holds and drops resent ones", () => {
    addWorker("w1");
    launch("/alice/logs");
    s.jobs.schedulePass();
    const [r] = runSet("w1");
    const uid = r!.attemptUid!;
    const line = (i: number) => ({ attemptUid: uid, stream: "stdout", line: `l${i}`, timeMs: clock.t, index: i });
    s.records.appendLogs([line(0), line(1)]);
    expect(s.workers.reconcile("w1", [obs(uid, "RUNNING", { logLines: 4 })], { healthy: true }).logLinesReceived).toEqual({ [uid]: 2 });
    // The worker resends from its last write (1..3): line 1 is a duplicate.
    s.records.appendLogs([line(1), line(2), line(3)]);
    const st = job("/alice/logs");
    expect(s.queries.readLogs(st.instanceId!, 0, undefined).map((l) => l.line)).toEqual(["l0", "l1", "l2", "l3"]);
    // Past the per-attempt limit (6 here) lines are dropped behind one notice, but still counted.
    s.records.appendLogs([4, 5, 6, 7, 8].map(line));
    expect(s.queries.readLogs(st.instanceId!, 0, undefined).map((l) => l.line)).toEqual([
      "l0",
      "l1",
      "l2",
      "l3",
      "l4",
      "l5",
      "[iris] log truncated: this attempt printed more than 6 lines",
    ]);
    s.workers.reconcile("w1", [obs(uid, "SUCCEEDED", { exitCode: 0, logLines: 9 })], { healthy: true });
    expect(s.queries.logsComplete(st.instanceId!)).toBe(true);
  });

  it("rejects invalid specs naming the field", () => {
    expect(() => normalizeJobSpec({ entrypoint: { command: ["x"] }, replicas: -3 }, "/a/b")).toThrow(/replicas/);
    expect(() => normalizeJobSpec({ entrypoint: { command: [] } }, "/a/b")).toThrow(/entrypoint/);
    expect(() => normalizeJobSpec({ entrypoint: { command: ["x"] } }, "/a/7")).toThrow(/may not be a number/);
  });

  it("keeps no spec of an ended job, and bounds the specs of running ones (entries and bytes)", () => {
    // Env is capped at LIMITS.envBytes (256 KiB): 250 KiB specs, a cache of 1 MiB holds 4.
    const bigEnv = { PAD: "x".repeat(250 * 1024) };
    for (let i = 0; i < 40; i++) {
      const { name } = launch(`/u/big${i}`, { env: bigEnv });
      s.jobs.terminateJob(name);
    }
    expect(s.core.specCache.size).toEqual({ entries: 0, bytes: 0 });
    const bounded = new ControllerState(db, { clock, specCacheLimits: { entries: 1000, bytes: 1024 * 1024 } });
    for (let i = 0; i < 20; i++) bounded.jobs.launchJob(normalizeJobSpec({ entrypoint: { command: ["true"] }, env: bigEnv }, `/u/live${i}`));
    expect(bounded.core.specCache.size.bytes).toBeLessThanOrEqual(1024 * 1024);
    expect(bounded.core.specCache.size.entries).toBe(4);
    // An evicted spec is read back from the database when needed.
    const first = bounded.queries.findJob("/u/live0").instance_id;
    expect(bounded.queries.specOf(first).env.PAD).toHaveLength(250 * 1024);
  });
});
