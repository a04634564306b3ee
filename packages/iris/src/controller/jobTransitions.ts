// The controller state's job transitions: submission, termination, attempts ending (retry budgets,
// APP_ERROR, gangs) and scheduling passes. Each public method is one transaction and returns what
// it did (a result object).
//
// Invariant kept: a job's state is always deriveJobState of its tasks' states (recomputeJob after
// every task change), and once terminal it never changes again, nor do its tasks; a task has at
// most one live attempt, its current round (`tasks.attempt`), and a retry happens only within the
// job's failure and preemption budgets; an ended job leaves no live attempt, no leased endpoint
// and no unfinished child behind.
import { randomUUID } from "node:crypto";
import { IrisError } from "../errors.ts";
import { isTerminalJobState } from "../jobSpec.ts";
import type { JobSpec, JobState, TaskState } from "../jobSpec.ts";
import { schedule } from "./scheduler.ts";
import type { SchedResources, SchedStartable, SchedTask, SchedWorker } from "./scheduler.ts";
import type { StateCore } from "./stateCore.ts";
import type { StateQueries } from "./stateQueries.ts";
import {
  addResources,
  deriveJobState,
  FAILED_TASK_STATES,
  isTerminalTaskState,
  LIVE_ATTEMPT_STATES,
  newInstanceId,
  requestOf,
  type AttemptOutcome,
  type AttemptRow,
  type JobRow,
  type TaskRow,
  type WorkerRow,
} from "./stateRows.ts";

/** The terminal task states as an SQL list (see stateRows.ts). */
const TERMINAL_TASK_SQL = "'SUCCEEDED', 'FAILED', 'KILLED', 'WORKER_LOST', 'PREEMPTED', 'UNSCHEDULABLE'";

/** Pending tasks of one (non-gang) job a scheduling pass considers, lowest index first. */
const SCHEDULE_WINDOW = 500;
/**
 * Pending tasks one scheduling pass considers in all, taken from each user's jobs in turn (so one
 * user's many jobs cannot crowd others out of a pass). A gang that could be placed counts whole.
 */
const PASS_TASK_BUDGET = 5000;
/** The job, task, attempt and worker transitions of the controller state (see controllerState.ts). */
/** What {@link JobTransitions.terminateJob} did: `ended` false when the job had already ended. */
export interface TerminateResult {
  instanceId: string;
  ended: boolean;
}

/** What one scheduling pass did: attempts assigned; `skipped` when nothing could have changed. */
export interface SchedulePassResult {
  assigned: number;
  skipped: boolean;
}

/** The job, task and attempt transitions of the controller state and its scheduling passes. */
export class JobTransitions {
  private readonly core: StateCore;
  private readonly queries: StateQueries;

  constructor(core: StateCore, queries: StateQueries) {
    this.core = core;
    this.queries = queries;
  }

  // What an autoscaler (../autoscaler/autoscaler.ts) tells the scheduler: per job instance, what
  // it is doing for the pending tasks (their reason instead of the scheduler's), and the worker
  // shapes its groups could start (for the UNSCHEDULABLE rule). Empty without an autoscaler.
  private autoscalerNotes = new Map<string, string>();
  private startable: SchedStartable[] | undefined;

  /** Sets the autoscaler's notes and startable shapes; the next pass uses them. */
  setAutoscalerView(view: { notes: ReadonlyMap<string, string>; startable: SchedStartable[] }): void {
    const same = view.notes.size === this.autoscalerNotes.size && [...view.notes].every(([k, v]) => this.autoscalerNotes.get(k) === v);
    this.autoscalerNotes = new Map(view.notes);
    if (!same || JSON.stringify(view.startable) !== JSON.stringify(this.startable)) this.core.needsSchedule = true;
    this.startable = view.startable.length > 0 ? view.startable : undefined;
  }

  // ---- jobs -----------------------------------------------------------------------------------

