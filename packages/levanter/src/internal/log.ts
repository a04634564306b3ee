// Structured, quiet logging: one JSON object per line on stderr, filtered by LEVANTER_LOG
// (debug | info | warn | error | silent; default info). Progress bars and metrics go elsewhere.

/** Severity of a log record. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const ORDER: Record<LogLevel | "silent", number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

function threshold(): number {
  const raw = (process.env.LEVANTER_LOG ?? "info").toLowerCase();
  return raw in ORDER ? ORDER[raw as LogLevel] : ORDER.info;
}

/** One structured record as {@link log} builds it. */
export interface LogRecord {
  time: string;
  level: LogLevel;
  pkg: "levanter";
  msg: string;
  [field: string]: unknown;
}

/** Receives each record that passes LEVANTER_LOG, with its JSON line (no newline). */
export type LogSink = (record: LogRecord, line: string) => void;

let sink: LogSink | undefined;
let context: Record<string, unknown> = {};

/**
 * Fields every later record carries (a data-parallel rank sets `{ rank }`); returns the previous
 * ones, to restore.
 */
export function setLogContext(fields: Record<string, unknown>): Record<string, unknown> {
  const prev = context;
  context = fields;
  return prev;
}

/**
 * Routes records to `next` instead of stderr (the CLI's human mode sends them to a file and
 * prints warnings as text); `undefined` restores stderr. Returns the sink it replaced.
 */
export function setLogSink(next: LogSink | undefined): LogSink | undefined {
  const prev = sink;
  sink = next;
  return prev;
}

/** Writes one structured record (`{time, level, msg, ...fields}`) to stderr (or the sink) when its level passes LEVANTER_LOG. */
export function log(level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
  if (ORDER[level] < threshold()) return;
  const record: LogRecord = { time: new Date().toISOString(), level, pkg: "levanter", msg, ...context, ...fields };
  const line = JSON.stringify(record);
  if (sink) sink(record, line);
  else process.stderr.write(`${line}\n`);
}
