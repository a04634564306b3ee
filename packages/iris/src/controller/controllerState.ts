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
   * Per unfinished job (by instance id), what the autoscaler reads of its spec, read once: the
   * spec cache holds few specs, and parsing every pending job's spec each round would cost more
   * than the decision. A job's spec never changes.
   */
  #demandFactsOf = new Map<string, DemandFacts>();
  /** Equal requests and constraints as one shared object (the policy recognises them by identity first). */
  readonly #shapes = new Map<string, { request: SchedResources; constraints: SchedConstraint[] }>();

  #demandFacts(instanceId: string): DemandFacts {
    let f = this.#demandFactsOf.get(instanceId);
    if (f === undefined) {
      const spec = this.specOf(instanceId);
      const request = requestOf(spec);
      const key = JSON.stringify([request.cpuMillis, request.memoryBytes, request.devices, spec.constraints]);
      let shape = this.#shapes.get(key);
      if (shape === undefined) this.#shapes.set(key, (shape = { request, constraints: spec.constraints }));
      f = { priority: spec.priority, request: shape.request, constraints: shape.constraints, gang: spec.gang && spec.replicas > 1 };
      this.#demandFactsOf.set(instanceId, f);
    }
    return f;
  }

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
        const f = this.#demandFacts(r.instance_id);
        return {
          jobId: r.instance_id,
          jobName: r.name,
          priority: f.priority,
          submittedAtMs: r.submitted_at_ms,
          request: f.request,
          constraints: f.constraints,
          tasks: r.n,
          gang: f.gang,
        };
      });
      // Forget the jobs that left the queue (now and then: a rebuild per round would cost as much as the cache saves).
      if (this.#demandFactsOf.size > 2 * rows.length + 1024) {
        const keep = new Map<string, DemandFacts>();
        for (const r of rows) keep.set(r.instance_id, this.#demandFactsOf.get(r.instance_id)!);
        this.#demandFactsOf = keep;
      }
      if (this.#shapes.size > 4096) this.#shapes.clear();
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

/** What the autoscaler reads of a job's spec. */
interface DemandFacts {
  priority: number;
  request: SchedResources;
  constraints: SchedConstraint[];
  gang: boolean;
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