  /** Submits a validated spec (full name). ALREADY_EXISTS while that name is unfinished. */
  launchJob(spec: JobSpec): { name: string; instanceId: string } {
    return this.core.tx(() => {
      const now = this.core.clock.now();
      const existing = this.core.stmt("SELECT * FROM jobs WHERE name = ? AND latest = 1").get(spec.name) as JobRow | undefined;
      if (existing && !isTerminalJobState(existing.state)) {
        throw new IrisError("ALREADY_EXISTS", `job ${spec.name} is still ${existing.state} (instance ${existing.instance_id})`);
      }
      let parent: JobRow | undefined;
      const segs = spec.name.split("/");
      if (segs.length > 3) {
        const parentName = segs.slice(0, -1).join("/");
        parent = this.core.stmt("SELECT * FROM jobs WHERE name = ? AND latest = 1").get(parentName) as JobRow | undefined;
        if (!parent) throw new IrisError("NOT_FOUND", `parent job ${parentName} of ${spec.name} does not exist`);
        if (isTerminalJobState(parent.state)) {
          throw new IrisError("FAILED_PRECONDITION", `parent job ${parentName} of ${spec.name} already ended (${parent.state})`);
        }
      }
      const instanceId = newInstanceId(now);
      const specJson = JSON.stringify(spec);
      this.core.stmt("UPDATE jobs SET latest = 0 WHERE name = ?").run(spec.name);
      this.core.db
        .prepare("INSERT INTO jobs (instance_id, name, latest, parent_instance_id, spec, state, submitted_at_ms) VALUES (?, ?, 1, ?, ?, 'PENDING', ?)")
        .run(instanceId, spec.name, parent?.instance_id ?? null, specJson, now);
      const ins = this.core.stmt("INSERT INTO tasks (instance_id, idx, state) VALUES (?, ?, 'PENDING')");
      for (let i = 0; i < spec.replicas; i++) ins.run(instanceId, i);
      this.core.specCache.set(instanceId, spec, specJson.length);
      this.core.touchJob(instanceId);
      this.core.needsSchedule = true;
      return { name: spec.name, instanceId };
    });
  }

  /** Kills a job's tasks and, recursively, its children. No-op on a finished job. */
  terminateJob(name: string): TerminateResult {
    return this.core.tx(() => {
      const j = this.queries.findJob(name);
      const ended = !isTerminalJobState(j.state);
      if (ended) this.endJob(j.instance_id, "KILLED", "terminated by request");
      return { instanceId: j.instance_id, ended };
    });
  }

  // Ends a job in `state`: live tasks KILLED (their attempts asked to stop), children ended too.
  endJob(instanceId: string, state: JobState, error: string): void {
    const now = this.core.clock.now();
    // The live attempts first (at most one per task, and only tasks that were placed), then every
    // unfinished task in one statement: a job of 100,000 pending tasks ends in one pass over its
    // rows, not 100,000 lookups.
    const live = this.core
      .stmt(
        `SELECT a.* FROM attempts a JOIN tasks t ON t.instance_id = a.instance_id AND t.idx = a.idx AND t.attempt = a.attempt
       WHERE a.instance_id = ? AND a.state IN ('ASSIGNED','BUILDING','RUNNING') AND t.state NOT IN (${TERMINAL_TASK_SQL})`,
      )
      .all(instanceId) as AttemptRow[];
    for (const a of live) this.finishAttemptRow(a, { state: "KILLED", failureKind: "KILLED", error }, state === "KILLED" ? "KILLED" : "FAILED");
    this.core
      .stmt(
        `UPDATE tasks SET state = 'KILLED', failure_kind = CASE WHEN failure_kind = '' THEN 'KILLED' ELSE failure_kind END, error = CASE WHEN error = '' THEN ? ELSE error END
       WHERE instance_id = ? AND state NOT IN (${TERMINAL_TASK_SQL})`,
      )
      .run(error, instanceId);
    this.core.stmt("UPDATE jobs SET state = ?, error = ?, finished_at_ms = ? WHERE instance_id = ?").run(state, error, now, instanceId);
    this.core.specCache.delete(instanceId);
    this.core.touchJob(instanceId);
    this.endChildren(instanceId);
  }

  endChildren(instanceId: string): void {
    const j = this.queries.job(instanceId);
    const children = this.core.db.prepare("SELECT instance_id, state FROM jobs WHERE parent_instance_id = ?").all(instanceId) as { instance_id: string; state: string }[];
    for (const c of children) {
      if (!isTerminalJobState(c.state)) this.endJob(c.instance_id, "KILLED", `parent job ${j.name} ended (${j.state})`);
    }
  }

  // Marks a task's live attempt as ended by the controller and asks its worker to stop it.
  stopCurrentAttempt(t: TaskRow, outcome: AttemptOutcome, reason: string): void {
    const a = this.queries.attemptOf(t.instance_id, t.idx, t.attempt);
    if (!a || !LIVE_ATTEMPT_STATES.includes(a.state)) return;
    this.finishAttemptRow(a, outcome, reason);
  }

