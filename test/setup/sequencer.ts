// The order test files start in: Vitest's own (groups in order, then project by project, then the
// slowest or, on a first run, the largest file first), except that within a project the end-to-end
// files that mostly wait are spread out among the others. Two files run at once in the end-to-end
// group; when both wait (two Slurm files on Slurm's scheduler, say), a core stands idle. Measured
// on a clean clone, that was 30–70 % idle for about 35 s while slurmCluster and slurmProvider, next
// to each other by size, ran together.
import path from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * End-to-end files whose wall time is mostly waiting, not CPU (measured alone: `/usr/bin/time
 * vitest run <file>`): on Slurm's scheduler and time limits, a worker's reconnect backoff, a
 * browser and network namespaces.
 */
export const WAITING_FILES = [
  "packages/iris/src/autoscaler/slurmCluster.e2e.test.ts", // 20 CPU-s in 37 s
  "packages/iris/src/autoscaler/slurmProvider.e2e.test.ts", // 10 CPU-s in 36 s
  "packages/iris/src/worker/worker.e2e.test.ts", // 14 CPU-s in 28 s
  "test/gangOnSlurm.e2e.test.ts", // 17 CPU-s in 39 s (plus its Slurm jobs')
  "test/severalHosts.e2e.test.ts", // 22 CPU-s in 29 s
  "test/dashboard.e2e.test.ts", // 20 CPU-s in 32 s
];

/** `busy` in order with `waiting` spread evenly among them, the first waiting file first. */
export function spread<T>(busy: readonly T[], waiting: readonly T[]): T[] {
  if (waiting.length === 0) return [...busy];
  const total = busy.length + waiting.length;
  const step = total / waiting.length;
  const out: T[] = [];
  let w = 0;
  let b = 0;
  for (let i = 0; i < total; i++) {
    if (w < waiting.length && (i >= Math.floor(w * step) || b === busy.length)) out.push(waiting[w++]!);
    else out.push(busy[b++]!);
  }
  return out;
}

export default class SpreadWaitingSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const waiting = new Set(WAITING_FILES.map((f) => path.resolve(root, f)));
    const out: TestSpecification[] = [];
    // Vitest's order keeps each project's files together: spread within each run of one project.
    for (let i = 0; i < sorted.length;) {
      let j = i;
      while (j < sorted.length && sorted[j]!.project.name === sorted[i]!.project.name) j++;
      const block = sorted.slice(i, j);
      out.push(
        ...spread(
          block.filter((s) => !waiting.has(s.moduleId)),
          block.filter((s) => waiting.has(s.moduleId)),
        ),
      );
      i = j;
    }
    return out;
  }
}
