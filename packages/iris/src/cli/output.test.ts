// Tests of the CLI's output formatting (tables, job status, exit codes).
import { describe, expect, it } from "vitest";
import type { JobStatus, TaskStatus } from "../jobSpec.ts";
import { formatWorkers, formatEndpoints, formatJobList, formatJobStatus, formatLogLine, formatTable, jobExitCode } from "./output.ts";

function task(index: number, extra: Partial<TaskStatus> = {}): TaskStatus {
  return { taskId: `/u/j/${index}`, index, state: "SUCCEEDED", attempt: 1, attempts: [], ...extra };
}
function job(state: JobStatus["state"], tasks: TaskStatus[], extra: Partial<JobStatus> = {}): JobStatus {
  return { name: "/u/j", instanceId: "i1", state, tasks, submittedAtMs: Date.UTC(2026, 0, 2, 3, 4, 5), ...extra };
}

describe("jobExitCode", () => {
  it("is 0 when the job succeeded", () => {
    expect(jobExitCode(job("SUCCEEDED", [task(0)]))).toBe(0);
  });
  it("is the task's code when exactly one task ended in APP_EXIT", () => {
    expect(jobExitCode(job("FAILED", [task(0, { state: "FAILED", failureKind: "APP_EXIT", exitCode: 3 })]))).toBe(3);
    const gang = [
      task(0, { state: "FAILED", failureKind: "PEER_FAILED" }),
      task(1, { state: "FAILED", failureKind: "APP_EXIT", exitCode: 42 }),
    ];
    expect(jobExitCode(job("FAILED", gang))).toBe(42);
  });
  it("is 1 otherwise", () => {
    expect(jobExitCode(job("KILLED", [task(0, { state: "KILLED", failureKind: "KILLED" })]))).toBe(1);
    expect(jobExitCode(job("FAILED", [task(0, { state: "FAILED", failureKind: "SIGNAL" })]))).toBe(1);
    expect(jobExitCode(job("UNSCHEDULABLE", [task(0, { state: "UNSCHEDULABLE" })]))).toBe(1);
    const two = [0, 1].map((i) => task(i, { state: "FAILED", failureKind: "APP_EXIT", exitCode: 2 + i }));
    expect(jobExitCode(job("FAILED", two))).toBe(1);
    expect(jobExitCode(job("FAILED", [task(0, { state: "FAILED", failureKind: "APP_EXIT", exitCode: 300 })]))).toBe(1);
  });
});

describe("formatting", () => {
  it("puts the job state alone on the first line of status", () => {
    const out = formatJobStatus(
      job("PENDING", [task(0, { state: "PENDING", attempt: 0, pendingReason: "insufficient memory: need 2.0 GiB, best worker has 1.0 GiB free (1 worker)" })]),
    );
    const lines = out.split("\n");
    expect(lines[0]).toBe("PENDING");
    expect(out).toContain("submitted: 2026-01-02T03:04:05Z");
    expect(out).toMatch(/^0 +PENDING +0 +insufficient memory: need 2\.0 GiB/m);
  });

  it("aligns tables", () => {
    expect(formatTable(["A", "BB"], [["long", "x"], ["s", "y"]])).toBe("A     BB\nlong  x\ns     y\n");
  });

  it("lists jobs with task counts by state", () => {
    const out = formatJobList([job("RUNNING", [task(0, { state: "RUNNING" }), task(1, { state: "RUNNING" }), task(2, { state: "PENDING" })])]);
    expect(out.split("\n")[1]).toMatch(/^\/u\/j +RUNNING +2 RUNNING, 1 PENDING +2026-01-02T03:04:05Z$/);
    expect(formatJobList([])).toBe("no jobs\n");
  });

  it("lists job summaries (ListJobs pages carry counts, not tasks)", () => {
    const out = formatJobList([job("RUNNING", [], { taskCounts: { RUNNING: 4000, PENDING: 96_000 }, numTasks: 100_000 })]);
    expect(out.split("\n")[1]).toMatch(/^\/u\/j +RUNNING +4000 RUNNING, 96000 PENDING +2026/);
  });

  it("lists endpoints with metadata", () => {
    expect(formatEndpoints([{ name: "/u/j/coord", address: "10.0.0.1:99", metadata: { rank: "0" } }])).toBe(
      "NAME        ADDRESS      METADATA\n/u/j/coord  10.0.0.1:99  rank=0\n",
    );
  });

  it("lists workers with their load and attributes", () => {
    expect(formatWorkers([{ workerId: "w-1", host: "h", state: "ALIVE", attributes: { zone: "a", rack: "2" }, runningAttempts: 3 }])).toBe(
      "WORKER  HOST  STATE  RUNNING  ATTRIBUTES\nw-1     h     ALIVE  3        zone=a,rack=2\n",
    );
    expect(formatWorkers([])).toBe("no workers\n");
  });

  it("prefixes log lines with the task index only for multi-task jobs", () => {
    const e = { taskIndex: 2, attempt: 1, stream: "stdout" as const, line: "hi", timeMs: 0 };
    expect(formatLogLine(e, false)).toBe("hi\n");
    expect(formatLogLine(e, true)).toBe("[2] hi\n");
  });
});