  finishAttemptRow(a: AttemptRow, outcome: AttemptOutcome, stopReason: string | undefined): void {
    this.core.db
      .prepare(
        "UPDATE attempts SET state = ?, failure_kind = ?, exit_code = ?, error = ?, error_code = ?, result_json = ?, finished_at_ms = ?, stopping = ?, stop_reason = ? WHERE uid = ?",
      )
      .run(
        outcome.state,
        outcome.failureKind,
        outcome.exitCode ?? null,
        outcome.error ?? "",
        outcome.errorCode ?? "",
        outcome.resultJson ?? null,
        this.core.clock.now(),
        stopReason ? 1 : 0,
        stopReason ?? "",
        a.uid,
      );
    this.core.stmt("DELETE FROM endpoints WHERE attempt_uid = ?").run(a.uid);
    if (stopReason) this.core.touchWorker(a.worker_id);
    this.core.needsSchedule = true;
  }

  // Re-derives a job's state after task changes; a job that just ended ends its leftovers.
  recomputeJob(instanceId: string): void {
    const j = this.queries.job(instanceId);
    if (isTerminalJobState(j.state)) return;
    const spec = this.queries.specOf(instanceId);
    // From the counts by state (an index lookup), not every task row: jobs have up to 100,000 tasks.
    const states = Object.entries(this.queries.taskCounts(instanceId)).flatMap(([st, n]) => Array<string>(n).fill(st));
    const state = deriveJobState(states, spec.maxTaskFailures);
    if (state === j.state) return;
    this.core.touchJob(instanceId);
    if (isTerminalJobState(state)) {
      const failedStates = [...FAILED_TASK_STATES];
      const failed = this.core.db
        .prepare(`SELECT * FROM tasks WHERE instance_id = ? AND state IN (${failedStates.map(() => "?").join(", ")}) ORDER BY idx LIMIT 1`)
        .get(instanceId, ...failedStates) as TaskRow | undefined;
      const unschedulable = this.core.stmt("SELECT * FROM tasks WHERE instance_id = ? AND state = 'UNSCHEDULABLE' ORDER BY idx LIMIT 1").get(instanceId) as TaskRow | undefined;
      const error =
        state === "UNSCHEDULABLE" && unschedulable
          ? `task ${j.name}/${unschedulable.idx} is unschedulable: ${unschedulable.error}`
          : state === "FAILED" && failed
            ? `task ${j.name}/${failed.idx} failed: ${failed.failure_kind}${failed.failure_kind === "APP_ERROR" ? `(${failed.error_code})` : failed.exit_code !== null ? `(${failed.exit_code})` : ""}${failed.error ? `: ${failed.error}` : ""}`
            : "";
      this.endJob(instanceId, state, error);
    } else {
      this.core.stmt("UPDATE jobs SET state = ? WHERE instance_id = ?").run(state, instanceId);
    }
  }

  // ---- attempts ending ------------------------------------------------------------------------

  // An attempt of the task's current round ended (reported by its worker or decided here).
  attemptEnded(a: AttemptRow, outcome: AttemptOutcome, stopReason?: string): void {
    this.finishAttemptRow(a, outcome, stopReason);
    const t = this.queries.task(a.instance_id, a.idx);
    this.core.touchJob(a.instance_id);
    if (t.attempt !== a.attempt || isTerminalTaskState(t.state)) return;
    const spec = this.queries.specOf(a.instance_id);
    if (outcome.state === "SUCCEEDED") {
      this.core.db
        .prepare("UPDATE tasks SET state = 'SUCCEEDED', exit_code = ?, failure_kind = '', error = '', error_code = '' WHERE instance_id = ? AND idx = ?")
        .run(outcome.exitCode ?? 0, t.instance_id, t.idx);
      this.recomputeJob(a.instance_id);
      return;
    }
    const preemption = outcome.failureKind === "WORKER_LOST" || outcome.state === "WORKER_LOST" || outcome.state === "PREEMPTED";
    const failures = t.failures + (preemption ? 0 : 1);
    const preemptions = t.preemptions + (preemption ? 1 : 0);
    // An APP_ERROR is the application saying that retrying cannot help: no budget retries it.
    const exhausted = outcome.failureKind === "APP_ERROR" || (preemption ? preemptions > spec.maxRetriesPreemption : failures > spec.maxRetriesFailure);
    const finalState: TaskState = exhausted ? (preemption ? (outcome.state === "PREEMPTED" ? "PREEMPTED" : "WORKER_LOST") : "FAILED") : "PENDING";
    this.core.db
      .prepare(
        "UPDATE tasks SET state = ?, failures = ?, preemptions = ?, exit_code = ?, failure_kind = ?, error = ?, error_code = ?, pending_reason = '' WHERE instance_id = ? AND idx = ?",
      )
      .run(finalState, failures, preemptions, outcome.exitCode ?? null, outcome.failureKind, outcome.error ?? "", outcome.errorCode ?? "", t.instance_id, t.idx);
    if (spec.gang && spec.replicas > 1) this.failGangPeers(a.instance_id, a.idx, exhausted);
    this.recomputeJob(a.instance_id);
  }

