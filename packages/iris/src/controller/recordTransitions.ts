// The controller state's record-keeping transitions: log lines pushed by workers (bounded per
// attempt, resends dropped), endpoint registrations leased to attempts, status texts and metrics.
import { randomUUID } from "node:crypto";
import { IrisError } from "../errors.ts";
import type { Endpoint as WireEndpoint } from "../internal/generated/iris/v1/Endpoint.ts";
import { registeredEndpointToWire } from "../internal/codec.ts";
import { StateTransitions } from "./transitions.ts";
import { LIVE_ATTEMPT_STATES, parseAttemptId, type AttemptRow } from "./stateRows.ts";

/** The log, endpoint and metrics writes of the controller state (see controllerState.ts). */
export class StateRecordTransitions extends StateTransitions {
  // ---- logs -----------------------------------------------------------------------------------

  protected logTarget = new Map<string, { instanceId: string; idx: number; attempt: number } | null>();

  /** Appends log lines pushed by a worker (lines of unknown attempts are dropped). */
  appendLogs(lines: { attemptUid: string; stream: string; line: string; timeMs: number; index?: number | undefined }[]): void {
    if (lines.length === 0) return;
    this.tx(() => {
      const ins = this.stmt("INSERT INTO logs (instance_id, idx, attempt, stream, line, time_ms) VALUES (?, ?, ?, ?, ?, ?)");
      const counts = new Map<string, number>();
      const received = new Map<string, number>();
      const receivedOf = (uid: string): number => {
        let n = received.get(uid);
        if (n === undefined) {
          n = (this.stmt("SELECT log_lines_received AS n FROM attempts WHERE uid = ?").get(uid) as { n: number } | undefined)?.n ?? 0;
          received.set(uid, n);
        }
        return n;
      };
      for (const l of lines) {
        let target = this.logTarget.get(l.attemptUid);
        if (target === undefined) {
          const a = this.attemptByUid(l.attemptUid);
          target = a ? { instanceId: a.instance_id, idx: a.idx, attempt: a.attempt } : null;
          if (this.logTarget.size > 10_000) this.logTarget.clear();
          this.logTarget.set(l.attemptUid, target);
        }
        if (!target) continue;
        // A resent line the controller already has (see LogLine.index) is dropped.
        const stored = receivedOf(l.attemptUid) + (counts.get(l.attemptUid) ?? 0);
        if (l.index !== undefined && l.index !== null && l.index < stored) continue;
        // Bounded per attempt (a runaway printer must not bloat the database); the line at the
        // limit becomes a notice, later ones only count.
        const line =
          stored < this.logLinesLimit
            ? l.line
            : stored === this.logLinesLimit
              ? `[iris] log truncated: this attempt printed more than ${this.logLinesLimit} lines`
              : undefined;
        if (line !== undefined) {
          ins.run(target.instanceId, target.idx, target.attempt, l.stream === "stderr" ? "stderr" : "stdout", line, l.timeMs || this.clock.now());
        }
        counts.set(l.attemptUid, (counts.get(l.attemptUid) ?? 0) + 1);
        this.dirtyLogs.add(target.instanceId);
      }
      const upd = this.stmt("UPDATE attempts SET log_lines_received = log_lines_received + ? WHERE uid = ?");
      for (const [uid, n] of counts) upd.run(n, uid);
    });
  }

  /** Registers an endpoint, leased to `attemptId` when given (stale attempts are refused). */
  registerEndpoint(req: { name: string; address: string; metadata: Record<string, string>; attemptId: string; scopeJob: string }): WireEndpoint {
    return this.tx(() => {
      if (!req.name) throw new IrisError("INVALID_ARGUMENT", "endpoint name: expected a non-empty name");
      if (!req.address) throw new IrisError("INVALID_ARGUMENT", "endpoint address: expected a non-empty address");
      let lease: AttemptRow | undefined;
      let scope = req.scopeJob;
      if (req.attemptId) {
        const p = parseAttemptId(req.attemptId);
        const j = this.findJob(p.jobName);
        lease = this.attemptOf(j.instance_id, p.index, p.attempt);
        if (!lease) throw new IrisError("NOT_FOUND", `no attempt ${req.attemptId}`);
        if (!LIVE_ATTEMPT_STATES.includes(lease.state)) {
          throw new IrisError("FAILED_PRECONDITION", `attempt ${req.attemptId} already ended (${lease.state})`);
        }
        scope = scope || p.jobName;
      }
      const full = this.endpointName(req.name, scope);
      if (lease) {
        // A newer attempt of the same task replaces older registrations of the name; so does a
        // re-registration by the same attempt.
        this.db
          .prepare("DELETE FROM endpoints WHERE name = ? AND instance_id = ? AND idx = ? AND attempt <= ?")
          .run(full, lease.instance_id, lease.idx, lease.attempt);
      }
      const id = randomUUID();
      this.db
        .prepare("INSERT INTO endpoints (id, name, address, metadata, attempt_uid, instance_id, idx, attempt, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .run(id, full, req.address, JSON.stringify(req.metadata), lease?.uid ?? null, lease?.instance_id ?? null, lease?.idx ?? null, lease?.attempt ?? null, this.clock.now());
      return registeredEndpointToWire(id, full, req);
    });
  }

  /** Removes an endpoint (no-op when already gone). */
  unregisterEndpoint(endpointId: string): void {
    this.tx(() => {
      this.stmt("DELETE FROM endpoints WHERE id = ?").run(endpointId);
    });
  }

  /** Records a status text and (when given) one metrics point for an attempt. */
  reportTaskStatus(taskId: string, attempt: number, statusText: string, metrics: Record<string, number>): void {
    this.tx(() => {
      const a = this.attemptForReport(taskId, attempt);
      this.stmt("UPDATE attempts SET status_text = ? WHERE uid = ?").run(statusText, a.uid);
      if (Object.keys(metrics).length > 0) {
        const step = Number.isFinite(metrics.step) ? metrics.step! : (a.last_step ?? -1) + 1;
        this.db
          .prepare("INSERT INTO metrics (attempt_uid, step, time_ms, metrics) VALUES (?, ?, ?, ?)")
          .run(a.uid, step, this.clock.now(), JSON.stringify(metrics));
        let count = a.metric_count + 1;
        if (count > this.metricsLimit) {
          this.db
            .prepare("DELETE FROM metrics WHERE id IN (SELECT id FROM metrics WHERE attempt_uid = ? ORDER BY id LIMIT ?)")
            .run(a.uid, count - this.metricsLimit);
          count = this.metricsLimit;
        }
        this.stmt("UPDATE attempts SET metric_count = ?, last_step = ? WHERE uid = ?").run(count, step, a.uid);
      }
      if (a.status_text !== statusText) this.touchJob(a.instance_id);
    });
  }
}
