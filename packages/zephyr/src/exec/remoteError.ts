// Errors as plain data, both ways: how a worker sends a failure across a thread or process boundary
// and how the coordinator's side turns it back into a throwable that keeps its zephyr code.
import { ZephyrError } from "../errors.ts";
import type { RemoteError } from "./contracts.ts";

/** Any thrown value as plain data (its zephyr code kept when it is a ZephyrError). */
export function toRemoteError(e: unknown): RemoteError {
  const err = e instanceof Error ? e : new Error(String(e));
  return { code: e instanceof ZephyrError ? e.code : undefined, name: err.name, message: err.message, stack: err.stack };
}

/** Turns a remote error back into a throwable (a ZephyrError when it was one). */
export function reviveError(error: RemoteError): Error {
  if (error.code) {
    const e = new ZephyrError(error.code, error.message);
    if (error.stack) e.stack = error.stack;
    return e;
  }
  const e = new Error(error.message);
  e.name = error.name;
  if (error.stack) e.stack = error.stack;
  return e;
}
