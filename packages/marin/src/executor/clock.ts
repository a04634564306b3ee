// Time as the executor sees it: the system clock, and a fake one that tests advance by hand.
/** Time as the executor sees it: injectable so lease logic can be tested with a fake clock. */
export interface Clock {
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        clearTimeout(t);
        reject(signal!.reason);
      };
      const t = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/** A clock that moves only when told to (`advance`); sleepers wake in deadline order. */
export class FakeClock implements Clock {
  private t: number;
  private sleepers: { until: number; resolve: () => void }[] = [];

  constructor(start = 1_000_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== entry);
        reject(signal!.reason);
      };
      const entry = {
        until: this.t + ms,
        resolve: () => {
          // A long-lived signal (a run's) must not collect one listener per sleep.
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      this.sleepers.push(entry);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Number of pending sleeps (lets a test wait until a loop is parked on the clock). */
  get pending(): number {
    return this.sleepers.length;
  }

  /** Moves time forward, waking sleepers whose deadline passed (letting each one's continuation run). */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    for (;;) {
      const due = this.sleepers.filter((s) => s.until <= target).sort((a, b) => a.until - b.until)[0];
      if (!due) break;
      this.t = Math.max(this.t, due.until);
      this.sleepers = this.sleepers.filter((s) => s !== due);
      due.resolve();
      for (let i = 0; i < 20; i++) await Promise.resolve();
      await new Promise((r) => setImmediate(r));
    }
    this.t = target;
  }
}
