// The order test files start in: Vitest's own (groups by sequence.groupOrder, then by project, then
// the longest or largest file first), except that within a group the files named in HEAVIEST start
// first, in that order. Two files run at once in the end-to-end group, so a long file that starts
// last leaves one core idle for most of its run: on a clean clone Vitest has no durations cached and
// goes by file size, which put test/packaging.e2e.test.ts (205 lines, the longest run) near the end.
// Durations measured on the 2-core machine (wall, under load) are in bench/RESULTS.md.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** End-to-end files by wall time, longest first (paths from the repository root). */
export const HEAVIEST = [
  "test/packaging.e2e.test.ts",
  "packages/marin/src/library/tinyBrown.e2e.test.ts",
  "packages/levanter/src/cli/runDir.e2e.test.ts",
  "packages/iris/src/cli/cli.e2e.test.ts",
  "packages/marin/src/cli/newUser.e2e.test.ts",
  "test/gangOnSlurm.e2e.test.ts",
  "packages/iris/src/autoscaler/slurmCluster.e2e.test.ts",
  "packages/levanter/src/serve/serveAbuse.e2e.test.ts",
  "test/severalHosts.e2e.test.ts",
  "packages/levanter/src/cli/trainRanks.e2e.test.ts",
];

export default class HeaviestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const rank = (s: TestSpecification): number => {
      const i = HEAVIEST.indexOf(path.relative(root, s.moduleId));
      return i === -1 ? HEAVIEST.length : i;
    };
    const position = new Map(base.map((s, i) => [s, i]));
    return [...base].sort((a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b) || position.get(a)! - position.get(b)!);
  }
}
