// The controller state's record-keeping transitions: log lines pushed by workers (bounded per
// attempt, resends dropped), endpoint registrations leased to attempts, status texts and metrics.
// Each public method is one transaction and returns what it did (a result object).
//
// Invariant kept: a log line is stored only for a known attempt, once per (attempt, index), at
// most logLinesLimit per attempt (then one truncation notice); an endpoint is leased to a live
// attempt of its owner's tree (or expires after endpointTtlMs) and leaves with it; an attempt
// keeps at most metricsLimit metrics points, oldest dropped first.
import { randomBytes, randomUUID } from "node:crypto";
import { IrisError } from "../errors.ts";
import type { Endpoint as WireEndpoint } from "../internal/generated/iris/v1/Endpoint.ts";
import { registeredEndpointToWire } from "./stateWire.ts";
import type { StateCore } from "./stateCore.ts";
import type { StateQueries } from "./stateQueries.ts";
import { LIMITS, checkEndpointRequest, checkEndpointName } from "../jobSpec.ts";
import { LOCAL_ADMIN, inTree, mayControlJob, type Principal } from "./auth.ts";
import { LIVE_ATTEMPT_STATES, parseAttemptId, rootJobOf, type AttemptRow, type EndpointRow } from "./stateRows.ts";

/** The log, endpoint and metrics writes of the controller state (see controllerState.ts). */
/** The log, endpoint and metrics writes of the controller state. */
export class RecordTransitions {
  private readonly core: StateCore;
  private readonly queries: StateQueries;

  constructor(core: StateCore, queries: StateQueries) {
    this.core = core;
    this.queries = queries;
  }

  // ---- logs -----------------------------------------------------------------------------------

  logTarget = new Map<string, { instanceId: string; idx: number; attempt: number } | null>();

