// The controller state's worker departures: draining a worker (its attempts preempted and placed
// elsewhere, nothing new placed there) and a worker leaving the cluster (deregistration).
import { IrisError } from "../errors.ts";
import { StateRecordTransitions } from "./recordTransitions.ts";
import { LIVE_ATTEMPT_STATES, type AttemptRow } from "./stateRows.ts";

/** Draining and deregistering workers (see controllerState.ts for the layers). */
export class StateWorkerTransitions extends StateRecordTransitions {
  /**
   * Drains a worker: nothing new is placed there, and its live attempts end PREEMPTED (charged to
   * the preemption budget) and go back to PENDING to run elsewhere. Returns how many were
   * preempted. NOT_FOUND for an unknown (or lost) worker.
   */
  drainWorker(workerId: string): number {
    return this.tx(() => {
      const w = this.stmt("SELECT state FROM workers WHERE id = ?").get(workerId) as { state: string } | undefined;
      if (!w || w.state === "LOST") throw new IrisError("NOT_FOUND", `worker ${JSON.stringify(workerId)} is not registered`);
      this.stmt("UPDATE workers SET state = 'DRAINING' WHERE id = ?").run(workerId);
      this.needsSchedule = true;
      this.dirtyWorkers.add(workerId);
      const live = this.stmt("SELECT * FROM attempts WHERE worker_id = ? AND state IN ('ASSIGNED','BUILDING','RUNNING')").all(workerId) as AttemptRow[];
      let preempted = 0;
      for (const stale of live) {
        const a = this.attemptByUid(stale.uid)!;
        if (!LIVE_ATTEMPT_STATES.includes(a.state)) continue;
        this.attemptEnded(a, { state: "PREEMPTED", failureKind: "PREEMPTED", error: `worker ${workerId} is draining` }, "PREEMPTED");
        preempted++;
      }
      return preempted;
    });
  }

  /**
   * A worker leaves the cluster (it stopped, or finished draining): attempts still live on it end
   * WORKER_LOST and its row is removed. Idempotent.
   */
  deregisterWorker(workerId: string): void {
    this.tx(() => {
      const live = this.stmt("SELECT * FROM attempts WHERE worker_id = ? AND state IN ('ASSIGNED','BUILDING','RUNNING')").all(workerId) as AttemptRow[];
      for (const stale of live) {
        const a = this.attemptByUid(stale.uid)!;
        if (!LIVE_ATTEMPT_STATES.includes(a.state)) continue;
        this.attemptEnded(a, { state: "WORKER_LOST", failureKind: "WORKER_LOST", error: `worker ${workerId} left the cluster` });
      }
      const stopping = this.stmt("SELECT uid, instance_id FROM attempts WHERE worker_id = ? AND stopping = 1").all(workerId) as { uid: string; instance_id: string }[];
      for (const st of stopping) {
        this.stmt("UPDATE attempts SET stopping = 0 WHERE uid = ?").run(st.uid);
        this.touchJob(st.instance_id);
      }
      this.stmt("DELETE FROM workers WHERE id = ?").run(workerId);
      this.needsSchedule = true;
    });
  }
}
