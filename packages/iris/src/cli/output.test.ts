// Tests of the CLI's output formatting (tables, job status, exit codes).
import { describe, expect, it } from "vitest";
import type { JobStatus, TaskStatus, WorkerSummary } from "../jobSpec.ts";
import { clusterSummary, formatClusterSummary, formatWorkers, formatEndpoints, formatJobList, formatJobStatus, formatLogLine, formatTable, jobExitCode } from "./output.ts";

const GiB = 1024 ** 3;

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
    const gang = [task(0, { state: "FAILED", failureKind: "PEER_FAILED" }), task(1, { state: "FAILED", failureKind: "APP_EXIT", exitCode: 42 })];
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
    expect(
      formatTable(
        ["A", "BB"],
        [
          ["long", "x"],
          ["s", "y"],
        ],
      ),
    ).toBe("A     BB\nlong  x\ns     y\n");
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
    expect(formatEndpoints([{ name: "/u/j/coord", address: "10.0.0.1:99", metadata: { rank: "0" } }])).toBe("NAME        ADDRESS      METADATA\n/u/j/coord  10.0.0.1:99  rank=0\n");
  });

  it("lists workers with their load, cpu and memory used of capacity, devices and attributes", () => {
    const w: WorkerSummary = {
      workerId: "w-1",
      host: "h",
      state: "ALIVE",
      attributes: { zone: "a", rack: "2" },
      runningAttempts: 3,
      lastSeenMs: 0,
      capacity: { cpuMillis: 4000, memoryBytes: 8 * GiB, devices: { gpu: 2 } },
      used: { cpuMillis: 1500, memoryBytes: 2 * GiB, devices: { gpu: 1 } },
    };
    expect(formatWorkers([w])).toBe(
      "WORKER  HOST  STATE  RUNNING  CPU USED/TOTAL  MEMORY USED/TOTAL  DEVICES  ATTRIBUTES\n" +
        "w-1     h     ALIVE  3        1.5/4           2.0 GiB/8.0 GiB    gpu=1/2  zone=a,rack=2\n",
    );
    expect(formatWorkers([])).toBe("no workers\n");
  });

  it("summarizes the cluster like ray status: live capacity, jobs by state, pending tasks and why", () => {
    const mk = (id: string, state: string, cpu: number, used: number): WorkerSummary => ({
      workerId: id,
      host: "h",
      state,
      attributes: {},
      runningAttempts: 0,
      lastSeenMs: 0,
      capacity: { cpuMillis: cpu, memoryBytes: 4 * GiB, devices: {} },
      used: { cpuMillis: used, memoryBytes: GiB, devices: {} },
    });
    const jobs = [
      job("RUNNING", [task(0, { state: "RUNNING" }), task(1, { state: "PENDING", pendingReason: "insufficient cpu: need 2 cores, best worker has 1 core free (2 workers)" })]),
      job("SUCCEEDED", [task(0)], { name: "/u/done" }),
      job("SUCCEEDED", [task(0)], { name: "/u/done2" }),
    ];
    const summary = clusterSummary([mk("w1", "ALIVE", 2000, 1000), mk("w2", "ALIVE", 2000, 2000), mk("w3", "LOST", 8000, 0)], jobs);
    expect(summary.cpuMillis).toEqual({ total: 4000, used: 3000, free: 1000 });
    expect(formatClusterSummary(summary)).toBe(
      "workers: 2 alive, 1 lost\n" +
        "cpu:     3 of 4 cores used, 1 free\n" +
        "memory:  2.0 GiB of 8.0 GiB used, 6.0 GiB free\n" +
        "jobs:    1 RUNNING, 2 SUCCEEDED\n" +
        "pending tasks: 1\n" +
        "  /u/j/1: insufficient cpu: need 2 cores, best worker has 1 core free (2 workers)\n",
    );
    expect(formatClusterSummary(clusterSummary([], []))).toBe(
      "workers: 0 alive\ncpu:     0 of 0 cores used, 0 free\nmemory:  0 B of 0 B used, 0 B free\njobs:    none\npending tasks: none\n",
    );
  });

  it("prefixes log lines with the task index only for multi-task jobs", () => {
    const e = { taskIndex: 2, attempt: 1, stream: "stdout" as const, line: "hi", timeMs: 0 };
    expect(formatLogLine(e, false)).toBe("hi\n");
    expect(formatLogLine(e, true)).toBe("[2] hi\n");
  });
});
