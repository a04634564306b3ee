// The end-to-end files that mostly wait, by layer: they run in the unit group, first
// (vitest.workspace.ts, test/setup/sequencer.ts).

/**
 * End-to-end files whose wall time is mostly waiting, not CPU (measured alone: `/usr/bin/time
 * vitest run <file>`), relative to their project's root.
 */
export const WAITING: Record<"iris" | "levanter" | "zephyr" | "marin" | "repo", string[]> = {
  iris: [
    "src/autoscaler/slurmCluster.e2e.test.ts", // 20 CPU-s in 37 s: Slurm's scheduler and time limits
    "src/autoscaler/slurmProvider.e2e.test.ts", // 10 CPU-s in 36 s
    "src/worker/worker.e2e.test.ts", // 14 CPU-s in 28 s: an outage that outlasts grpc-js's backoff
  ],
  levanter: [],
  zephyr: [],
  marin: [],
  repo: [
    "test/gangOnSlurm.e2e.test.ts", // 17 CPU-s in 39 s (plus its Slurm jobs')
    "test/severalHosts.e2e.test.ts", // 22 CPU-s in 29 s: network namespaces
    "test/dashboard.e2e.test.ts", // 20 CPU-s in 32 s: a browser
  ],
};

/** The same files, relative to the repository's root. */
export const WAITING_FILES = Object.entries(WAITING).flatMap(([layer, files]) => files.map((f) => (layer === "repo" ? f : `packages/${layer}/${f}`)));
