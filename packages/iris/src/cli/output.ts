// What the CLI prints, as pure functions of the client's types (unit-tested in output.test.ts).
import { formatBytes } from "../controller/scheduler.ts";
import type { Endpoint, JobStatus, LogEntry, WorkerSummary } from "../jobSpec.ts";

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function formatTable(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, c) => Math.max(...all.map((r) => (r[c] ?? "").length)));
  return (
    all
      .map((r) =>
        r
          .map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c])))
          .join("  ")
          .trimEnd(),
      )
      .join("\n") + "\n"
  );
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
    endpoints.map((e) => [
      e.name,
      e.address,
      Object.entries(e.metadata)
        .map(([k, v]) => `${k}=${v}`)
        .join(","),
    ]),
  );
}

/** `iris workers`: one row per worker, with its cpu and memory used of its capacity. */
export function formatWorkers(workers: WorkerSummary[]): string {
  if (workers.length === 0) return "no workers\n";
  return formatTable(
    ["WORKER", "HOST", "STATE", "RUNNING", "CPU USED/TOTAL", "MEMORY USED/TOTAL", "DEVICES", "ATTRIBUTES"],
    workers.map((w) => [
      w.workerId,
      w.host,
      w.state,
      String(w.runningAttempts),
      `${cores(w.used.cpuMillis)}/${cores(w.capacity.cpuMillis)}`,
      `${formatBytes(w.used.memoryBytes)}/${formatBytes(w.capacity.memoryBytes)}`,
      Object.entries(w.capacity.devices)
        .map(([k, n]) => `${k}=${w.used.devices[k] ?? 0}/${n}`)
        .join(",") || "-",
      Object.entries(w.attributes)
        .map(([k, v]) => `${k}=${v}`)
        .join(","),
    ]),
  );
}

const cores = (millis: number): string => String(Math.round(millis) / 1000);

/** What `iris status` reports: the live workers' capacity and load, jobs by state, waiting tasks. */
export interface ClusterSummary {
  workers: { alive: number; lost: number };
  cpuMillis: { total: number; used: number; free: number };
  memoryBytes: { total: number; used: number; free: number };
  /** Latest submission of each job name, counted by state. */
  jobs: Record<string, number>;
  /** Every PENDING task of an unfinished job, with the scheduler's reason. */
  pendingTasks: { taskId: string; reason: string }[];
}

/** Sums what `iris status` shows from the workers and jobs the controller lists. */
export function clusterSummary(workers: WorkerSummary[], jobs: JobStatus[]): ClusterSummary {
  const alive = workers.filter((w) => w.state === "ALIVE");
  const sum = (f: (w: WorkerSummary) => number): number => alive.reduce((a, w) => a + f(w), 0);
  const cpu = { total: sum((w) => w.capacity.cpuMillis), used: sum((w) => w.used.cpuMillis) };
  const mem = { total: sum((w) => w.capacity.memoryBytes), used: sum((w) => w.used.memoryBytes) };
  const byState: Record<string, number> = {};
  for (const j of jobs) byState[j.state] = (byState[j.state] ?? 0) + 1;
  const pendingTasks = jobs
    .filter((j) => j.state === "PENDING" || j.state === "RUNNING")
    .flatMap((j) => j.tasks.filter((t) => t.state === "PENDING").map((t) => ({ taskId: t.taskId, reason: t.pendingReason || "waiting for the next scheduling pass" })));
  return {
    workers: { alive: alive.length, lost: workers.length - alive.length },
    cpuMillis: { ...cpu, free: cpu.total - cpu.used },
    memoryBytes: { ...mem, free: mem.total - mem.used },
    jobs: byState,
    pendingTasks,
  };
}

const STATE_ORDER = ["RUNNING", "PENDING", "SUCCEEDED", "FAILED", "KILLED", "UNSCHEDULABLE"];

/** `iris status`, like `ray status`: resources, then jobs by state, then what waits and why. */
export function formatClusterSummary(s: ClusterSummary, maxPending = 20): string {
  const states = Object.keys(s.jobs).sort((a, b) => STATE_ORDER.indexOf(a) - STATE_ORDER.indexOf(b));
  let out = `workers: ${s.workers.alive} alive${s.workers.lost > 0 ? `, ${s.workers.lost} lost` : ""}\n`;
  out += `cpu:     ${cores(s.cpuMillis.used)} of ${cores(s.cpuMillis.total)} cores used, ${cores(s.cpuMillis.free)} free\n`;
  out += `memory:  ${formatBytes(s.memoryBytes.used)} of ${formatBytes(s.memoryBytes.total)} used, ${formatBytes(s.memoryBytes.free)} free\n`;
  out += `jobs:    ${states.length === 0 ? "none" : states.map((st) => `${s.jobs[st]} ${st}`).join(", ")}\n`;
  if (s.pendingTasks.length === 0) return out + "pending tasks: none\n";
  out += `pending tasks: ${s.pendingTasks.length}\n`;
  for (const t of s.pendingTasks.slice(0, maxPending)) out += `  ${t.taskId}: ${t.reason}\n`;
  if (s.pendingTasks.length > maxPending) out += `  … and ${s.pendingTasks.length - maxPending} more\n`;
  return out;
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
