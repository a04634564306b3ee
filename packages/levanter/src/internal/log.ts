// Structured, quiet logging: one JSON object per line on stderr, filtered by LEVANTER_LOG
// (debug | info | warn | error | silent; default info). Progress bars and metrics go elsewhere.

/** Severity of a log record. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const ORDER: Record<LogLevel | "silent", number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

function threshold(): number {
  const raw = (process.env.LEVANTER_LOG ?? "info").toLowerCase();
  return raw in ORDER ? ORDER[raw as LogLevel] : ORDER.info;
}

/** Writes one structured record (`{time, level, msg, ...fields}`) to stderr when its level passes LEVANTER_LOG. */
export function log(level: LogLevel, msg: string, fields: Record<string, unknown> = {}): void {
  if (ORDER[level] < threshold()) return;
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, pkg: "levanter", msg, ...fields })}\n`);
}
