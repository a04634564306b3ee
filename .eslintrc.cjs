// The layer rules of the monorepo: the source of truth for which package may import which.
// ESLint 10 no longer reads this file itself; eslint.config.js loads it through FlatCompat.
//
//   marin → iris, levanter (and its ./serve and ./sharding subpaths), zephyr
//   levanter → iris            (levanter/src/sharding imports no @tensorflow/*)
//   zephyr → iris, and @marin/levanter/sharding only through a dynamic import()
//   iris → nothing of ours
//   ("iris" includes its ./toolkit subpath: small helpers every package may import)
//
// A change to this allow-list is a deliberate commit of its own. See README.md, "Layers".
//
// Folder rules: inside a package, some folders never import others (listed at the end of the
// policies), so that import circles cannot come back; test/importCycles.test.ts checks the rest.

const LAYER_MESSAGE =
  "Layer violation: {{from.element.type}} may not import '{{dependency.source}}'. " +
  'Allowed imports are drawn in README.md (section "Layers"): levanter → iris; zephyr → iris ' +
  "(+ dynamic import() of @marin/levanter/sharding); marin → iris, levanter, zephyr; nothing reaches " +
  "another package's src/internal/.";

const packages = ["iris", "levanter", "zephyr", "marin"];

// Folders inside a package that the folder rules (below) name. A file belongs to the first
// element whose pattern matches; the rest of a package's files are of the package's own type.
const folders = {
  iris: {
    cli: "cli/**",
    client: "client/**",
    controller: "controller/**",
    worker: "worker/**",
    runner: "runner/**",
    process: "process/**",
    http: "http/**",
    dashboard: "dashboard/**",
    autoscaler: "autoscaler/**",
    testkit: "testkit/**",
    toolkit: "toolkit/**",
  },
  levanter: { cli: "cli/**", trainer: "trainer/**", inference: "inference/**", serve: "serve/**", parallel: "parallel/**", parts: "{kernels,models,optim,data,checkpoint}/**" },
  zephyr: { plan: "plan/**", exec: "exec/**", data: "{io,shuffle}/**" },
  marin: { cli: "cli/**", step: "step/**", core: "{executor,experiment,library,service,remote}/**" },
};
const folderTypes = (p) => Object.keys(folders[p]).map((f) => `${p}-${f}`);

/** Each package's src/internal is an element of its own, so that only its package reaches it. */
const elements = [
  ...packages.map((p) => ({ type: `${p}-internal`, pattern: `packages/${p}/src/internal/**`, partialMatch: false })),
  { type: "levanter-sharding", pattern: "packages/levanter/src/sharding/**", partialMatch: false },
  ...packages.flatMap((p) => Object.entries(folders[p]).map(([f, glob]) => ({ type: `${p}-${f}`, pattern: `packages/${p}/src/${glob}`, partialMatch: false }))),
  ...packages.map((p) => ({ type: p, pattern: `packages/${p}/**`, partialMatch: false })),
  { type: "root", pattern: "{experiments,bench,test}/**", partialMatch: false },
];

const el = (...types) => ({ element: { type: types } });
/** Every element type of package `p`: its files, its internal folder, its named folders. */
const own = (p) => [p, `${p}-internal`, ...folderTypes(p)];

/**
 * A folder rule inside one package (as VS Code layers base → platform → editor): files of `from`
 * never import files of `to` — statically, dynamically, type-only or by re-export — so that
 * import circles cannot come back. Listed last: a later policy overrides an earlier allow.
 */
const folderRule = (pkg, from, to, why) => ({
  from: el(...from.map((f) => (f === "*" ? pkg : `${pkg}-${f}`))),
  disallow: { to: to.map((f) => (f.endsWith(".ts") ? fileElement(pkg, f) : { element: { type: `${pkg}-${f}` } })) },
  message: `Folder rule (${pkg}): ${why} See .eslintrc.cjs, "Folder rules".`,
});