  // One gang member failed: every other member's attempt of this round ends PEER_FAILED (charged
  // to no budget) and the whole gang goes back to PENDING, or to KILLED when the failure
  // exhausted its budget (the job then fails).
  failGangPeers(instanceId: string, failedIdx: number, exhausted: boolean): void {
    for (const t of this.queries.tasksOf(instanceId)) {
      if (t.idx === failedIdx) continue;
      const a = this.queries.attemptOf(instanceId, t.idx, t.attempt);
      const peerOutcome: AttemptOutcome = { state: "FAILED", failureKind: "PEER_FAILED", error: `gang member ${failedIdx} failed` };
      if (a && LIVE_ATTEMPT_STATES.includes(a.state)) this.finishAttemptRow(a, peerOutcome, "PEER_FAILED");
      else if (a && a.state === "SUCCEEDED") {
        this.core.stmt("UPDATE attempts SET state = 'FAILED', failure_kind = 'PEER_FAILED', error = ? WHERE uid = ?").run(peerOutcome.error, a.uid);
      }
      if (t.state === "KILLED" || t.state === "FAILED" || t.state === "WORKER_LOST") continue;
      this.core.db
        .prepare("UPDATE tasks SET state = ?, failure_kind = 'PEER_FAILED', error_code = '', exit_code = NULL, error = ?, pending_reason = '' WHERE instance_id = ? AND idx = ?")
        .run(exhausted ? "KILLED" : "PENDING", peerOutcome.error, instanceId, t.idx);
    }
  }

  // ---- scheduling -----------------------------------------------------------------------------

  /** What the last scheduling pass did: the pending tasks it considered, and how long it took. */
  lastPass = { tasks: 0, ms: 0 };

  /** One scheduling pass: place what fits, record a reason for the rest. `skipped`: nothing could have changed. */
  schedulePass(): SchedulePassResult {
    if (!this.core.needsSchedule && this.core.clock.now() < this.core.nextScheduleDeadlineMs) return { assigned: 0, skipped: true };
    this.core.needsSchedule = false;
    const t0 = performance.now();
    try {
      return { assigned: this.schedulePassTx(), skipped: false };
    } catch (e) {
      this.core.needsSchedule = true;
      throw e;
    } finally {
      this.lastPass.ms = performance.now() - t0;
    }
  }

