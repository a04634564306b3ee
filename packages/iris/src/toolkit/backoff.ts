// Exponential backoff: the delay between retries doubles (by default) up to a cap.

export interface BackoffOptions {
  /** The first delay, ms. */
  initialMs: number;
  /** The largest delay, ms. */
  maxMs: number;
  /** Each delay is the previous one times this (default 2). */
  factor?: number;
}

/** The delay before retry number `retry` (0-based): `initialMs · factor^retry`, at most `maxMs`. */
export function backoffDelay(retry: number, opts: BackoffOptions): number {
  const factor = opts.factor ?? 2;
  // The exponent is bounded so that a huge retry count stays finite (then capped by maxMs).
  const steps = Math.min(Math.max(0, Math.floor(retry)), 64);
  return Math.min(opts.initialMs * factor ** steps, opts.maxMs);
}

/**
 * The delays of one retry loop: `delayMs` is the next wait, `next()` returns it and grows the one
 * after, `reset()` (after a success) starts again from `initialMs`.
 *
 * @example
 * const backoff = new Backoff({ initialMs: 100, maxMs: 2000 });
 * for (;;) { try { return await call(); } catch { await sleep(backoff.next()); } }
 */
export class Backoff {
  readonly #opts: BackoffOptions;
  #retry = 0;

  constructor(opts: BackoffOptions) {
    if (!(opts.initialMs > 0) || !(opts.maxMs >= opts.initialMs) || !((opts.factor ?? 2) >= 1)) {
      throw new RangeError(`backoff: expected 0 < initialMs ≤ maxMs and factor ≥ 1, got ${JSON.stringify(opts)}`);
    }
    this.#opts = opts;
  }

  /** The wait before the next retry, ms (not advanced). */
  get delayMs(): number {
    return backoffDelay(this.#retry, this.#opts);
  }

  /** The wait before the next retry, ms; the one after grows. */
  next(): number {
    const d = this.delayMs;
    this.#retry++;
    return d;
  }

  /** Back to `initialMs` (a call succeeded). */
  reset(): void {
    this.#retry = 0;
  }
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
