// The task result contract: a module entrypoint's return value as capped JSON text, the
// non-retryable failure marker (APP_ERROR), and the report file a task runner leaves for its worker.
import fs from "node:fs";
import { writeFileAtomicSync } from "./toolkit/atomicWrite.ts";

/**
 * The largest return value a module entrypoint may hand back, in bytes of its serialised UTF-8
 * JSON (1 MiB). A bigger one ends the attempt as `APP_ERROR` with code `RESULT_TOO_LARGE`.
 */
export const MAX_TASK_RESULT_BYTES = 1024 * 1024;

/** The error codes iris itself gives an `APP_ERROR` about a task's return value. */
export const RESULT_ERROR_CODES = { tooLarge: "RESULT_TOO_LARGE", notJson: "RESULT_NOT_JSON" } as const;

/** An application error that no retry can fix: the attempt ends `APP_ERROR` with this code. */
export interface AppError {
  code: string;
  message: string;
}

/**
 * What the task runner reports about a module entrypoint that returned or threw an
 * {@link AppError}, written as JSON to `resultPath` in the attempt's scratch directory before it
 * exits. No file: the exit code alone tells (a return of `undefined` writes none).
 */
export type RunnerReport = { resultJson: string } | { appError: AppError };

/**
 * A return value as JSON text: `undefined` means no result; a value that is not JSON
 * (BigInt, a cycle, a function) or whose text exceeds {@link MAX_TASK_RESULT_BYTES} is an
 * {@link AppError}.
 */
export function encodeTaskResult(value: unknown): { resultJson: string } | { appError: AppError } | undefined {
  if (value === undefined) return undefined;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    return { appError: { code: RESULT_ERROR_CODES.notJson, message: `the task's return value is not JSON: ${(e as Error).message}` } };
  }
  if (text === undefined) {
    return { appError: { code: RESULT_ERROR_CODES.notJson, message: `the task's return value is not JSON (a ${typeof value})` } };
  }
  return checkResultSize(text);
}

/** Checks JSON text against {@link MAX_TASK_RESULT_BYTES}. */
export function checkResultSize(text: string): { resultJson: string } | { appError: AppError } {
  // Every UTF-16 unit is at most 3 bytes of UTF-8: short texts need no count.
  const bytes = text.length * 3 <= MAX_TASK_RESULT_BYTES ? 0 : Buffer.byteLength(text, "utf8");
  if (bytes > MAX_TASK_RESULT_BYTES) {
    return {
      appError: {
        code: RESULT_ERROR_CODES.tooLarge,
        message: `the task's return value is ${bytes} bytes of JSON; the limit is ${MAX_TASK_RESULT_BYTES} bytes (MAX_TASK_RESULT_BYTES)`,
      },
    };
  }
  return { resultJson: text };
}

/**
 * The {@link AppError} of a thrown value marked non-retryable: an object with `retryable === false`
 * and a string `code` (an `IrisError` made with `{ retryable: false }`, or any error of that shape).
 * Anything else is a plain failure (APP_EXIT), retried within the task's budget.
 */
export function appErrorOf(thrown: unknown): AppError | undefined {
  if (typeof thrown !== "object" || thrown === null) return undefined;
  const t = thrown as { retryable?: unknown; code?: unknown; message?: unknown };
  if (t.retryable !== false || typeof t.code !== "string") return undefined;
  return { code: t.code, message: typeof t.message === "string" ? t.message : String(thrown) };
}

/** Writes a runner report where the worker reads it (atomically: a crash leaves no half file). */
export function writeRunnerReport(file: string, report: RunnerReport): void {
  writeFileAtomicSync(file, JSON.stringify(report), { durable: false });
}

/** Reads a runner report; undefined when there is none or it is not one. */
export function readRunnerReport(file: string): RunnerReport | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
  if (typeof raw !== "object" || raw === null) return undefined;
  const r = raw as { resultJson?: unknown; appError?: { code?: unknown; message?: unknown } };
  if (typeof r.resultJson === "string") return { resultJson: r.resultJson };
  if (typeof r.appError === "object" && r.appError !== null && typeof r.appError.code === "string") {
    return { appError: { code: r.appError.code, message: typeof r.appError.message === "string" ? r.appError.message : "" } };
  }
  return undefined;
}
