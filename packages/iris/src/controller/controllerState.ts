// The controller's state machine over its SQLite database: jobs → tasks → attempts, workers,
// endpoints, logs and metrics. Everything is synchronous (better-sqlite3), and every public
// transition runs in one transaction, so a snapshot read and the commit of its decisions can never
// interleave with another change. The gRPC layer (controller.ts) only translates and subscribes.
//
// One class in layers, one file each: stateCore.ts (database, statements, transactions,
// notifications) → stateQueries.ts (reads) → transitions.ts (job/task/attempt/worker changes) →
// recordTransitions.ts (logs, endpoints, metrics) → workerTransitions.ts (drain, deregister); rows and pure rules in stateRows.ts; wire
// encoding in ../internal/codec.ts.
import type { SchedConstraint, SchedResources } from "./scheduler.ts";
import { requestOf } from "./stateRows.ts";
import { StateWorkerTransitions } from "./workerTransitions.ts";

export { deriveJobState, isTerminalTaskState, parseAttemptId, parseTaskId, rootJobOf } from "./stateRows.ts";
export type { Clock, ControllerStateOptions, StateListener } from "./stateRows.ts";

/**
 * All controller state and its transitions. One instance per database; not thread-safe (Node
 * has one thread), and every public method is one transaction.
 */
export class ControllerState extends StateWorkerTransitions {
  /**
   * What an autoscaler reads each round (one transaction): every unfinished job's pending tasks
   * as one demand entry (a gang's members together), and every registered worker with whether it
   * holds an attempt.
   */
  autoscalerSnapshot(): AutoscalerSnapshot {
    return this.tx(() => {
      const rows = this.stmt(
        `SELECT j.instance_id, j.name, j.submitted_at_ms, COUNT(*) AS n FROM tasks t JOIN jobs j ON j.instance_id = t.instance_id
         WHERE j.state IN ('PENDING', 'RUNNING') AND t.state = 'PENDING' GROUP BY j.instance_id ORDER BY j.submitted_at_ms`,
      ).all() as { instance_id: string; name: string; submitted_at_ms: number; n: number }[];
      const demand = rows.map((r) => {
        const spec = this.specOf(r.instance_id);
        return {
          jobId: r.instance_id,
          jobName: r.name,
          priority: spec.priority,
          submittedAtMs: r.submitted_at_ms,
          request: requestOf(spec),
          constraints: spec.constraints,
          tasks: r.n,
          gang: spec.gang && spec.replicas > 1,
        };
      });
      const busy = new Set(
        (this.stmt("SELECT DISTINCT worker_id FROM attempts WHERE state IN ('ASSIGNED','BUILDING','RUNNING') OR stopping = 1").all() as { worker_id: string }[]).map((r) => r.worker_id),
      );
      const workers = (this.stmt("SELECT id, state, registered_at_ms FROM workers").all() as { id: string; state: string; registered_at_ms: number }[]).map((w) => ({
        id: w.id,
        state: w.state,
        busy: busy.has(w.id),
        registeredAtMs: w.registered_at_ms,
      }));
      return { demand, workers };
    });
  }
}

/** See {@link ControllerState.autoscalerSnapshot}. */
export interface AutoscalerSnapshot {
  demand: {
    jobId: string;
    jobName: string;
    priority: number;
    submittedAtMs: number;
    request: SchedResources;
    constraints: SchedConstraint[];
    tasks: number;
    gang: boolean;
  }[];
  /** `state`: ALIVE, DRAINING or LOST (as the workers table has it). */
  workers: { id: string; state: string; busy: boolean; registeredAtMs: number }[];
}