/** One file of a package (`src/`-relative), as the element it belongs to: a named folder or the package. */
const fileElement = (pkg, file) => {
  const [top, ...rest] = file.split("/");
  const folder = rest.length > 0 && Object.entries(folders[pkg]).find(([, glob]) => glob === `${top}/**`);
  return folder ? { element: { type: `${pkg}-${folder[0]}`, internalPath: rest.join("/") } } : { element: { type: pkg, internalPath: `src/${file}` } };
};

/** A folder rule on third-party modules: files of `from` never import `modules` (globs). */
const moduleRule = (pkg, from, modules, why) => ({
  from: el(...from.map((f) => `${pkg}-${f}`)),
  disallow: { to: modules.map((source) => ({ module: { source } })) },
  message: `Folder rule (${pkg}): ${why} See .eslintrc.cjs, "Folder rules".`,
});

/** The folder rules. Tests are exempt (see overrides): nothing imports a test, so a test closes no circle. */
const folderPolicies = [
  // iris, bottom up: internal/ (the wire) and process/ (task environment, process groups) are
  // floors; http/ builds on internal/; dashboard/ on http/; controller/ on all three; runner/ on
  // process/; worker/ on runner/ (its argv) and process/; autoscaler/ on controller/ and worker/;
  // cli/ and testkit/ (the test harness) on top. test/layers.test.ts proves each rule.
  folderRule(
    "iris",
    ["*", "client", "controller", "worker", "runner", "process", "internal", "http", "dashboard", "autoscaler", "testkit", "toolkit"],
    ["cli"],
    "only the CLI imports cli/.",
  ),
  folderRule(
    "iris",
    ["client", "controller", "worker", "runner", "process", "internal", "http", "dashboard", "autoscaler", "toolkit"],
    ["testkit"],
    "testkit/ (the test harness) is imported by tests and the ./testing subpath only.",
  ),
  folderRule(
    "iris",
    ["internal"],
    ["client", "controller", "worker", "runner", "process", "http", "dashboard", "autoscaler"],
    "internal/ (protos, codec, rpc) is the floor: it imports no other folder (rows → wire live in controller/stateWire.ts).",
  ),
  folderRule(
    "iris",
    ["process"],
    ["internal", "client", "controller", "worker", "runner", "http", "dashboard", "autoscaler"],
    "process/ (task environment, process groups) is the neutral floor of runner/ and worker/: it imports no other folder.",
  ),
  folderRule(
    "iris",
    ["runner"],
    ["worker", "controller", "client", "http", "dashboard", "autoscaler"],
    "the task runner knows its worker only through its argv and environment (runnerSpec.ts, process/).",
  ),
  folderRule("iris", ["worker"], ["controller", "client", "http", "dashboard", "autoscaler"], "the worker knows the controller only through the wire (internal/)."),
  folderRule(
    "iris",
    ["controller"],
    ["client", "worker", "runner", "autoscaler"],
    "the controller knows workers, clients and autoscalers only through the wire (internal/) and the hooks it is given.",
  ),
  folderRule("iris", ["client"], ["controller", "worker", "runner", "autoscaler"], "the client knows the controller only through the wire (internal/)."),
  folderRule(
    "iris",
    ["http"],
    ["controller", "dashboard", "client", "worker", "runner", "autoscaler"],
    "http/ (the router, sessions, the proxy) is a floor: the controller and the dashboard build on it, never the reverse.",
  ),
  folderRule(
    "iris",
    ["dashboard"],
    ["controller", "client", "worker", "runner", "autoscaler"],
    "the dashboard reaches the controller only through http/ and the handlers it is given.",
  ),
  folderRule(
    "iris",
    ["toolkit"],
    ["cli", "client", "controller", "worker", "runner", "process", "internal", "http", "dashboard", "autoscaler", "testkit"],
    "toolkit/ (@marin/iris/toolkit, shared by every package) is a floor: it imports nothing else of iris.",
  ),
  folderRule("levanter", ["*", "trainer", "inference", "serve", "parallel", "parts"], ["cli"], "only the CLI imports cli/."),
  folderRule(
    "levanter",
    ["parallel"],
    ["trainer", "inference", "serve"],
    "parallel/ (the gang, collectives, shared memory) never imports the trainer, the inference engine or the server: the trainer builds on it.",
  ),
  moduleRule("levanter", ["parallel"], ["@tensorflow/*", "@tensorflow/**"], "parallel/ works on plain typed arrays: it imports no @tensorflow/*."),
  folderRule("levanter", ["parallel"], ["tf.ts"], "parallel/ works on plain typed arrays: it imports no TensorFlow.js (tf.ts) either."),
  folderRule(
    "levanter",
    ["trainer"],
    ["parallel/sharedMemory.ts"],
    "the trainer gets its contribution buffers from the gang (parallel/buffers.ts), never from the shared-memory regions.",
  ),
  folderRule(
    "levanter",
    ["parts"],
    ["trainer", "inference", "serve"],
    "kernels, models, optimizers, data and checkpoints never import the trainer, the inference engine or the server.",
  ),
  folderRule(
    "levanter",
    ["inference", "serve"],
    ["trainer"],
    "inference/ (the engine) and serve/ (the HTTP edge) never import the trainer: checkpoints and tokenizers load from checkpoint/ and data/.",
  ),
  folderRule("levanter", ["inference"], ["serve"], "the engine never imports the HTTP edge (serve/ builds on inference/)."),
  folderRule(
    "zephyr",
    ["plan", "exec", "data"],
    ["dataset.ts", "pipeline.ts", "index.ts"],
    "plans, execution, I/O and shuffles never import the user surface (dataset.ts, pipeline.ts); shared contracts live in a types-only module.",
  ),
  folderRule("zephyr", ["plan", "data"], ["exec"], "plans, I/O and shuffles never import exec/."),
  folderRule("marin", ["step", "core"], ["cli"], "executor/, experiment/, step/, library/, service/ and remote/ never import cli/."),
  folderRule("marin", ["step"], ["core"], "step definitions never import the executor, experiments, the standard step library, serving or remote launchers."),
];