  schedulePassTx(): number {
    return this.core.tx(() => {
      const now = this.core.clock.now();
      const aliveRows = this.core.stmt("SELECT * FROM workers WHERE state = 'ALIVE'").all() as WorkerRow[];
      const workerRows = aliveRows.filter((w) => w.healthy === 1);
      if (aliveRows.length > 0) this.core.noWorkersSinceMs = undefined;
      else this.core.noWorkersSinceMs ??= now;
      this.core.nextScheduleDeadlineMs = Infinity;
      // A pass's work is bounded: it looks at no more than SCHEDULE_WINDOW pending tasks of a job
      // and PASS_TASK_BUDGET in all, taking jobs from each user in turn. A gang is read whole only
      // when the healthy workers could hold it (so at most as many members as there are workers);
      // otherwise one member stands for it (`gangSize`), and what the scheduler says of that one
      // is applied to all. A task waits since its job was submitted, or since its last attempt ended.
      const pendingRows: { instance_id: string; idx: number; pending_reason: string; submitted_at_ms: number; waiting_since_ms: number; rank: number; gangSize?: number }[] = [];
      const liveJobs = this.core.stmt("SELECT instance_id, name, submitted_at_ms FROM jobs WHERE state IN ('PENDING', 'RUNNING') ORDER BY submitted_at_ms").all() as {
        instance_id: string;
        name: string;
        submitted_at_ms: number;
      }[];
      const windowOf = this.core.stmt(
        `SELECT t.idx, t.pending_reason,
           COALESCE((SELECT a.finished_at_ms FROM attempts a WHERE a.instance_id = t.instance_id AND a.idx = t.idx AND a.attempt = t.attempt), ?) AS waiting_since_ms
         FROM tasks t WHERE t.instance_id = ? AND t.state = 'PENDING' ORDER BY t.idx LIMIT ?`,
      );
      const byUser = new Map<string, (typeof liveJobs)[number][]>();
      for (const j of liveJobs) {
        const user = j.name.split("/")[1] ?? "";
        let q = byUser.get(user);
        if (!q) byUser.set(user, (q = []));
        q.push(j);
      }
      const queues = [...byUser.values()];
      // Each user's k-th task (a gang counts once) gets rank k plus the attempts the user already
      // runs: users take turns at free capacity, the one running least first (passes often see
      // one freed slot at a time, so a rank that started at 0 every pass would favour the oldest).
      const running = new Map<string, number>();
      const live = this.core
        .stmt(
          "SELECT j.name AS name, COUNT(*) AS n FROM attempts a JOIN jobs j ON j.instance_id = a.instance_id WHERE a.state IN ('ASSIGNED','BUILDING','RUNNING') GROUP BY a.instance_id",
        )
        .all() as { name: string; n: number }[];
      for (const r of live) {
        const user = r.name.split("/")[1] ?? "";
        running.set(user, (running.get(user) ?? 0) + r.n);
      }
      const taken = new Map<(typeof liveJobs)[number][], number>();
      for (const [user, q] of byUser) taken.set(q, running.get(user) ?? 0);
      let budget = PASS_TASK_BUDGET;
      for (let round = 0; budget > 0 && queues.some((q) => round < q.length); round++) {
        for (const q of queues) {
          const j = q[round];
          if (j === undefined || budget <= 0) continue;
          const spec = this.queries.specOf(j.instance_id);
          const bigGang = spec.gang && spec.replicas > 1 && spec.replicas > workerRows.length;
          const limit = bigGang ? 1 : spec.gang ? spec.replicas : Math.min(SCHEDULE_WINDOW, budget);
          const isGang = spec.gang && spec.replicas > 1;
          const gangRank = taken.get(q) ?? 0;
          const rows = windowOf.all(j.submitted_at_ms, j.instance_id, limit) as { idx: number; pending_reason: string; waiting_since_ms: number }[];
          if (isGang && rows.length > 0) taken.set(q, gangRank + 1);
          for (const t of rows) {
            pendingRows.push({
              instance_id: j.instance_id,
              idx: t.idx,
              pending_reason: t.pending_reason,
              submitted_at_ms: j.submitted_at_ms,
              waiting_since_ms: t.waiting_since_ms,
              rank: isGang ? gangRank : (taken.get(q) ?? 0),
              ...(bigGang ? { gangSize: spec.replicas } : {}),
            });
            if (!isGang) taken.set(q, (taken.get(q) ?? 0) + 1);
            budget--;
          }
        }
      }
      this.lastPass.tasks = pendingRows.length;
      if (pendingRows.length === 0) return 0;
      const used = new Map<string, SchedResources>();
      const held = this.core.db.prepare(`SELECT worker_id, resources FROM attempts WHERE state IN ('ASSIGNED','BUILDING','RUNNING') OR stopping = 1`).all() as {
        worker_id: string;
        resources: string;
      }[];
      for (const h of held) {
        used.set(h.worker_id, addResources(used.get(h.worker_id) ?? { cpuMillis: 0, memoryBytes: 0, devices: {} }, JSON.parse(h.resources) as SchedResources));
      }
      const workers: SchedWorker[] = workerRows.map((w) => ({
        id: w.id,
        capacity: JSON.parse(w.capacity) as SchedResources,
        used: used.get(w.id) ?? { cpuMillis: 0, memoryBytes: 0, devices: {} },
        attributes: JSON.parse(w.attributes) as Record<string, string>,
      }));
      const registered = aliveRows.map((w) => ({
        capacity: JSON.parse(w.capacity) as SchedResources,
        attributes: JSON.parse(w.attributes) as Record<string, string>,
      }));
      const byKey = new Map<string, (typeof pendingRows)[number]>();
      const pending: SchedTask[] = pendingRows.map((r) => {
        const spec = this.queries.specOf(r.instance_id);
        const taskId = `${r.instance_id}/${r.idx}`;
        byKey.set(taskId, r);
        const waitingSinceMs = Math.max(r.waiting_since_ms, this.core.noWorkersSinceMs ?? 0);
        const schedulingTimeoutMs = spec.schedulingTimeoutMs ?? this.core.schedulingTimeoutMs;
        if (aliveRows.length === 0 && schedulingTimeoutMs > 0 && this.startable === undefined) {
          this.core.nextScheduleDeadlineMs = Math.min(this.core.nextScheduleDeadlineMs, waitingSinceMs + schedulingTimeoutMs);
        }
        return {
          taskId,
          jobId: r.instance_id,
          priority: spec.priority,
          submittedAtMs: r.submitted_at_ms,
          rank: r.rank,
          request: requestOf(spec),
          constraints: spec.constraints,
          ...(spec.gang && spec.replicas > 1 ? { gangId: r.instance_id } : {}),
          ...(r.gangSize !== undefined ? { gangSize: r.gangSize } : {}),
          waitingSinceMs,
          schedulingTimeoutMs,
        };
      });
      const result = schedule({ workers, pending, registered, nowMs: now, ...(this.startable ? { startable: this.startable } : {}) });
      for (const { taskId, workerId } of result.assignments) {
        const r = byKey.get(taskId)!;
        this.assign(r.instance_id, r.idx, workerId, now);
      }
      const setReason = this.core.stmt("UPDATE tasks SET pending_reason = ? WHERE instance_id = ? AND idx = ?");
      // A gang's stand-in speaks for every pending member (its reason changes rarely: written once).
      const setGangReason = this.core.stmt("UPDATE tasks SET pending_reason = ? WHERE instance_id = ? AND state = 'PENDING'");
      for (const { taskId, reason: schedReason } of result.unplaced) {
        const r = byKey.get(taskId)!;
        const reason = this.autoscalerNotes.get(r.instance_id) ?? schedReason;
        if (r.pending_reason !== reason) {
          if (r.gangSize !== undefined) setGangReason.run(reason, r.instance_id);
          else setReason.run(reason, r.instance_id, r.idx);
          this.core.touchJob(r.instance_id);
        }
      }
      const setUnschedulable = this.core.stmt("UPDATE tasks SET state = 'UNSCHEDULABLE', error = ?, pending_reason = '' WHERE instance_id = ? AND idx = ?");
      const setGangUnschedulable = this.core.stmt("UPDATE tasks SET state = 'UNSCHEDULABLE', error = ?, pending_reason = '' WHERE instance_id = ? AND state = 'PENDING'");
      const ended = new Set<string>();
      for (const { taskId, reason } of result.unschedulable) {
        const r = byKey.get(taskId)!;
        if (r.gangSize !== undefined) setGangUnschedulable.run(reason, r.instance_id);
        else setUnschedulable.run(reason, r.instance_id, r.idx);
        this.core.touchJob(r.instance_id);
        ended.add(r.instance_id);
      }
      for (const id of ended) this.recomputeJob(id);
      return result.assignments.length;
    });
  }

  assign(instanceId: string, idx: number, workerId: string, now: number): void {
    const t = this.queries.task(instanceId, idx);
    const attempt = t.attempt + 1;
    const spec = this.queries.specOf(instanceId);
    this.core.db
      .prepare("INSERT INTO attempts (uid, instance_id, idx, attempt, worker_id, state, resources, assigned_at_ms) VALUES (?, ?, ?, ?, ?, 'ASSIGNED', ?, ?)")
      .run(randomUUID().replace(/-/g, "").slice(0, 16), instanceId, idx, attempt, workerId, JSON.stringify(requestOf(spec)), now);
    this.core.db.prepare("UPDATE tasks SET state = 'ASSIGNED', attempt = ?, pending_reason = '' WHERE instance_id = ? AND idx = ?").run(attempt, instanceId, idx);
    this.core.touchJob(instanceId);
    this.core.touchWorker(workerId);
    this.recomputeJob(instanceId);
  }
}
