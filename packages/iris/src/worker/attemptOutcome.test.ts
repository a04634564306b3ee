// Tests of classifying an attempt's end and folding in its runner's report.
import { describe, expect, it } from "vitest";
import { MAX_TASK_RESULT_BYTES } from "../taskResult.ts";
import { classifyExit, withRunnerReport, type ExitObservation } from "./attemptOutcome.ts";

const ended = (o: Partial<ExitObservation>): ExitObservation => ({
  exitCode: null,
  signal: null,
  stopRequested: false,
  timedOut: false,
  memoryLimitExceeded: false,
  stderrTail: [],
  ...o,
});

describe("classifyExit", () => {
  it("reports a clean exit as APP_EXIT 0", () => {
    expect(classifyExit(ended({ exitCode: 0 }))).toMatchObject({ kind: "APP_EXIT", exitCode: 0 });
  });

  it("reports a non-zero exit with the last meaningful stderr line, skipping stack frames", () => {
    const out = classifyExit(ended({ exitCode: 3, stderrTail: ["Error: disk full", "    at main (/x.ts:1:1)", "", "Node.js v20.20.2"] }));
    expect(out).toMatchObject({ kind: "APP_EXIT", exitCode: 3 });
    expect(out.message).toBe("exited with code 3: Error: disk full");
  });

  it("reports a signal the worker did not send as SIGNAL", () => {
    expect(classifyExit(ended({ signal: "SIGSEGV" }))).toMatchObject({ kind: "SIGNAL", signal: "SIGSEGV" });
  });

  it("reports the end of a stopped attempt as KILLED whatever signal or code followed", () => {
    expect(classifyExit(ended({ signal: "SIGTERM", stopRequested: true })).kind).toBe("KILLED");
    expect(classifyExit(ended({ signal: "SIGKILL", stopRequested: true })).kind).toBe("KILLED");
    expect(classifyExit(ended({ exitCode: 0, stopRequested: true })).kind).toBe("KILLED");
  });

  it("reports a timeout as TIMEOUT even though the worker sent the signal", () => {
    expect(classifyExit(ended({ signal: "SIGTERM", stopRequested: true, timedOut: true })).kind).toBe("TIMEOUT");
  });

  it("recognises Node's heap exhaustion as OOM, but not the same text with another exit", () => {
    const tail = ["<--- Last few GCs --->", "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"];
    expect(classifyExit(ended({ exitCode: 134, stderrTail: tail })).kind).toBe("OOM");
    expect(classifyExit(ended({ signal: "SIGABRT", stderrTail: tail })).kind).toBe("OOM");
    expect(classifyExit(ended({ exitCode: 1, stderrTail: tail })).kind).toBe("APP_EXIT");
    expect(classifyExit(ended({ exitCode: 134 })).kind).toBe("APP_EXIT");
  });

  it("reports a kill for exceeding the memory limit as OOM", () => {
    expect(classifyExit(ended({ signal: "SIGKILL", memoryLimitExceeded: true }))).toMatchObject({
      kind: "OOM",
      signal: "SIGKILL",
    });
  });

  it("reports a SIGKILL the worker did not send, while the kernel OOM-killed, as OOM", () => {
    expect(classifyExit(ended({ signal: "SIGKILL", kernelOomKill: true }))).toMatchObject({ kind: "OOM" });
    expect(classifyExit(ended({ signal: "SIGKILL", kernelOomKill: false })).kind).toBe("SIGNAL");
    expect(classifyExit(ended({ signal: "SIGKILL", kernelOomKill: true, stopRequested: true })).kind).toBe("KILLED");
  });

  it("reports a spawn error as LAUNCH_FAILED with its message", () => {
    const out = classifyExit(ended({ spawnError: new Error("spawn nope ENOENT") }));
    expect(out.kind).toBe("LAUNCH_FAILED");
    expect(out.message).toContain("spawn nope ENOENT");
  });
});

describe("withRunnerReport", () => {
  const exit = (code: number) => classifyExit(ended({ exitCode: code }));

  it("attaches a clean exit's result, and turns exit 1 with an app error into APP_ERROR", () => {
    expect(withRunnerReport(exit(0), { resultJson: "[1,2]" })).toMatchObject({ kind: "APP_EXIT", exitCode: 0, resultJson: "[1,2]" });
    expect(withRunnerReport(exit(1), { appError: { code: "BAD", message: "no" } })).toEqual({
      kind: "APP_ERROR",
      exitCode: 1,
      errorCode: "BAD",
      message: "no",
    });
  });

  it("refuses an oversize result written by hand, and ignores reports of processes that did not end by themselves", () => {
    expect(withRunnerReport(exit(0), { resultJson: "1".repeat(MAX_TASK_RESULT_BYTES + 1) })).toMatchObject({
      kind: "APP_ERROR",
      errorCode: "RESULT_TOO_LARGE",
    });
    const killed = classifyExit(ended({ signal: "SIGTERM", stopRequested: true }));
    expect(withRunnerReport(killed, { appError: { code: "BAD", message: "no" } })).toBe(killed);
    expect(withRunnerReport(exit(3), undefined)).toMatchObject({ kind: "APP_EXIT", exitCode: 3 });
  });
});
