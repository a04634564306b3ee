// The controller state's worker transitions: registration, reconcile (a worker's observations
// folded in, its desired set returned), loss by silence, draining and deregistration. Each public
// method is one transaction and returns what it did (a result object).
//
// Invariant kept: a live attempt (ASSIGNED, BUILDING, RUNNING) always sits on a registered worker
// that is ALIVE or DRAINING: a worker that goes silent, is lost or leaves takes its live attempts
// with it (WORKER_LOST, charged to the preemption budget), and nothing new is placed on a
// DRAINING or LOST worker. A worker's report never overrides what the controller already decided.
import { randomBytes } from "node:crypto";
import { IrisError } from "../errors.ts";
import type { AttemptObservation__Output } from "../internal/generated/iris/v1/AttemptObservation.ts";
import type { RunAttempt } from "../internal/generated/iris/v1/RunAttempt.ts";
import type { StopAttempt } from "../internal/generated/iris/v1/StopAttempt.ts";
import type { JobTransitions } from "./jobTransitions.ts";
import type { StateCore } from "./stateCore.ts";
import type { StateQueries } from "./stateQueries.ts";
import type { SchedResources } from "./scheduler.ts";
import { isTerminalTaskState, LIVE_ATTEMPT_STATES, observedOutcome, type AttemptRow } from "./stateRows.ts";

/** Draining and deregistering workers (see controllerState.ts for the layers). */
/** Worker registration, reconcile, loss, draining and deregistration. */
export class WorkerTransitions {
  private readonly core: StateCore;
  private readonly queries: StateQueries;
  private readonly jobs: JobTransitions;

  constructor(core: StateCore, queries: StateQueries, jobs: JobTransitions) {
    this.core = core;
    this.queries = queries;
    this.jobs = jobs;
  }

  // ---- workers --------------------------------------------------------------------------------

  /** Registers a worker (again); a lost worker becomes alive. Returns its id (minted when none was given). */
  registerWorker(req: { workerId: string; host: string; attributes: Record<string, string>; capacity: SchedResources }): { workerId: string } {
    return this.core.tx(() => {
      const now = this.core.clock.now();
      const id = req.workerId || `w-${randomBytes(6).toString("hex")}`;
      this.core.db
        .prepare(
          `INSERT INTO workers (id, host, attributes, capacity, state, healthy, last_seen_ms, registered_at_ms) VALUES (?, ?, ?, ?, 'ALIVE', 1, ?, ?)
           ON CONFLICT (id) DO UPDATE SET host = excluded.host, attributes = excluded.attributes, capacity = excluded.capacity,
             state = CASE WHEN workers.state = 'DRAINING' THEN 'DRAINING' ELSE 'ALIVE' END, healthy = 1, last_seen_ms = excluded.last_seen_ms`,
        )
        .run(id, req.host, JSON.stringify(req.attributes), JSON.stringify(req.capacity), now, now);
      this.core.needsSchedule = true;
      return { workerId: id };
    });
  }

