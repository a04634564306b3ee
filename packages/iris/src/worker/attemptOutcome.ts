// Classifying how an attempt's process ended (exit, signal, OOM, timeout, stop, launch failure),
// and folding in what its task runner reported (a result, or a non-retryable APP_ERROR).
import { checkResultSize, type RunnerReport } from "../taskResult.ts";

/**
 * How an attempt ended, as the worker saw it. `APP_EXIT` with `exitCode` 0 is success; every
 * other outcome is a failure whose kind decides which retry budget the controller charges.
 */
export const ATTEMPT_EXIT_KINDS = ["APP_EXIT", "APP_ERROR", "SIGNAL", "OOM", "TIMEOUT", "KILLED", "LAUNCH_FAILED", "BUILD_FAILED"] as const;

/** One of {@link ATTEMPT_EXIT_KINDS}. */
export type AttemptExitKind = (typeof ATTEMPT_EXIT_KINDS)[number];

/** The classified end of an attempt, as the worker saw it (the controller turns it into its `AttemptOutcome`, a state transition). */
export interface AttemptExit {
  kind: AttemptExitKind;
  /** The process's exit code, when it exited rather than being killed by a signal. */
  exitCode?: number;
  /** The signal that ended the process, e.g. `"SIGKILL"`. */
  signal?: string;
  /** A one-line explanation for people (the last stderr line of a crash, the spawn error, …). */
  message: string;
  /** For `APP_ERROR`: the application's error code. */
  errorCode?: string;
  /** For a success: the JSON text of the module entrypoint's return value. */
  resultJson?: string;
}

/**
 * Folds a task runner's report into the classified exit: a clean exit carries the result; an
 * exit 1 with an application error becomes `APP_ERROR` (never retried). Anything else (killed,
 * timed out, OOM) keeps its kind: the report of a process that did not end by itself is moot.
 */
export function withRunnerReport(outcome: AttemptExit, report: RunnerReport | undefined): AttemptExit {
  if (report === undefined || outcome.kind !== "APP_EXIT") return outcome;
  if (outcome.exitCode === 0 && "resultJson" in report) {
    // Checked again here: the report file is the task's to write, and the limit is iris's.
    const checked = checkResultSize(report.resultJson);
    if ("resultJson" in checked) return { ...outcome, resultJson: checked.resultJson };
    return { kind: "APP_ERROR", exitCode: 0, errorCode: checked.appError.code, message: checked.appError.message };
  }
  if (outcome.exitCode !== 0 && "appError" in report) {
    return { kind: "APP_ERROR", ...(outcome.exitCode === undefined ? {} : { exitCode: outcome.exitCode }), errorCode: report.appError.code, message: report.appError.message };
  }
  return outcome;
}

/** What the supervisor observed about a process that ended (or never started). */
export interface ExitObservation {
  exitCode: number | null;
  signal: string | null;
  /** The worker asked the attempt to stop (terminate, preemption, not in the desired set). */
  stopRequested: boolean;
  /** The attempt ran past its per-task timeout and was stopped for it. */
  timedOut: boolean;
  /** The worker killed the attempt for exceeding its memory limit. */
  memoryLimitExceeded: boolean;
  /** The kernel's OOM killer killed something in the worker's memory cgroup while the attempt ran. */
  kernelOomKill?: boolean;
  /** The last lines the attempt wrote on stderr (newest last). */
  stderrTail: readonly string[];
  /** The error that prevented the process from starting at all. */
  spawnError?: Error;
}

/** Node's message when V8 cannot grow the heap (the process then aborts with SIGABRT / code 134). */
const HEAP_OOM = /JavaScript heap out of memory|Reached heap limit Allocation failed/;

/**
 * Classifies how an attempt ended. Order matters: a launch failure beats everything, a timeout or
 * a stop request explains whatever signal followed, and an out-of-memory death is recognised
 * before it is reported as a plain signal or exit code.
 */
export function classifyExit(o: ExitObservation): AttemptExit {
  const base = {
    ...(o.exitCode === null ? {} : { exitCode: o.exitCode }),
    ...(o.signal === null ? {} : { signal: o.signal }),
  };
  if (o.spawnError !== undefined) {
    return { kind: "LAUNCH_FAILED", message: `could not start the attempt: ${o.spawnError.message}` };
  }
  if (o.timedOut) return { kind: "TIMEOUT", ...base, message: "the attempt ran past its timeout" };
  if (o.memoryLimitExceeded) {
    return { kind: "OOM", ...base, message: "the attempt exceeded its memory limit and was killed" };
  }
  if (o.kernelOomKill === true && o.signal === "SIGKILL" && !o.stopRequested) {
    return { kind: "OOM", ...base, message: "killed by the kernel's OOM killer" };
  }
  const heapOom = o.stderrTail.some((line) => HEAP_OOM.test(line));
  if (heapOom && (o.exitCode === 134 || o.signal === "SIGABRT")) {
    return { kind: "OOM", ...base, message: "JavaScript heap out of memory" };
  }
  if (o.stopRequested) return { kind: "KILLED", ...base, message: "the attempt was stopped" };
  if (o.signal !== null) {
    return { kind: "SIGNAL", ...base, message: `killed by ${o.signal}${lastLine(o.stderrTail)}` };
  }
  const code = o.exitCode ?? 0;
  return {
    kind: "APP_EXIT",
    exitCode: code,
    message: code === 0 ? "exited with code 0" : `exited with code ${code}${lastLine(o.stderrTail)}`,
  };
}

/** Stack frames and Node's version footer say nothing about why a process failed. */
const NOISE = /^(at |Node\.js v\d|\^+$|\}$)/;

function lastLine(tail: readonly string[]): string {
  for (let i = tail.length - 1; i >= 0; i--) {
    const line = tail[i].trim();
    if (line !== "" && !NOISE.test(line)) return `: ${line.length > 300 ? `${line.slice(0, 300)}…` : line}`;
  }
  return "";
}
