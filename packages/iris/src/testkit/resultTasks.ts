// Test fixture: module entrypoints that return values and fail with or without retries, run by
// real iris task runners.
import { fileURLToPath } from "node:url";
import { IrisError } from "../errors.ts";

/** The module's absolute path, for `entrypoint.module`. */
export const RESULT_TASKS = fileURLToPath(import.meta.url);

/** Returns what it was given and which task it is. */
export async function echo(args: { tag: string }): Promise<{ tag: string; index: number; attempt: number }> {
  await Promise.resolve();
  return { tag: args.tag, index: Number(process.env.IRIS_TASK_INDEX), attempt: Number(process.env.IRIS_ATTEMPT) };
}

/** Returns nothing: no result. */
export function nothing(): void {}

/** Fails for good: an IrisError marked non-retryable. */
export function refuse(args: { why: string }): never {
  throw new IrisError("INVALID_ARGUMENT", `refused: ${args.why}`, { retryable: false });
}

/** Fails the way a plain bug fails (retried within the budget); succeeds from attempt `okFrom` on. */
export function flaky(args: { okFrom: number }): string {
  if (Number(process.env.IRIS_ATTEMPT) < args.okFrom) throw new Error(`plain failure on attempt ${process.env.IRIS_ATTEMPT}`);
  return "recovered";
}

/** Returns a string of `bytes` ASCII characters (its JSON is 2 bytes longer). */
export function big(args: { bytes: number }): string {
  return "x".repeat(args.bytes);
}

/** Returns a value JSON cannot hold. */
export function bigint(): unknown {
  return { n: 1n };
}