  /**
   * Appends log lines pushed by a worker (lines of unknown attempts are dropped). With `fromWorker`
   * (a worker session pushing), a line of an attempt assigned to another worker refuses the whole
   * batch (PERMISSION_DENIED). `accepted`: the lines counted (resends and lines of unknown attempts are not).
   */
  appendLogs(lines: { attemptUid: string; stream: string; line: string; timeMs: number; index?: number | undefined }[], fromWorker?: string): { accepted: number } {
    if (lines.length === 0) return { accepted: 0 };
    if (fromWorker !== undefined) {
      for (const uid of new Set(lines.map((l) => l.attemptUid))) {
        const a = this.core.stmt("SELECT worker_id FROM attempts WHERE uid = ?").get(uid) as { worker_id: string } | undefined;
        if (a && a.worker_id !== fromWorker) throw new IrisError("PERMISSION_DENIED", `worker ${fromWorker} may not push the logs of attempt ${uid}: it runs elsewhere`);
      }
    }
    return this.core.tx(() => {
      const ins = this.core.stmt("INSERT INTO logs (instance_id, idx, attempt, stream, line, time_ms) VALUES (?, ?, ?, ?, ?, ?)");
      const counts = new Map<string, number>();
      const received = new Map<string, number>();
      const receivedOf = (uid: string): number => {
        let n = received.get(uid);
        if (n === undefined) {
          n = (this.core.stmt("SELECT log_lines_received AS n FROM attempts WHERE uid = ?").get(uid) as { n: number } | undefined)?.n ?? 0;
          received.set(uid, n);
        }
        return n;
      };
      for (const l of lines) {
        let target = this.logTarget.get(l.attemptUid);
        if (target === undefined) {
          const a = this.queries.attemptByUid(l.attemptUid);
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
          stored < this.core.logLinesLimit
            ? l.line
            : stored === this.core.logLinesLimit
              ? `[iris] log truncated: this attempt printed more than ${this.core.logLinesLimit} lines`
              : undefined;
        if (line !== undefined) {
          ins.run(target.instanceId, target.idx, target.attempt, l.stream === "stderr" ? "stderr" : "stdout", line, l.timeMs || this.core.clock.now());
        }
        counts.set(l.attemptUid, (counts.get(l.attemptUid) ?? 0) + 1);
        this.core.touchLogs(target.instanceId);
      }
      const upd = this.core.stmt("UPDATE attempts SET log_lines_received = log_lines_received + ? WHERE uid = ?");
      let accepted = 0;
      for (const [uid, n] of counts) {
        upd.run(n, uid);
        accepted += n;
      }
      return { accepted };
    });
  }

  /**
   * Registers an endpoint, leased to `attemptId` when given (stale attempts are refused). `by` is
   * the caller (default: an admin outside any job): a task's registration is leased to its own
   * attempt and owned by its job; a user's or admin's outside any job is owned by `/<user>` and
   * expires after `endpointTtlMs`. Nobody may register a name held by an owner they may not
   * control (PERMISSION_DENIED), nor names outside their tree.
   */
  registerEndpoint(req: { name: string; address: string; metadata: Record<string, string>; attemptId: string; scopeJob: string }, by: Principal = LOCAL_ADMIN): WireEndpoint {
    return this.core.tx(() => {
      checkEndpointRequest(req);
      let attemptId = req.attemptId;
      let scope = req.scopeJob;
      if (by.role === "task") {
        if (attemptId !== "" && attemptId !== by.attempt) {
          throw new IrisError("PERMISSION_DENIED", `a task token of attempt ${by.attempt ?? "?"} may not register endpoints for attempt ${attemptId}`);
        }
        attemptId = by.attempt ?? "";
        scope = by.job ?? "";
      }
      let lease: AttemptRow | undefined;
      let leaseJob: string | undefined;
      if (attemptId) {
        const p = parseAttemptId(attemptId);
        const j = this.queries.findJob(p.jobName);
        lease = this.queries.attemptOf(j.instance_id, p.index, p.attempt);
        if (!lease) throw new IrisError("NOT_FOUND", `no attempt ${attemptId}`);
        if (!LIVE_ATTEMPT_STATES.includes(lease.state)) {
          throw new IrisError("FAILED_PRECONDITION", `attempt ${attemptId} already ended (${lease.state})`);
        }
        if (!mayControlJob(by, p.jobName)) throw new IrisError("PERMISSION_DENIED", `${by.role} ${by.user} may not register endpoints for attempt ${attemptId} of ${p.jobName}`);
        leaseJob = p.jobName;
        scope = scope || p.jobName;
      }
      const full = this.queries.endpointName(req.name, scope);
      const nameErr = checkEndpointName(full);
      if (nameErr) throw new IrisError("INVALID_ARGUMENT", nameErr);
      // The owner: the leasing job, else the caller's user root.
      const owner = leaseJob ?? `/${by.user}`;
      // Where the caller may put names: a task anywhere under its root job (relative names live
      // there); a user under /<user>; an admin anywhere.
      const mayName = by.role === "admin" || (by.role === "task" ? by.job !== undefined && inTree(rootJobOf(by.job), full) : inTree(`/${by.user}`, full));
      if (!mayName)
        throw new IrisError("PERMISSION_DENIED", `${by.role} ${by.user} may not register ${full}: it is outside ${by.role === "task" ? rootJobOf(by.job ?? "") : `/${by.user}`}`);
      const now = this.core.clock.now();
      const holders = this.core.stmt("SELECT * FROM endpoints WHERE name = ? AND (expires_at_ms IS NULL OR expires_at_ms > ?)").all(full, now) as EndpointRow[];
      for (const h of holders) {
        const holder = this.queries.endpointOwner(h);
        if (!mayControlJob(by, holder)) throw new IrisError("PERMISSION_DENIED", `endpoint ${full} belongs to ${holder}: ${by.role} ${by.user} may not replace it`);
      }
      const count = (this.core.stmt("SELECT COUNT(*) AS n FROM endpoints WHERE owner_job = ? AND (expires_at_ms IS NULL OR expires_at_ms > ?)").get(owner, now) as { n: number }).n;
      if (count >= LIMITS.endpointsPerOwner) {
        throw new IrisError("RESOURCE_EXHAUSTED", `${owner} already holds ${count} endpoints (at most ${LIMITS.endpointsPerOwner}): unregister some first`);
      }
      if (lease) {
        // A newer attempt of the same task replaces older registrations of the name; so does a
        // re-registration by the same attempt.
        this.core.db.prepare("DELETE FROM endpoints WHERE name = ? AND instance_id = ? AND idx = ? AND attempt <= ?").run(full, lease.instance_id, lease.idx, lease.attempt);
      } else {
        // Registering again renews: the owner's earlier unleased registration of the name goes.
        this.core.stmt("DELETE FROM endpoints WHERE name = ? AND owner_job = ? AND attempt_uid IS NULL").run(full, owner);
      }
      const id = randomUUID();
      this.core.db
        .prepare(
          "INSERT INTO endpoints (id, name, address, metadata, attempt_uid, instance_id, idx, attempt, created_at_ms, owner_job, expires_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .run(
          id,
          full,
          req.address,
          JSON.stringify(req.metadata),
          lease?.uid ?? null,
          lease?.instance_id ?? null,
          lease?.idx ?? null,
          lease?.attempt ?? null,
          now,
          owner,
          lease ? null : now + this.core.endpointTtlMs,
        );
      return registeredEndpointToWire(id, full, { ...req, attemptId });
    });
  }

  /** Removes an endpoint (no-op when already gone); PERMISSION_DENIED unless `by` may control its owner. */
  unregisterEndpoint(endpointId: string, by: Principal = LOCAL_ADMIN): { removed: boolean } {
    return this.core.tx(() => {
      const row = this.core.stmt("SELECT * FROM endpoints WHERE id = ?").get(endpointId) as EndpointRow | undefined;
      if (!row) return { removed: false };
      const owner = this.queries.endpointOwner(row);
      if (!mayControlJob(by, owner)) throw new IrisError("PERMISSION_DENIED", `endpoint ${row.name} belongs to ${owner}: ${by.role} ${by.user} may not remove it`);
      this.core.stmt("DELETE FROM endpoints WHERE id = ?").run(endpointId);
      return { removed: true };
    });
  }

  /** The controller's task-token key: created on first use, kept in the database (tokens survive restarts). */
  taskTokenSecret(): Buffer {
    return this.core.tx(() => {
      this.core.stmt("INSERT OR IGNORE INTO controller_meta (key, value) VALUES ('task_token_secret', ?)").run(randomBytes(32).toString("hex"));
      const row = this.core.stmt("SELECT value FROM controller_meta WHERE key = 'task_token_secret'").get() as { value: string };
      return Buffer.from(row.value, "hex");
    });
  }

  /** Drops unleased endpoints whose time is up; returns how many. */
  expireEndpoints(): { expired: number } {
    return this.core.tx(() => ({
      expired: Number(this.core.stmt("DELETE FROM endpoints WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?").run(this.core.clock.now()).changes),
    }));
  }

  /** Records a status text and (when given) one metrics point for an attempt. */
  reportTaskStatus(taskId: string, attempt: number, statusText: string, metrics: Record<string, number>): { attemptUid: string; step: number | undefined } {
    return this.core.tx(() => {
      let step: number | undefined;
      const a = this.queries.attemptForReport(taskId, attempt);
      this.core.stmt("UPDATE attempts SET status_text = ? WHERE uid = ?").run(statusText, a.uid);
      if (Object.keys(metrics).length > 0) {
        step = Number.isFinite(metrics.step) ? metrics.step! : (a.last_step ?? -1) + 1;
        this.core.db.prepare("INSERT INTO metrics (attempt_uid, step, time_ms, metrics) VALUES (?, ?, ?, ?)").run(a.uid, step, this.core.clock.now(), JSON.stringify(metrics));
        let count = a.metric_count + 1;
        if (count > this.core.metricsLimit) {
          this.core.db.prepare("DELETE FROM metrics WHERE id IN (SELECT id FROM metrics WHERE attempt_uid = ? ORDER BY id LIMIT ?)").run(a.uid, count - this.core.metricsLimit);
          count = this.core.metricsLimit;
        }
        this.core.stmt("UPDATE attempts SET metric_count = ?, last_step = ? WHERE uid = ?").run(count, step, a.uid);
      }
      if (a.status_text !== statusText) this.core.touchJob(a.instance_id);
      return { attemptUid: a.uid, step };
    });
  }
}