/** The options of boundaries/dependencies: the layers, then (outside tests) the folder rules. */
const dependencyRule = (folderRules) => [
  "error",
  {
    default: "disallow",
    checkAllOrigins: true,
    checkUnknownLocals: true,
    message: LAYER_MESSAGE,
    policies: [
      // Third-party and Node built-in modules are fine by default...
      { allow: { to: { module: { origin: ["external", "core"] } } } },
      // ...but an @marin/* import that does not resolve to workspace code is an undeclared
      // dependency (or a blocked subpath such as @marin/x/internal/*).
      { disallow: { to: { module: { origin: "external", source: "@marin/**" } } } },
      { disallow: { to: { module: { origin: "external", source: "@marin/*" } } } },
      // The sharding subpath is imported by zephyr without tfjs installed: it must stay tfjs-free.
      {
        from: el("levanter-sharding"),
        disallow: { to: { module: { source: "@tensorflow/**" } } },
      },
      {
        from: el("levanter-sharding"),
        disallow: { to: { module: { source: "@tensorflow/*" } } },
      },

      // The layers.
      { from: el(...own("iris")), allow: { to: el(...own("iris")) } },
      { from: el("levanter-sharding"), allow: { to: el("iris", "iris-toolkit", "levanter-sharding") } },
      // The one levanter file the sharding subpath may use besides its own (it imports nothing).
      { from: el("levanter-sharding"), allow: { to: { element: { type: "levanter", internalPath: "src/errors.ts" } } } },
      {
        from: el(...own("levanter")),
        allow: { to: el("iris", "iris-toolkit", "levanter-sharding", ...own("levanter")) },
      },
      { from: el(...own("zephyr")), allow: { to: el("iris", "iris-toolkit", ...own("zephyr")) } },
      {
        from: el(...own("zephyr")),
        allow: { to: el("levanter-sharding"), dependency: { nodeKind: "dynamic-import" } },
      },
      {
        from: el(...own("marin")),
        allow: { to: el("iris", "iris-toolkit", "levanter", "levanter-serve", "levanter-sharding", "zephyr", ...own("marin")) },
      },
      { from: el("root"), allow: { to: el(...packages.flatMap((p) => [p, ...folderTypes(p)]), "levanter-sharding", "root") } },

      ...folderRules,
    ],
  },
];