  /**
   * One reconcile exchange: folds the worker's observations into the state and returns its full
   * desired set. NOT_FOUND for an unknown or lost worker.
   */
  reconcile(
    workerId: string,
    observed: AttemptObservation__Output[],
    health: { healthy: boolean },
  ): { run: RunAttempt[]; stop: StopAttempt[]; logLinesReceived: Record<string, number>; draining: boolean } {
    return this.core.tx(() => {
      const now = this.core.clock.now();
      if (!this.queries.isWorkerAlive(workerId)) throw new IrisError("NOT_FOUND", `worker ${workerId} is not registered (or was declared lost): register again`);
      const wasHealthy = (this.core.stmt("SELECT healthy FROM workers WHERE id = ?").get(workerId) as { healthy: number }).healthy === 1;
      if (wasHealthy !== health.healthy) this.core.needsSchedule = true;
      this.core.stmt("UPDATE workers SET last_seen_ms = ?, healthy = ? WHERE id = ?").run(now, health.healthy ? 1 : 0, workerId);
      const extraStops: StopAttempt[] = [];
      const seen = new Set<string>();
      for (const o of observed) {
        seen.add(o.attemptUid);
        const a = this.queries.attemptByUid(o.attemptUid);
        const obsTerminal = o.state === "SUCCEEDED" || o.state === "FAILED" || o.state === "KILLED";
        if (!a || a.worker_id !== workerId) {
          if (!obsTerminal) extraStops.push({ attemptUid: o.attemptUid, reason: "SUPERSEDED" });
          continue;
        }
        if (o.logLines > a.log_lines_expected) {
          this.core.stmt("UPDATE attempts SET log_lines_expected = ? WHERE uid = ?").run(o.logLines, a.uid);
        }
        if (!LIVE_ATTEMPT_STATES.includes(a.state)) {
          // Already decided here (killed, lost, peer-failed): the worker's report only tells us
          // whether it still has to stop the process.
          if (obsTerminal) {
            this.core.db.prepare("UPDATE attempts SET stopping = 0, exit_code = COALESCE(exit_code, ?) WHERE uid = ?").run(o.exitCode ?? null, a.uid);
            if (a.stopping) {
              this.core.touchJob(a.instance_id);
              this.core.needsSchedule = true;
            }
          } else if (!a.stopping) extraStops.push({ attemptUid: a.uid, reason: "SUPERSEDED" });
          continue;
        }
        if (o.state === "BUILDING" && a.state === "ASSIGNED") {
          this.setLiveState(a, "BUILDING", o);
        } else if (o.state === "RUNNING" && a.state !== "RUNNING") {
          this.setLiveState(a, "RUNNING", o);
        } else if (obsTerminal) {
          const outcome = observedOutcome(o);
          if (o.startedAtMs && !a.started_at_ms) this.core.stmt("UPDATE attempts SET started_at_ms = ? WHERE uid = ?").run(o.startedAtMs, a.uid);
          this.jobs.attemptEnded(a, outcome);
        }
      }
      // Attempts we asked to stop that the worker no longer has are stopped.
      const stopping = this.core.stmt("SELECT uid, instance_id FROM attempts WHERE worker_id = ? AND stopping = 1").all(workerId) as { uid: string; instance_id: string }[];
      for (const s of stopping) {
        if (!seen.has(s.uid)) {
          this.core.stmt("UPDATE attempts SET stopping = 0 WHERE uid = ?").run(s.uid);
          this.core.touchJob(s.instance_id);
          this.core.needsSchedule = true;
        }
      }
      const desired = this.queries.desiredSet(workerId, extraStops);
      const logLinesReceived: Record<string, number> = {};
      const count = this.core.stmt("SELECT log_lines_received AS n FROM attempts WHERE uid = ?");
      for (const uid of seen) {
        const r = count.get(uid) as { n: number } | undefined;
        if (r) logLinesReceived[uid] = r.n;
      }
      const draining = (this.core.stmt("SELECT state FROM workers WHERE id = ?").get(workerId) as { state: string }).state === "DRAINING";
      return { ...desired, logLinesReceived, draining };
    });
  }

  setLiveState(a: AttemptRow, state: "BUILDING" | "RUNNING", o: AttemptObservation__Output): void {
    this.core.db
      .prepare("UPDATE attempts SET state = ?, started_at_ms = CASE WHEN ? = 'RUNNING' AND started_at_ms = 0 THEN ? ELSE started_at_ms END WHERE uid = ?")
      .run(state, state, o.startedAtMs || this.core.clock.now(), a.uid);
    const t = this.queries.task(a.instance_id, a.idx);
    if (t.attempt === a.attempt && !isTerminalTaskState(t.state)) {
      this.core.stmt("UPDATE tasks SET state = ? WHERE instance_id = ? AND idx = ?").run(state, a.instance_id, a.idx);
    }
    this.core.touchJob(a.instance_id);
    this.jobs.recomputeJob(a.instance_id);
  }

