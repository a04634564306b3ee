// End-to-end tests of telling whether a recorded attempt's process group is still alive, with real processes.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { recordedGroupAlive, spawnedRecord } from "./attemptStore.ts";

describe("recordedGroupAlive", () => {
  it("trusts a live pid only with the recorded start time", async () => {
    const p = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
    try {
      const record = spawnedRecord({ attemptUid: "x", attemptId: "/u/j/0:1", startedAtMs: 0 }, p.pid!);
      expect(recordedGroupAlive(record)).toBe(true);
      // Same pid, another start time: the pid was reused by an unrelated process.
      expect(recordedGroupAlive({ ...record, startTicks: "1" })).toBe(false);
      expect(recordedGroupAlive({ attemptUid: "x", attemptId: "/u/j/0:1", startedAtMs: 0 })).toBe(false);
    } finally {
      p.kill("SIGKILL");
    }
  });
});
