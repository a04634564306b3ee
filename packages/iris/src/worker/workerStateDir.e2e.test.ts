// End-to-end tests of worker state directories: claiming, sweeping dead workers' leftovers.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AttemptStore, spawnedRecord } from "./attemptStore.ts";
import { processAlive } from "./testing/waitFor.ts";
import { defaultStateRoot, OWNER_FILE, selfOwner, sweepDeadStateDirs, type OwnerRecord } from "./workerStateDir.ts";

let root: string;
const procs: ChildProcess[] = [];

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "iris-state-root-test-"));
});

afterEach(() => {
  for (const p of procs.splice(0)) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  fs.rmSync(root, { recursive: true, force: true });
});

function sleeper(): ChildProcess {
  const p = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
  procs.push(p);
  return p;
}

/** A state directory as a worker leaves it: an owner record and attempt records of live processes. */
function stateDir(name: string, owner: OwnerRecord, attempts: { uid: string; pid: number; startTicks?: string }[]): string {
  const dir = path.join(root, name);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, OWNER_FILE), JSON.stringify(owner));
  const store = new AttemptStore(dir);
  for (const a of attempts) {
    const record = spawnedRecord({ attemptUid: a.uid, attemptId: "/u/j/0:1", startedAtMs: 0 }, a.pid);
    store.write(a.startTicks === undefined ? record : { ...record, startTicks: a.startTicks });
  }
  return dir;
}

describe("sweepDeadStateDirs", () => {
  it("kills a dead owner's attempts, but never a reused pid, and leaves live owners and other hosts alone", async () => {
    const self = selfOwner();
    // An owner that is gone: this process's pid with another start time is some other (dead) process.
    const deadOwner: OwnerRecord = { ...self, startTicks: "1" };
    const attempt = sleeper();
    const reused = sleeper();
    const dead = stateDir("worker-dead", deadOwner, [
      { uid: "real", pid: attempt.pid! },
      // The pid now belongs to an unrelated process (another start time): it must survive.
      { uid: "reused", pid: reused.pid!, startTicks: "1" },
    ]);
    const liveAttempt = sleeper();
    const live = stateDir("worker-live", self, [{ uid: "live", pid: liveAttempt.pid! }]);
    const elsewhereAttempt = sleeper();
    const elsewhere = stateDir("worker-elsewhere", { ...deadOwner, hostname: `${os.hostname()}-other` }, [{ uid: "elsewhere", pid: elsewhereAttempt.pid! }]);

    const swept = await sweepDeadStateDirs(root, { killGraceMs: 200 });

    expect(swept).toEqual([{ dir: dead, ownerPid: process.pid, killed: [{ attemptUid: "real", pid: attempt.pid }] }]);
    expect(fs.existsSync(dead)).toBe(false);
    expect(processAlive(attempt.pid!)).toBe(false);
    expect(processAlive(reused.pid!)).toBe(true);
    expect(fs.existsSync(live) && fs.existsSync(elsewhere)).toBe(true);
    expect(processAlive(liveAttempt.pid!) && processAlive(elsewhereAttempt.pid!)).toBe(true);
  });

  it("leaves a directory without an owner record alone while it may still be being created", async () => {
    const fresh = path.join(root, "worker-fresh");
    fs.mkdirSync(fresh);
    expect(await sweepDeadStateDirs(root, { killGraceMs: 200 })).toEqual([]);
    expect(fs.existsSync(fresh)).toBe(true);
    // An hour later, nobody has claimed it: it is a crashed start's and goes.
    const swept = await sweepDeadStateDirs(root, { killGraceMs: 200, nowMs: Date.now() + 3_600_000 });
    expect(swept).toEqual([{ dir: fresh, ownerPid: undefined, killed: [] }]);
    expect(fs.existsSync(fresh)).toBe(false);
  });
});

describe("defaultStateRoot", () => {
  it("is $IRIS_STATE_DIR when set, else ~/.cache/iris/workers", () => {
    expect(defaultStateRoot({ IRIS_STATE_DIR: "/srv/iris" })).toBe("/srv/iris");
    expect(defaultStateRoot({ IRIS_STATE_DIR: "" })).toBe(path.join(os.homedir(), ".cache", "iris", "workers"));
    expect(defaultStateRoot({})).toBe(path.join(os.homedir(), ".cache", "iris", "workers"));
  });
});