  /** Declares workers silent for longer than the timeout lost; their attempts become WORKER_LOST. */
  checkWorkers(): { lost: string[] } {
    return this.core.tx(() => {
      const deadline = this.core.clock.now() - this.core.workerTimeoutMs;
      const lost = this.core.stmt("SELECT id FROM workers WHERE state IN ('ALIVE', 'DRAINING') AND last_seen_ms < ?").all(deadline) as { id: string }[];
      for (const { id } of lost) {
        this.core.stmt("UPDATE workers SET state = 'LOST' WHERE id = ?").run(id);
        this.core.needsSchedule = true;
        const live = this.core.db.prepare("SELECT * FROM attempts WHERE worker_id = ? AND state IN ('ASSIGNED','BUILDING','RUNNING')").all(id) as AttemptRow[];
        for (const stale of live) {
          // Re-read: ending one gang member may already have ended its peers on this worker.
          const a = this.queries.attemptByUid(stale.uid)!;
          if (!LIVE_ATTEMPT_STATES.includes(a.state)) continue;
          this.jobs.attemptEnded(
            a,
            { state: "WORKER_LOST", failureKind: "WORKER_LOST", error: `worker ${id} stopped reconciling for ${this.core.workerTimeoutMs} ms` },
            "SUPERSEDED",
          );
        }
      }
      return { lost: lost.map((l) => l.id) };
    });
  }

  /**
   * Drains a worker: nothing new is placed there, and its live attempts end PREEMPTED (charged to
   * the preemption budget) and go back to PENDING to run elsewhere. Returns how many were
   * preempted. NOT_FOUND for an unknown (or lost) worker.
   */
  drainWorker(workerId: string): { preempted: number } {
    return this.core.tx(() => {
      const w = this.core.stmt("SELECT state FROM workers WHERE id = ?").get(workerId) as { state: string } | undefined;
      if (!w || w.state === "LOST") throw new IrisError("NOT_FOUND", `worker ${JSON.stringify(workerId)} is not registered`);
      this.core.stmt("UPDATE workers SET state = 'DRAINING' WHERE id = ?").run(workerId);
      this.core.needsSchedule = true;
      this.core.touchWorker(workerId);
      const live = this.core.stmt("SELECT * FROM attempts WHERE worker_id = ? AND state IN ('ASSIGNED','BUILDING','RUNNING')").all(workerId) as AttemptRow[];
      let preempted = 0;
      for (const stale of live) {
        const a = this.queries.attemptByUid(stale.uid)!;
        if (!LIVE_ATTEMPT_STATES.includes(a.state)) continue;
        this.jobs.attemptEnded(a, { state: "PREEMPTED", failureKind: "PREEMPTED", error: `worker ${workerId} is draining` }, "PREEMPTED");
        preempted++;
      }
      return { preempted };
    });
  }

  /**
   * A worker leaves the cluster (it stopped, or finished draining): attempts still live on it end
   * WORKER_LOST and its row is removed. Idempotent.
   */
  deregisterWorker(workerId: string): { attemptsLost: number } {
    return this.core.tx(() => {
      let attemptsLost = 0;
      const live = this.core.stmt("SELECT * FROM attempts WHERE worker_id = ? AND state IN ('ASSIGNED','BUILDING','RUNNING')").all(workerId) as AttemptRow[];
      for (const stale of live) {
        const a = this.queries.attemptByUid(stale.uid)!;
        if (!LIVE_ATTEMPT_STATES.includes(a.state)) continue;
        this.jobs.attemptEnded(a, { state: "WORKER_LOST", failureKind: "WORKER_LOST", error: `worker ${workerId} left the cluster` });
        attemptsLost++;
      }
      const stopping = this.core.stmt("SELECT uid, instance_id FROM attempts WHERE worker_id = ? AND stopping = 1").all(workerId) as { uid: string; instance_id: string }[];
      for (const st of stopping) {
        this.core.stmt("UPDATE attempts SET stopping = 0 WHERE uid = ?").run(st.uid);
        this.core.touchJob(st.instance_id);
      }
      this.core.stmt("DELETE FROM workers WHERE id = ?").run(workerId);
      this.core.needsSchedule = true;
      return { attemptsLost };
    });
  }
}