// zod's value imports go through iris's toolkit (packages/iris/src/toolkit/zod.ts); types may come from zod.
const ZOD_PATH = { name: "zod", message: 'import { z } from "@marin/iris/toolkit" instead (inside iris: src/toolkit/zod.ts; see its opening comment).', allowTypeImports: true };
const ZOD_PATTERN = { group: ["zod/*"], message: "zod's subpaths are ES modules: take z from @marin/iris/toolkit.", allowTypeImports: true };

module.exports = {
  root: true,
  parser: "@typescript-eslint/parser",
  parserOptions: { ecmaVersion: "latest", sourceType: "module" },
  env: { node: true, es2024: true },
  plugins: ["boundaries", "@typescript-eslint"],
  extends: ["eslint:recommended", "plugin:@typescript-eslint/recommended"],
  ignorePatterns: ["**/node_modules/**", "**/dist/**", "**/internal/generated/**", "marin-out/**"],
  settings: {
    "boundaries/elements": elements,
    "boundaries/dependency-nodes": ["import", "dynamic-import", "export", "require"],
    "boundaries/legacy-templates": false,
    "import/resolver": {
      // Resolve @marin/* to their TypeScript source (the workspace condition), as tsc and vitest do.
      typescript: { alwaysTryTypes: true, project: ["tsconfig.base.json"], conditionNames: ["@marin/source", "types", "import", "node", "default"] },
      node: true,
    },
  },
  rules: {
    "boundaries/dependencies": dependencyRule(folderPolicies),
    "boundaries/no-unknown-files": "off",

    "@typescript-eslint/no-explicit-any": "off",
    "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_" }],
    "no-constant-condition": ["error", { checkLoops: false }],
  },
  overrides: [
    { files: ["*.cjs"], rules: { "@typescript-eslint/no-require-imports": "off" } },
    { files: ["**/*.test.ts", "**/*.test-d.ts"], rules: { "boundaries/dependencies": dependencyRule([]) } },
    // zod's ES-module build costs every process ~140 ms of CPU at start-up: code takes zod's
    // CommonJS build through iris's toolkit (packages/iris/src/toolkit/zod.ts); types may come from zod.
    {
      files: ["packages/*/src/**/*.ts", "test/**/*.ts", "bench/**/*.ts", "experiments/**/*.ts"],
      excludedFiles: ["packages/iris/src/toolkit/zod.ts"],
      rules: {
        "@typescript-eslint/no-restricted-imports": [
          "error",
          {
            paths: [ZOD_PATH],
            patterns: [ZOD_PATTERN],
          },
        ],
      },
    },
    // levanter loads TensorFlow.js once, with require(), in src/tf.ts (why: its opening comment);
    // an ES import of the package elsewhere would bring back the cost. Type imports are erased.
    {
      files: ["packages/levanter/src/**/*.ts"],
      excludedFiles: ["packages/levanter/src/tf.ts"],
      rules: {
        "@typescript-eslint/no-restricted-imports": [
          "error",
          {
            paths: [
              { name: "@tensorflow/tfjs", message: 'import { tf } from "<levanter>/src/tf.ts" instead (see its opening comment).', allowTypeImports: true },
              // Repeated from the zod entry above: an override's options replace the earlier ones.
              ZOD_PATH,
            ],
            patterns: [
              { group: ["@tensorflow/tfjs-*"], message: "load TensorFlow.js packages with require(), as src/tf.ts and backend.ts do.", allowTypeImports: true },
              ZOD_PATTERN,
            ],
          },
        ],
      },
    },
    // The dashboard's page modules run in the browser (served as-is, see packages/iris/README.md).
    { files: ["packages/iris/src/dashboard/assets/**/*.mjs"], env: { browser: true, node: false } },
  ],
};
