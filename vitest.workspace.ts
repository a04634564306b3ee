// The test projects: one unit project and one end-to-end project per layer and for the repository
// itself. Vitest 4 no longer reads this file by itself; vitest.config.ts passes it as
// `test.projects`. `pnpm test:<layer>` selects `<layer>*` (every project of the layer).
//
// Three groups run one after another (sequence.groupOrder):
// 0. unit tests (`*.test.ts`), four files at a time, with the end-to-end files that mostly wait
//    (`<layer>-e2e-waiting`: on Slurm's scheduler, a worker's reconnect backoff, a browser,
//    network namespaces) first among them: lint, typecheck and the unit tests keep both cores
//    busy while those wait, where in the end-to-end group two of them side by side left a core idle;
// 1. end-to-end tests (`*.e2e.test.ts`) of every layer and the repository, two files at a time:
//    they start real processes and keep both cores of the 2-core machines busy without
//    oversubscribing them;
// 2. the end-to-end files that must have the machine to themselves, one at a time, in
//    `<layer>-e2e-solo` projects: those that compare a latency or a rate with the same machine idle.
//
// Test files share their worker processes (`isolate: false`): a file's modules are imported once
// per worker, not once per file, which halves the unit tests' time. The setup file
// test/setup/restoreEnv.ts gives every file the environment the worker started with.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { WAITING } from "./test/setup/waitingFiles.ts";

const layers = ["iris", "levanter", "zephyr", "marin"] as const;
type Layer = (typeof layers)[number] | "repo";

/** End-to-end files that run alone (paths relative to the project's root). */
const SOLO: Record<Layer, string[]> = {
  iris: ["src/controller/fairness.e2e.test.ts", "src/controller/security.e2e.test.ts"],
  levanter: [],
  zephyr: ["src/io/longLines.e2e.test.ts"],
  marin: [],
  repo: [],
};

/**
 * Files at a time in the unit group. Its six waiting end-to-end files start first and fill the
 * four slots for about half a minute while lint and typecheck keep the cores busy; then the unit
 * files, which wait on child processes and sockets often enough that more than two fill the cores.
 */
const UNIT_WORKERS = 4;
const UNIT_GROUP = 0;
const E2E_GROUP = 1;
const SOLO_GROUP = 2;

const shared = {
  isolate: false,
  setupFiles: [path.join(path.dirname(fileURLToPath(import.meta.url)), "test", "setup", "restoreEnv.ts")],
};

function unitProject(name: Layer, root: string, include: string, exclude: string) {
  return {
    extends: true as const,
    test: {
      name,
      root,
      include: [include],
      exclude: [exclude, "**/node_modules/**"],
      maxWorkers: UNIT_WORKERS,
      testTimeout: 60_000,
      ...shared,
      sequence: { groupOrder: UNIT_GROUP },
    },
  };
}

function e2eProjects(name: Layer, root: string, include: string, timeouts: { testTimeout: number; hookTimeout: number }) {
  const solo = SOLO[name];
  const waiting = WAITING[name];
  const parallel = {
    extends: true as const,
    test: {
      name: `${name}-e2e`,
      root,
      include: [include],
      exclude: [...solo, ...waiting, "**/node_modules/**"],
      maxWorkers: 2,
      ...timeouts,
      ...shared,
      sequence: { groupOrder: E2E_GROUP },
    },
  };
  const alone = {
    extends: true as const,
    test: { name: `${name}-e2e-solo`, root, include: solo, fileParallelism: false, ...timeouts, ...shared, sequence: { groupOrder: SOLO_GROUP } },
  };
  const early = {
    extends: true as const,
    test: { name: `${name}-e2e-waiting`, root, include: waiting, maxWorkers: UNIT_WORKERS, ...timeouts, ...shared, sequence: { groupOrder: UNIT_GROUP } },
  };
  return [parallel, ...(solo.length ? [alone] : []), ...(waiting.length ? [early] : [])];
}

const projects = [
  unitProject("repo", ".", "test/**/*.test.ts", "test/**/*.e2e.test.ts"),
  // The repository's end-to-end tests: several hosts, the dashboard in a browser, Slurm gangs, and
  // the packages as a user installs them (pnpm pack + npm install outside the workspace).
  ...e2eProjects("repo", ".", "test/**/*.e2e.test.ts", { testTimeout: 300_000, hookTimeout: 900_000 }),
  ...layers.flatMap((layer) => [
    unitProject(layer, `packages/${layer}`, "src/**/*.test.ts", "src/**/*.e2e.test.ts"),
    ...e2eProjects(layer, `packages/${layer}`, "src/**/*.e2e.test.ts", { testTimeout: 180_000, hookTimeout: 120_000 }),
  ]),
];

export default projects;
