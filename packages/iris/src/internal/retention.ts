// The retention rule both bundle stores apply (the controller's uploaded bundles, a worker's built
// ones): keep the most recently used, and whatever was used lately or is still needed.

/** What {@link beyondRetention} keeps. */
export interface RetentionPolicy<T> {
  /** The `keep` most recently used items stay (0 or less: every item stays). */
  keep: number;
  /** So does any used within the last `graceMs` of `now`. */
  graceMs: number;
  /** The time now, in ms since the epoch (the clock `usedMs` was set by). */
  now: number;
  /** And any this says is still needed (asked only of items the rest would remove). */
  spare?: (item: T) => boolean;
}

/** The items to remove under `policy`, most recently used first. */
export function beyondRetention<T extends { usedMs: number }>(items: readonly T[], policy: RetentionPolicy<T>): T[] {
  if (policy.keep <= 0) return [];
  return [...items]
    .sort((a, b) => b.usedMs - a.usedMs)
    .slice(policy.keep)
    .filter((item) => policy.now - item.usedMs >= policy.graceMs && !(policy.spare?.(item) ?? false));
}
