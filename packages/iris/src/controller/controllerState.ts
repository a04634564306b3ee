// The controller's state machine over its SQLite database: jobs → tasks → attempts, workers,
// endpoints, logs and metrics. Everything is synchronous (better-sqlite3), and every public
// transition runs in one transaction, so a snapshot read and the commit of its decisions can never
// interleave with another change. The gRPC layer (service.ts) only translates and subscribes.
//
// Collaborators sharing one core, one file each (composition, no inheritance):
//   core     stateCore.ts          database, prepared statements, tx, change notifications
//   queries  stateQueries.ts       reads (rows and wire statuses, desired sets, endpoints, logs)
//   jobs     jobTransitions.ts     submission, termination, attempts ending, scheduling passes
//   workers  workerTransitions.ts  registration, reconcile, loss, drain, deregistration
//   records  recordTransitions.ts  logs, endpoint registrations, status texts and metrics
// Rows and pure rules in stateRows.ts; rows → wire in stateWire.ts.
import type { Db } from "./db.ts";
import { JobTransitions } from "./jobTransitions.ts";
import { RecordTransitions } from "./recordTransitions.ts";
import type { SchedConstraint, SchedResources } from "./scheduler.ts";
import { StateCore } from "./stateCore.ts";
import { StateQueries } from "./stateQueries.ts";
import { requestOf, type ControllerStateOptions } from "./stateRows.ts";
import { WorkerTransitions } from "./workerTransitions.ts";

export { deriveJobState, isTerminalTaskState, parseAttemptId, parseTaskId, rootJobOf } from "./stateRows.ts";
export type { Clock, ControllerStateOptions, StateListener } from "./stateRows.ts";

/**
 * All controller state: its collaborators over one shared core. One instance per database; not
 * thread-safe (Node has one thread), and every public transition is one transaction.
 *
 * @example
 * const state = new ControllerState(openDb(":memory:"));
 * const { instanceId } = state.jobs.launchJob(spec);
 * state.queries.jobStatus(instanceId).state; // "PENDING"
 */
export class ControllerState {
  /** The database, statements, transactions and notifications the collaborators share. */
  readonly core: StateCore;
  readonly queries: StateQueries;
  readonly jobs: JobTransitions;
  readonly workers: WorkerTransitions;
  readonly records: RecordTransitions;
  /**
   * Per unfinished job (by instance id), what the autoscaler reads of its spec, read once: the
   * spec cache holds few specs, and parsing every pending job's spec each round would cost more
   * than the decision. A job's spec never changes.
   */
  #demandFactsOf = new Map<string, DemandFacts>();
  /** Equal requests and constraints as one shared object (the policy recognises them by identity first). */
  readonly #shapes = new Map<string, { request: SchedResources; constraints: SchedConstraint[] }>();

  constructor(db: Db, opts: ControllerStateOptions = {}) {
    this.core = new StateCore(db, opts);
    this.queries = new StateQueries(this.core);
    this.jobs = new JobTransitions(this.core, this.queries);
    this.workers = new WorkerTransitions(this.core, this.queries, this.jobs);
    this.records = new RecordTransitions(this.core, this.queries);
  }

  #demandFacts(instanceId: string): DemandFacts {
    let f = this.#demandFactsOf.get(instanceId);
    if (f === undefined) {
      const spec = this.queries.specOf(instanceId);
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
    return this.core.tx(() => {
      const rows = this.core
        .stmt(
          `SELECT j.instance_id, j.name, j.submitted_at_ms, COUNT(*) AS n FROM tasks t JOIN jobs j ON j.instance_id = t.instance_id
         WHERE j.state IN ('PENDING', 'RUNNING') AND t.state = 'PENDING' GROUP BY j.instance_id ORDER BY j.submitted_at_ms`,
        )
        .all() as { instance_id: string; name: string; submitted_at_ms: number; n: number }[];
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
        (this.core.stmt("SELECT DISTINCT worker_id FROM attempts WHERE state IN ('ASSIGNED','BUILDING','RUNNING') OR stopping = 1").all() as { worker_id: string }[]).map(
          (r) => r.worker_id,
        ),
      );
      const workers = (this.core.stmt("SELECT id, state, registered_at_ms FROM workers").all() as { id: string; state: string; registered_at_ms: number }[]).map((w) => ({
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

/** One job's pending tasks, as the autoscaler's demand. */
export interface DemandEntry {
  /** The job's instance id: the key of its note. */
  jobId: string;
  /** Its full name, for reasons (`/alice/train`). */
  jobName: string;
  priority: number;
  submittedAtMs: number;
  /** What one task asks for. */
  request: SchedResources;
  constraints: SchedConstraint[];
  /** Pending tasks (for a gang: all its members). */
  tasks: number;
  /** All tasks at once, one per worker. */
  gang: boolean;
}

/** See {@link ControllerState.autoscalerSnapshot}. */
export interface AutoscalerSnapshot {
  demand: DemandEntry[];
  /** `state`: ALIVE, DRAINING or LOST (as the workers table has it). */
  workers: { id: string; state: string; busy: boolean; registeredAtMs: number }[];
}
