// The controller state's shared core: the database handle, prepared statements, the one-transaction
// helper (tx) and the change notifications fired after each commit; options, clock and the
// scheduling hints the collaborators set (needsSchedule and its deadlines). One instance per
// database, handed to each collaborator's constructor (see controllerState.ts).
import { randomBytes } from "node:crypto";
import type BetterSqlite3 from "better-sqlite3";
import type { Db } from "./db.ts";
import { SpecCache } from "./specCache.ts";
import type { Clock, ControllerStateOptions, StateListener } from "./stateRows.ts";

/** A prepared statement of the controller database. */
export type Statement = BetterSqlite3.Statement<unknown[]>;

/**
 * The core of the controller's state: the database, its prepared statements, transactions and
 * the change notifications they fire. Queries and transitions share it (see controllerState.ts).
 */
export class StateCore {
  readonly db: Db;
  readonly workerTimeoutMs: number;
  /** The default scheduling timeout of jobs that set none (see ControllerStateOptions). */
  readonly schedulingTimeoutMs: number;
  readonly clock: Clock;
  readonly metricsLimit: number;
  readonly logLinesLimit: number;
  /** How long an unleased endpoint registration lives (see ControllerStateOptions). */
  readonly endpointTtlMs: number;
  private readonly listener: StateListener;
  /** Parsed specs of jobs (bounded; a job's spec leaves it when the job ends). */
  readonly specCache: SpecCache;
  private dirtyJobs = new Set<string>();
  private dirtyWorkers = new Set<string>();
  private dirtyLogs = new Set<string>();
  private depth = 0;
  private readonly statements = new Map<string, Statement>();
  private readonly inTransaction: (fn: () => unknown) => unknown;
  // Placement can only change when tasks become pending, capacity frees up or workers come and
  // go; passes in between are skipped (a pass over many pending tasks is not free).
  needsSchedule = true;
  // Since when no worker has been registered (undefined while some are), and the earliest time a
  // waiting task's scheduling timeout runs out: a pass then runs even if nothing else changed.
  noWorkersSinceMs: number | undefined;
  nextScheduleDeadlineMs = Infinity;
  // Key of the per-attempt gang secrets (IRIS_GANG_SECRET), per controller process: a gang round
  // dispatched across a controller restart gets mismatched secrets, fails its barrier and retries.
  readonly gangKey = randomBytes(32);

  constructor(db: Db, opts: ControllerStateOptions = {}) {
    this.db = db;
    this.clock = opts.clock ?? { now: () => Date.now() };
    this.workerTimeoutMs = opts.workerTimeoutMs ?? 30_000;
    this.schedulingTimeoutMs = opts.schedulingTimeoutMs ?? 300_000;
    this.metricsLimit = opts.metricsLimit ?? 10_000;
    this.logLinesLimit = opts.logLinesLimit ?? 1_000_000;
    this.endpointTtlMs = opts.endpointTtlMs ?? 600_000;
    this.listener = opts.listener ?? {};
    this.specCache = new SpecCache(opts.specCacheLimits);
    this.inTransaction = db.transaction((fn: () => unknown) => fn());
    // A restarted controller gives every known-alive worker two timeouts to reconcile again
    // before declaring it lost (the database's last_seen is from before the restart, and the
    // workers are still backing off their reconnects): adopt, don't restart.
    this.tx(() => {
      this.stmt("UPDATE workers SET last_seen_ms = ? WHERE state = 'ALIVE'").run(this.clock.now() + this.workerTimeoutMs);
    });
  }

  // ---- transactions and notifications -------------------------------------------------------

  /** Runs `fn` in one transaction; listeners are told about changes after it commits. */
  tx<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    this.depth++;
    let result: T;
    try {
      result = this.inTransaction(() => {
        const r = fn();
        const bump = this.stmt("UPDATE jobs SET version = version + 1 WHERE instance_id = ?");
        for (const id of this.dirtyJobs) bump.run(id);
        return r;
      }) as T;
    } catch (e) {
      this.dirtyJobs.clear();
      this.dirtyWorkers.clear();
      this.dirtyLogs.clear();
      throw e;
    } finally {
      this.depth--;
    }
    const jobs = this.dirtyJobs;
    const workers = this.dirtyWorkers;
    const logs = this.dirtyLogs;
    this.dirtyJobs = new Set();
    this.dirtyWorkers = new Set();
    this.dirtyLogs = new Set();
    for (const id of jobs) this.listener.jobChanged?.(id);
    for (const id of workers) this.listener.workerChanged?.(id);
    for (const id of logs) this.listener.logsAppended?.(id);
    return result;
  }

  // Prepared statements are reused: preparing is a large share of a small transaction's cost.
  stmt(sql: string): Statement {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  /** Job `instanceId` changed in this transaction: its version is bumped and listeners told at commit. */
  touchJob(instanceId: string): void {
    this.dirtyJobs.add(instanceId);
  }

  /** Worker `workerId`'s desired set may have changed: its listeners are told at commit. */
  touchWorker(workerId: string): void {
    this.dirtyWorkers.add(workerId);
  }

  /** Log lines of job `instanceId` were stored: its log readers are told at commit. */
  touchLogs(instanceId: string): void {
    this.dirtyLogs.add(instanceId);
  }
}
