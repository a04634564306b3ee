// What the CLI prints, as pure functions of the client's types (unit-tested in output.test.ts).
import type { Endpoint, JobStatus, LogEntry } from "../jobSpec.ts";

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function formatTable(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, c) => Math.max(...all.map((r) => (r[c] ?? "").length)));
  return all.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]))).join("  ").trimEnd()).join("\n") + "\n";
}

/** "2 RUNNING, 1 PENDING": task counts by state, in order of first appearance. */
export function summarizeTasks(st: JobStatus): string {
  const counts = new Map<string, number>();
  if (st.taskCounts !== undefined && (st.tasks.length === 0 || st.tasks.length < (st.numTasks ?? 0))) {
    for (const [s, n] of Object.entries(st.taskCounts)) if (n) counts.set(s, n);
  } else for (const t of st.tasks) counts.set(t.state, (counts.get(t.state) ?? 0) + 1);
  return [...counts].map(([s, n]) => `${n} ${s}`).join(", ");
}

const iso = (ms: number | undefined): string => (ms ? new Date(ms).toISOString().replace(/\.\d+Z$/, "Z") : "");

/** `iris job list`: one row per job. */
export function formatJobList(jobs: JobStatus[]): string {
  if (jobs.length === 0) return "no jobs\n";
  return formatTable(
    ["NAME", "STATE", "TASKS", "SUBMITTED"],
    jobs.map((j) => [j.name, j.state, summarizeTasks(j), iso(j.submittedAtMs)]),
  );
}

/** `iris job status`: the state alone on the first line (scripts read it), then the details. */
export function formatJobStatus(st: JobStatus): string {
  let out = `${st.state}\n`;
  out += `name:      ${st.name}\n`;
  out += `instance:  ${st.instanceId}\n`;
  out += `submitted: ${iso(st.submittedAtMs)}\n`;
  if (st.finishedAtMs) out += `finished:  ${iso(st.finishedAtMs)}\n`;
  if (st.error) out += `error:     ${st.error}\n`;
  out += "\n";
  out += formatTable(
    ["TASK", "STATE", "ATTEMPT", "EXIT", "WORKER", "DETAIL"],
    st.tasks.map((t) => [
      String(t.index),
      t.state,
      String(t.attempt),
      t.failureKind
        ? t.failureKind === "APP_EXIT"
          ? `APP_EXIT(${t.exitCode ?? "?"})`
          : t.failureKind === "APP_ERROR"
            ? `APP_ERROR(${t.errorCode ?? "?"})`
            : t.failureKind
        : t.exitCode !== undefined
          ? String(t.exitCode)
          : "",
      t.workerId ?? "",
      t.pendingReason || t.error || t.statusText || "",
    ]),
  );
  return out;
}

/** `iris endpoints`. */
export function formatEndpoints(endpoints: Endpoint[]): string {
  if (endpoints.length === 0) return "no endpoints\n";
  return formatTable(
    ["NAME", "ADDRESS", "METADATA"],
    endpoints.map((e) => [e.name, e.address, Object.entries(e.metadata).map(([k, v]) => `${k}=${v}`).join(",")]),
  );
}

/** A worker as `iris workers` shows it (what IrisClient.listWorkers returns). */
export interface WorkerRow {
  workerId: string;
  host: string;
  state: string;
  attributes: Record<string, string>;
  runningAttempts: number;
}

/** `iris workers`. */
export function formatWorkers(workers: WorkerRow[]): string {
  if (workers.length === 0) return "no workers\n";
  return formatTable(
    ["WORKER", "HOST", "STATE", "RUNNING", "ATTRIBUTES"],
    workers.map((w) => [
      w.workerId,
      w.host,
      w.state,
      String(w.runningAttempts),
      Object.entries(w.attributes).map(([k, v]) => `${k}=${v}`).join(","),
    ]),
  );
}

/** A log line as printed: prefixed with `[task]` when the job has several tasks. */
export function formatLogLine(e: LogEntry, multiTask: boolean): string {
  return multiTask ? `[${e.taskIndex}] ${e.line}\n` : `${e.line}\n`;
}

/**
 * The exit code of `iris job run` for a finished job: 0 when it SUCCEEDED; the task's own exit
 * code when exactly one task ended in APP_EXIT with a non-zero code (so `iris job run -- cmd`
 * behaves like `cmd`); 1 otherwise.
 */
export function jobExitCode(st: JobStatus): number {
  if (st.state === "SUCCEEDED") return 0;
  const appExits = st.tasks.filter((t) => t.failureKind === "APP_EXIT" && t.exitCode !== undefined && t.exitCode !== 0);
  if (appExits.length === 1) {
    const code = appExits[0].exitCode!;
    return code > 0 && code < 256 ? code : 1;
  }
  return 1;
}
