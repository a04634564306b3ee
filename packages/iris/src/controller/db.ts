// The controller's SQLite database: opening it (WAL, foreign keys) and numbered migrations.
import Database from "better-sqlite3";

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
];

/** Number of the newest migration. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Opens (creating if needed) a controller database and applies pending migrations. */
export function openDb(file: string): Db {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  migrate(db);
  return db;
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
