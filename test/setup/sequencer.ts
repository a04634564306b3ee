// The order test files start in: Vitest's own (groups by sequence.groupOrder, then by project, then
// the longest or largest file first), except that within a group the files named in FIRST start
// first, in that order. Two end-to-end files run at once, so a long file that starts last leaves a
// core idle for most of its run (on a clean clone Vitest has no durations cached and goes by file
// size, which put test/packaging.e2e.test.ts, 205 lines and the longest run, near the end), and two
// files that mostly wait (Slurm's scheduler, a worker's backoff) leave both idle. FIRST is the
// longest files, alternating one that keeps the cores busy (training, installs, many processes)
// with one that mostly waits. Their times on the 2-core machine are in bench/RESULTS.md.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The longest end-to-end files, busy and waiting ones alternately (paths from the repository root). */
export const FIRST = [
  "test/packaging.e2e.test.ts", // busy: pnpm pack, npm install, a native compile (~110 CPU-s)
  "test/gangOnSlurm.e2e.test.ts", // waits: Slurm schedules the gangs (~90 s, ~20 CPU-s)
  "packages/marin/src/library/tinyBrown.e2e.test.ts", // busy: the whole pipeline, twice
  "packages/iris/src/autoscaler/slurmCluster.e2e.test.ts", // waits: Slurm, a time limit's warning signal
  "packages/levanter/src/cli/runDir.e2e.test.ts", // busy: training runs
  "test/severalHosts.e2e.test.ts", // waits: network namespaces, bundle installs
  "packages/iris/src/cli/cli.e2e.test.ts", // busy: many CLI processes
  "packages/iris/src/autoscaler/slurmProvider.e2e.test.ts", // waits: Slurm
  "packages/marin/src/cli/newUser.e2e.test.ts", // busy
  "packages/levanter/src/serve/serveAbuse.e2e.test.ts", // waits: memory settling after abuse
  "packages/levanter/src/trainer/dataParallel.e2e.test.ts", // busy: 1-4 ranks
  "packages/iris/src/worker/worker.e2e.test.ts", // waits: a controller outage and backoff
  "packages/levanter/src/cli/trainRanks.e2e.test.ts", // busy
];

export default class ListedFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const rank = (s: TestSpecification): number => {
      const i = FIRST.indexOf(path.relative(root, s.moduleId));
      return i === -1 ? FIRST.length : i;
    };
    const position = new Map(base.map((s, i) => [s, i]));
    return [...base].sort((a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b) || position.get(a)! - position.get(b)!);
  }
}
