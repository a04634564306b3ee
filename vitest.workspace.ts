// One unit project and one end-to-end project per layer: the source of truth for how tests are
// grouped. Vitest 4 no longer reads this file by itself; vitest.config.ts passes it as
// `test.projects`. `pnpm test:<layer>` selects `<layer>*` (both projects of the layer).
//
// Unit tests (`*.test.ts`) run in parallel. End-to-end tests (`*.e2e.test.ts`) start real
// processes: each layer's run one file at a time, and the layers' e2e groups run one after another
// (sequence.groupOrder), so the 2-core machines are never oversubscribed.

const layers = ["iris", "levanter", "zephyr", "marin"] as const;

const projects = [
  {
    extends: true as const,
    test: {
      name: "repo",
      root: ".",
      include: ["test/**/*.test.ts"],
      exclude: ["test/**/*.e2e.test.ts", "**/node_modules/**"],
      testTimeout: 60_000,
      sequence: { groupOrder: 0 },
    },
  },
  {
    extends: true as const,
    // The packages as a user installs them (pnpm pack + npm install outside the workspace): last,
    // after every layer's end-to-end group.
    test: {
      name: "repo-e2e",
      root: ".",
      include: ["test/**/*.e2e.test.ts"],
      fileParallelism: false,
      testTimeout: 300_000,
      hookTimeout: 900_000,
      sequence: { groupOrder: layers.length + 1 },
    },
  },
  ...layers.flatMap((layer, i) => [
    {
      extends: true as const,
      test: {
        name: layer,
        root: `packages/${layer}`,
        include: ["src/**/*.test.ts"],
        exclude: ["src/**/*.e2e.test.ts", "**/node_modules/**"],
        testTimeout: 60_000,
        sequence: { groupOrder: 0 },
      },
    },
    {
      extends: true as const,
      test: {
        name: `${layer}-e2e`,
        root: `packages/${layer}`,
        include: ["src/**/*.e2e.test.ts"],
        fileParallelism: false,
        testTimeout: 180_000,
        hookTimeout: 120_000,
        sequence: { groupOrder: i + 1 },
      },
    },
  ]),
];

export default projects;
