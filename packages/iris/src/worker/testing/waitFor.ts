// Test helpers: waiting on a condition with a deadline (never a sleep), and whether a pid is alive.

/**
 * Polls `check` until it returns a value other than `undefined`/`false`, or throws after
 * `timeoutMs` (default 10 s) with `what` in the message; `intervalMs` 0 polls on every turn of the
 * event loop. Tests synchronise on conditions, never on sleeps.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    const interval = opts.intervalMs ?? 20;
    await new Promise((resolve) => (interval === 0 ? setImmediate(resolve) : setTimeout(resolve, interval)));
  }
}

/** Whether a process with this pid exists (and is not a zombie awaiting its parent). */
export { processAlive } from "../../process/processGroup.ts";
