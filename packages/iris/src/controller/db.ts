// The controller's SQLite database: opening it (refusing a damaged or emptied file, WAL, foreign
// keys), numbered migrations, and online backups.
import fs from "node:fs";
import Database from "better-sqlite3";
import { IrisError } from "../errors.ts";

/** An open better-sqlite3 database. */
export type Db = Database.Database;

// Each entry is one migration; its 1-based position is its number, recorded in `user_version`.
// Never edit a shipped migration: append a new one.
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE jobs (
    instance_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    latest INTEGER NOT NULL,
    parent_instance_id TEXT,
    spec TEXT NOT NULL,
    state TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    submitted_at_ms INTEGER NOT NULL,
    finished_at_ms INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 1
  );
  CREATE INDEX jobs_by_name ON jobs (name, latest);
  CREATE INDEX jobs_by_parent ON jobs (parent_instance_id);
  CREATE INDEX jobs_by_state ON jobs (state);

  CREATE TABLE tasks (
    instance_id TEXT NOT NULL REFERENCES jobs (instance_id),
    idx INTEGER NOT NULL,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    preemptions INTEGER NOT NULL DEFAULT 0,
    exit_code INTEGER,
    failure_kind TEXT NOT NULL DEFAULT '',
    error TEXT NOT NULL DEFAULT '',
    pending_reason TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (instance_id, idx)
  );
  CREATE INDEX tasks_by_state ON tasks (state);

  CREATE TABLE attempts (
    uid TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    worker_id TEXT NOT NULL,
    state TEXT NOT NULL,
    exit_code INTEGER,
    failure_kind TEXT NOT NULL DEFAULT '',
    error TEXT NOT NULL DEFAULT '',
    resources TEXT NOT NULL,
    assigned_at_ms INTEGER NOT NULL,
    started_at_ms INTEGER NOT NULL DEFAULT 0,
    finished_at_ms INTEGER NOT NULL DEFAULT 0,
    stopping INTEGER NOT NULL DEFAULT 0,
    stop_reason TEXT NOT NULL DEFAULT '',
    status_text TEXT NOT NULL DEFAULT '',
    log_lines_expected INTEGER NOT NULL DEFAULT 0,
    log_lines_received INTEGER NOT NULL DEFAULT 0,
    metric_count INTEGER NOT NULL DEFAULT 0,
    last_step REAL,
    UNIQUE (instance_id, idx, attempt),
    FOREIGN KEY (instance_id, idx) REFERENCES tasks (instance_id, idx)
  );
  CREATE INDEX attempts_by_worker ON attempts (worker_id, state);

  CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    attributes TEXT NOT NULL,
    capacity TEXT NOT NULL,
    state TEXT NOT NULL,
    healthy INTEGER NOT NULL DEFAULT 1,
    last_seen_ms INTEGER NOT NULL,
    registered_at_ms INTEGER NOT NULL
  );

  CREATE TABLE endpoints (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    address TEXT NOT NULL,
    metadata TEXT NOT NULL,
    attempt_uid TEXT,
    instance_id TEXT,
    idx INTEGER,
    attempt INTEGER,
    created_at_ms INTEGER NOT NULL
  );
  CREATE INDEX endpoints_by_name ON endpoints (name);
  CREATE INDEX endpoints_by_attempt ON endpoints (attempt_uid);

  CREATE TABLE logs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    stream TEXT NOT NULL,
    line TEXT NOT NULL,
    time_ms INTEGER NOT NULL
  );
  CREATE INDEX logs_by_job ON logs (instance_id, seq);

  CREATE TABLE metrics (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    attempt_uid TEXT NOT NULL,
    step REAL NOT NULL,
    time_ms INTEGER NOT NULL,
    metrics TEXT NOT NULL
  );
  CREATE INDEX metrics_by_attempt ON metrics (attempt_uid, id);
  `,
  // Task results and non-retryable application errors (APP_ERROR).
  `
  ALTER TABLE attempts ADD COLUMN result_json TEXT;
  ALTER TABLE attempts ADD COLUMN error_code TEXT NOT NULL DEFAULT '';
  ALTER TABLE tasks ADD COLUMN error_code TEXT NOT NULL DEFAULT '';
  `,
  // A job's tasks by state: ListJobs' counts and the scheduler's window of pending tasks.
  `
  CREATE INDEX tasks_by_job_state ON tasks (instance_id, state, idx);
  `,
  // Security: the controller's secrets (task-token key) and endpoint ownership. An endpoint's
  // owner_job is the job tree that registered it, or `/<user>` for a user outside any job;
  // expires_at_ms is set on unleased registrations (NULL: leased to an attempt).
  `
  CREATE TABLE controller_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  ALTER TABLE endpoints ADD COLUMN owner_job TEXT;
  ALTER TABLE endpoints ADD COLUMN expires_at_ms INTEGER;
  CREATE INDEX endpoints_by_owner ON endpoints (owner_job);
  `,
  // Worker credentials (workerCredentials.ts): each worker's session, bound to its id and process
  // instance, and single-use registration credentials minted in advance for a named worker. Only
  // SHA-256 hashes of the tokens are stored.
  `
  CREATE TABLE worker_sessions (
    worker_id TEXT PRIMARY KEY,
    token_sha256 TEXT NOT NULL UNIQUE,
    instance_id TEXT NOT NULL,
    user TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
  );
  CREATE TABLE worker_grants (
    worker_id TEXT PRIMARY KEY,
    token_sha256 TEXT NOT NULL UNIQUE,
    expires_at_ms INTEGER NOT NULL
  );
  `,
];

/** Number of the newest migration. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Files bigger than this get SQLite's `quick_check` at start instead of the full `integrity_check`. */
export const FULL_CHECK_MAX_BYTES = 256 * 1024 * 1024;

/** Options of {@link openDb}. */
export interface OpenDbOptions {
  /** Create the file when it does not exist (default true); false: NOT_FOUND naming it. */
  create?: boolean;
  /** Open read-only (no migrations; used by `iris db backup`). */
  readonly?: boolean;
}

/**
 * Opens a controller database and applies pending migrations. A new database is created only
 * when `file` does not exist; an existing file is checked first and refused with a `DATA_LOSS`
 * IrisError naming it when it is empty (0 bytes: an emptied database would silently start an
 * empty cluster), not a database, or fails SQLite's integrity check (`quick_check` above
 * {@link FULL_CHECK_MAX_BYTES}).
 */
export function openDb(file: string, opts: OpenDbOptions = {}): Db {
  let size: number | undefined;
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) throw new IrisError("FAILED_PRECONDITION", `database ${file}: not a regular file`);
    size = st.size;
  } catch (e) {
    if (e instanceof IrisError) throw e;
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw new IrisError("FAILED_PRECONDITION", `database ${file}: ${(e as Error).message}`);
  }
  if (size === undefined && (opts.create === false || opts.readonly === true)) {
    throw new IrisError("NOT_FOUND", `database ${file} does not exist`);
  }
  if (size === 0) {
    throw new IrisError(
      "DATA_LOSS",
      `database ${file} is empty (0 bytes) but is not new: refusing to start an empty cluster on it (restore it from a backup, or delete the file to start a new cluster)`,
    );
  }
  let db: Db | undefined;
  try {
    db = new Database(file, { fileMustExist: size !== undefined, readonly: opts.readonly === true });
    if (size !== undefined) checkIntegrity(db, size > FULL_CHECK_MAX_BYTES ? "quick_check" : "integrity_check");
    if (opts.readonly === true) return db;
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    db.pragma("busy_timeout = 5000");
    migrate(db);
    return db;
  } catch (e) {
    db?.close();
    if (e instanceof IrisError) throw new IrisError(e.code, `database ${file}: ${e.message}`, { retryable: false });
    throw new IrisError("DATA_LOSS", `database ${file} is damaged: ${(e as Error).message} (restore it from a backup)`, { retryable: false });
  }
}

function checkIntegrity(db: Db, pragma: "quick_check" | "integrity_check"): void {
  const rows = db.pragma(`${pragma}(20)`) as Record<string, string>[];
  const problems = rows.map((r) => Object.values(r)[0]).filter((v) => v !== "ok");
  if (problems.length > 0) {
    throw new IrisError("DATA_LOSS", `failed SQLite's ${pragma}: ${problems.slice(0, 5).join("; ")}${problems.length > 5 ? "; …" : ""} (restore it from a backup)`);
  }
}

/**
 * Copies a controller database to `out` with SQLite's online backup (safe while a controller
 * is running on it). `out` must not exist; the copy is integrity-checked.
 */
export async function backupDb(file: string, out: string): Promise<{ bytes: number }> {
  if (fs.existsSync(out)) throw new IrisError("ALREADY_EXISTS", `backup ${out} already exists: refusing to overwrite it`);
  const db = openDb(file, { readonly: true });
  try {
    await db.backup(out);
  } catch (e) {
    throw new IrisError("INTERNAL", `backup of database ${file} to ${out} failed: ${(e as Error).message}`);
  } finally {
    db.close();
  }
  openDb(out, { readonly: true }).close();
  return { bytes: fs.statSync(out).size };
}

/** Applies the migrations newer than the database's `user_version`, each in its own transaction. */
export function migrate(db: Db): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`database schema version ${current} is newer than this controller (${MIGRATIONS.length})`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
