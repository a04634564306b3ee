// Proves the layer rules of .eslintrc.cjs: each forbidden kind of import is reported with the
// layer message, each allowed kind is not. Sources are linted through ESLint's Node API with
// virtual file paths inside the real packages, so the real resolver and config are exercised.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ESLint } from "eslint";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let eslint: ESLint;

beforeAll(() => {
  eslint = new ESLint({ cwd: root });
});

async function layerErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return result!.messages.filter((m) => m.ruleId === "boundaries/dependencies").map((m) => m.message);
}

const IRIS = "packages/iris/src/fixture.ts";
const LEVANTER = "packages/levanter/src/fixture.ts";
const SHARDING = "packages/levanter/src/sharding/fixture.ts";
const ZEPHYR = "packages/zephyr/src/fixture.ts";
const MARIN = "packages/marin/src/fixture.ts";

describe("allowed imports", () => {
  const allowed: Array<[string, string]> = [
    [LEVANTER, `import { IrisError } from "@marin/iris"; export { IrisError };`],
    [LEVANTER, `import { shardFor } from "@marin/levanter/sharding"; export { shardFor };`],
    [LEVANTER, `import * as tf from "@tensorflow/tfjs"; export { tf };`],
    [SHARDING, `import { IrisError } from "@marin/iris"; export { IrisError };`],
    [SHARDING, `import { LevanterError } from "../errors.ts"; export { LevanterError };`],
    [SHARDING, `import { writeFileAtomic } from "@marin/iris/toolkit"; export { writeFileAtomic };`],
    [ZEPHYR, `import { formatZodIssues } from "@marin/iris/toolkit"; export { formatZodIssues };`],
    [MARIN, `import { integerArg } from "@marin/iris/toolkit"; export { integerArg };`],
    [ZEPHYR, `import { IrisError } from "@marin/iris"; export { IrisError };`],
    [ZEPHYR, `export const load = () => import("@marin/levanter/sharding");`],
    [
      MARIN,
      `import { IrisError } from "@marin/iris"; import { LevanterError } from "@marin/levanter"; import { ZephyrError } from "@marin/zephyr"; export { IrisError, LevanterError, ZephyrError };`,
    ],
    [MARIN, `import { shardFor } from "@marin/levanter/sharding"; export { shardFor };`],
    [MARIN, `import { ModelListSchema } from "@marin/levanter/serve/openai"; export { ModelListSchema };`],
    [MARIN, `export const s = () => import("@marin/levanter/serve");`],
    [IRIS, `import { IrisError } from "./errors.ts"; import fs from "node:fs"; import { z } from "zod"; export { IrisError, fs, z };`],
    ["packages/iris/src/internal/x.ts", `import { IrisError } from "../errors.ts"; export { IrisError };`],
    [IRIS, `import { invariant } from "./internal/assert.ts"; export { invariant };`],
    ["experiments/fixture.ts", `import { MarinError } from "@marin/marin"; export { MarinError };`],
  ];
  it.each(allowed)("%s: %s", async (file, code) => {
    expect(await layerErrors(file, code)).toEqual([]);
  });
});

describe("forbidden imports", () => {
  const forbidden: Array<[string, string, string]> = [
    ["lower layer imports a higher one (static)", IRIS, `import { LevanterError } from "@marin/levanter"; export { LevanterError };`],
    ["side-effect import", IRIS, `import "@marin/levanter";`],
    ["type-only import", IRIS, `import type { MarinErrorCode } from "@marin/marin"; export type X = MarinErrorCode;`],
    ["dynamic import", IRIS, `export const m = () => import("@marin/zephyr");`],
    ["re-export", IRIS, `export { ZephyrError } from "@marin/zephyr";`],
    ["levanter → zephyr", LEVANTER, `import { ZephyrError } from "@marin/zephyr"; export { ZephyrError };`],
    ["levanter → marin", LEVANTER, `import { MarinError } from "@marin/marin"; export { MarinError };`],
    ["zephyr → levanter/serve", ZEPHYR, `import { InferenceEngine } from "@marin/levanter/serve"; export { InferenceEngine };`],
    ["zephyr → levanter main entry", ZEPHYR, `import { LevanterError } from "@marin/levanter"; export { LevanterError };`],
    ["zephyr → levanter main entry, dynamic", ZEPHYR, `export const m = () => import("@marin/levanter");`],
    ["zephyr → levanter/sharding, static", ZEPHYR, `import { shardFor } from "@marin/levanter/sharding"; export { shardFor };`],
    ["zephyr → levanter/sharding, type-only", ZEPHYR, `import type { shardFor } from "@marin/levanter/sharding"; export type F = typeof shardFor;`],
    ["zephyr → marin", ZEPHYR, `import { MarinError } from "@marin/marin"; export { MarinError };`],
    ["unresolved @marin package", MARIN, `import { x } from "@marin/nonexistent"; export { x };`],
    ["internal by package name", MARIN, `import { invariant } from "@marin/iris/internal/assert"; export { invariant };`],
    ["internal by relative path", LEVANTER, `import { invariant } from "../../iris/src/internal/assert.ts"; export { invariant };`],
    ["internal by relative path, type-only", MARIN, `import type { invariant } from "../../iris/src/internal/assert.ts"; export type Y = typeof invariant;`],
    ["tfjs under levanter/src/sharding", SHARDING, `import * as tf from "@tensorflow/tfjs"; export { tf };`],
    ["tfjs subpackage under levanter/src/sharding", SHARDING, `export const m = () => import("@tensorflow/tfjs-backend-wasm");`],
    ["sharding → levanter main entry", SHARDING, `import { LevanterError } from "../index.ts"; export { LevanterError };`],
    ["unresolved relative path", IRIS, `import { x } from "./no-such-file.ts"; export { x };`],
    ["relative path into another package", IRIS, `import { MarinError } from "../../marin/src/errors.ts"; export { MarinError };`],
  ];
  it.each(forbidden)("%s", async (_kind, file, code) => {
    const errors = await layerErrors(file, code);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatch(/README\.md/);
  });
});

describe("folder rules inside packages", () => {
  const at = (p: string, file: string) => `packages/${p}/src/${file}`;
  // [rule, file, forbidden import, allowed import in the opposite direction (file, code)]
  const rules: Array<[string, string, string, string, string]> = [
    [
      "iris: only the CLI imports cli/",
      at("iris", "worker/fixture.ts"),
      `import { runCli } from "../cli/program.ts"; export { runCli };`,
      at("iris", "cli/fixture.ts"),
      `import { IrisClient } from "../client/irisClient.ts"; export { IrisClient };`,
    ],
    [
      "iris: the controller never imports the worker",
      at("iris", "controller/fixture.ts"),
      `export const w = () => import("../worker/worker.ts");`,
      at("iris", "controller/fixture.ts"),
      `import { invariant } from "../internal/assert.ts"; export { invariant };`,
    ],
    [
      "iris: the client never imports the controller",
      at("iris", "client/fixture.ts"),
      `import type { Controller } from "../controller/controller.ts"; export type C = Controller;`,
      at("iris", "cli/fixture.ts"),
      `import type { Controller } from "../controller/controller.ts"; export type C = Controller;`,
    ],
    [
      "iris: http/ never imports the controller",
      at("iris", "http/fixture.ts"),
      `import type { Controller } from "../controller/controller.ts"; export type C = Controller;`,
      at("iris", "controller/fixture.ts"),
      `import { HttpRouter } from "../http/router.ts"; export { HttpRouter };`,
    ],
    [
      "iris: the dashboard never imports the controller",
      at("iris", "dashboard/fixture.ts"),
      `import { mayCall } from "../controller/auth.ts"; export { mayCall };`,
      at("iris", "dashboard/fixture.ts"),
      `import { SseStream } from "../http/sse.ts"; export { SseStream };`,
    ],
    [
      "iris: internal/ never imports the controller (rows → wire live beside the rows)",
      at("iris", "internal/fixture.ts"),
      `import type { JobRow } from "../controller/stateRows.ts"; export type R = JobRow;`,
      at("iris", "controller/fixture.ts"),
      `import { jobSpecFromWire } from "../internal/codec.ts"; export { jobSpecFromWire };`,
    ],
    [
      "iris: internal/ never imports the worker",
      at("iris", "internal/fixture.ts"),
      `import type { LocalAttempt } from "../worker/workerTypes.ts"; export type A = LocalAttempt;`,
      at("iris", "worker/fixture.ts"),
      `import { loadIrisProto } from "../internal/rpc.ts"; export { loadIrisProto };`,
    ],
    [
      "iris: internal/ never imports http/",
      at("iris", "internal/fixture.ts"),
      `export { HttpRouter } from "../http/router.ts";`,
      at("iris", "http/fixture.ts"),
      `import { IRIS_PACKAGE_ROOT } from "../internal/protoGen.ts"; export { IRIS_PACKAGE_ROOT };`,
    ],
    [
      "iris: process/ imports no other folder",
      at("iris", "process/fixture.ts"),
      `import { loadIrisProto } from "../internal/rpc.ts"; export { loadIrisProto };`,
      at("iris", "runner/fixture.ts"),
      `import { readProcStat } from "../process/processGroup.ts"; export { readProcStat };`,
    ],
    [
      "iris: process/ never imports the worker",
      at("iris", "process/fixture.ts"),
      `import type { LocalAttempt } from "../worker/workerTypes.ts"; export type A = LocalAttempt;`,
      at("iris", "worker/fixture.ts"),
      `import { buildTaskEnv } from "../process/taskEnv.ts"; export { buildTaskEnv };`,
    ],
    [
      "iris: the runner never imports the worker",
      at("iris", "runner/fixture.ts"),
      `import { AttemptStore } from "../worker/attemptStore.ts"; export { AttemptStore };`,
      at("iris", "worker/fixture.ts"),
      `import { runnerArgv } from "../runner/runnerSpec.ts"; export { runnerArgv };`,
    ],
    [
      "iris: the runner never imports the worker, dynamically",
      at("iris", "runner/fixture.ts"),
      `export const w = () => import("../worker/worker.ts");`,
      at("iris", "worker/fixture.ts"),
      `export const r = () => import("../runner/runnerSpec.ts");`,
    ],
    [
      "iris: the worker never imports the controller",
      at("iris", "worker/fixture.ts"),
      `import type { ControllerState } from "../controller/controllerState.ts"; export type S = ControllerState;`,
      at("iris", "autoscaler/fixture.ts"),
      `import { Worker } from "../worker/worker.ts"; export { Worker };`,
    ],
    [
      "iris: the worker never imports the dashboard",
      at("iris", "worker/fixture.ts"),
      `import "../dashboard/server.ts";`,
      at("iris", "controller/fixture.ts"),
      `import { addDashboardRoutes } from "../dashboard/server.ts"; export { addDashboardRoutes };`,
    ],
    [
      "iris: the controller never imports the autoscaler",
      at("iris", "controller/fixture.ts"),
      `import type { Autoscaler } from "../autoscaler/autoscaler.ts"; export type A = Autoscaler;`,
      at("iris", "autoscaler/fixture.ts"),
      `import type { ControllerState } from "../controller/controllerState.ts"; export type S = ControllerState;`,
    ],
    [
      "iris: http/ never imports the dashboard",
      at("iris", "http/fixture.ts"),
      `export { addDashboardRoutes } from "../dashboard/server.ts";`,
      at("iris", "dashboard/fixture.ts"),
      `import { HttpRouter } from "../http/router.ts"; export { HttpRouter };`,
    ],
    [
      "iris: the dashboard never imports the worker",
      at("iris", "dashboard/fixture.ts"),
      `export const w = () => import("../worker/worker.ts");`,
      at("iris", "dashboard/fixture.ts"),
      `import { loadIrisProto } from "../internal/rpc.ts"; export { loadIrisProto };`,
    ],
    [
      "iris: only tests and ./testing import testkit/",
      at("iris", "controller/fixture.ts"),
      `import { until } from "../testkit/processes.ts"; export { until };`,
      at("iris", "fixture.ts"),
      `import { startSlurm } from "./testkit/slurm.ts"; export { startSlurm };`,
    ],
    [
      "iris: toolkit/ imports nothing else of iris",
      at("iris", "toolkit/fixture.ts"),
      `import { IrisClient } from "../client/irisClient.ts"; export { IrisClient };`,
      at("iris", "controller/fixture.ts"),
      `import { Histogram } from "../toolkit/prometheus.ts"; export { Histogram };`,
    ],
    [
      "levanter: only the CLI imports cli/",
      at("levanter", "trainer/fixture.ts"),
      `import "../cli/main.ts";`,
      at("levanter", "cli/fixture.ts"),
      `import { trainLm } from "../trainer/trainLm.ts"; export { trainLm };`,
    ],
    [
      "levanter: models never import the trainer",
      at("levanter", "models/fixture.ts"),
      `import { trainLm } from "../trainer/trainLm.ts"; export { trainLm };`,
      at("levanter", "trainer/fixture.ts"),
      `import { TransformerLm } from "../models/transformer.ts"; export { TransformerLm };`,
    ],
    [
      "levanter: inference/ never imports the trainer",
      at("levanter", "inference/fixture.ts"),
      `import { trainLm } from "../trainer/trainLm.ts"; export { trainLm };`,
      at("levanter", "inference/fixture.ts"),
      `import { loadModelFromCheckpoint } from "../checkpoint/trainState.ts"; export { loadModelFromCheckpoint };`,
    ],
    [
      "levanter: serve/ never imports the trainer",
      at("levanter", "serve/fixture.ts"),
      `export const t = () => import("../trainer/trainLm.ts");`,
      at("levanter", "serve/fixture.ts"),
      `import { InferenceEngine } from "../inference/engine.ts"; export { InferenceEngine };`,
    ],
    [
      "levanter: inference/ never imports serve/",
      at("levanter", "inference/fixture.ts"),
      `import type { InferenceServer } from "../serve/server.ts"; export type S = InferenceServer;`,
      at("levanter", "trainer/fixture.ts"),
      `import { tokenizerNamed } from "../data/tokenizerLookup.ts"; export { tokenizerNamed };`,
    ],
    [
      "levanter: parallel/ never imports the trainer",
      at("levanter", "parallel/fixture.ts"),
      `import { trainLm } from "../trainer/trainLm.ts"; export { trainLm };`,
      at("levanter", "trainer/fixture.ts"),
      `import { allGatherJson } from "../parallel/collectives.ts"; export { allGatherJson };`,
    ],
    [
      "levanter: parallel/ never imports the trainer, type-only",
      at("levanter", "parallel/fixture.ts"),
      `import type { DataParallelStep } from "../trainer/gradients.ts"; export type S = DataParallelStep;`,
      at("levanter", "parallel/fixture.ts"),
      `import { loadNativeAddon } from "../kernels/native/addon.ts"; import { getIrisCtx } from "@marin/iris"; export { loadNativeAddon, getIrisCtx };`,
    ],
    [
      "levanter: parallel/ imports no @tensorflow/*",
      at("levanter", "parallel/fixture.ts"),
      `import * as tf from "@tensorflow/tfjs"; export { tf };`,
      at("levanter", "models/fixture.ts"),
      `import * as tf from "@tensorflow/tfjs"; export { tf };`,
    ],
    [
      "levanter: parallel/ imports no TensorFlow.js through src/tf.ts either",
      at("levanter", "parallel/fixture.ts"),
      `import { tf } from "../tf.ts"; export { tf };`,
      at("levanter", "models/fixture.ts"),
      `import { tf } from "../tf.ts"; export { tf };`,
    ],
    [
      "levanter: parallel/ imports no @tensorflow/* subpackage, dynamically",
      at("levanter", "parallel/fixture.ts"),
      `export const m = () => import("@tensorflow/tfjs-backend-wasm");`,
      at("levanter", "parallel/fixture.ts"),
      `export const m = () => import("./sharedMemory.ts");`,
    ],
    [
      "levanter: the trainer never imports parallel/sharedMemory.ts",
      at("levanter", "trainer/fixture.ts"),
      `import { ensureShared } from "../parallel/sharedMemory.ts"; export { ensureShared };`,
      at("levanter", "trainer/fixture.ts"),
      `import { contributionBuffers } from "../parallel/buffers.ts"; export { contributionBuffers };`,
    ],
    [
      "zephyr: exec/ never imports the user surface",
      at("zephyr", "exec/fixture.ts"),
      `import type { Dataset } from "../dataset.ts"; export type D = Dataset<number>;`,
      at("zephyr", "fixture.ts"),
      `import { Dataset } from "./dataset.ts"; export { Dataset };`,
    ],
    [
      "zephyr: exec/ never imports the user surface, dynamically",
      at("zephyr", "exec/fixture.ts"),
      `export const p = () => import("../pipeline.ts");`,
      at("zephyr", "fixture.ts"),
      `export const p = () => import("./pipeline.ts");`,
    ],
    [
      "zephyr: plan/ never imports exec/",
      at("zephyr", "plan/fixture.ts"),
      `export { commitFile } from "../exec/commit.ts";`,
      at("zephyr", "exec/fixture.ts"),
      `import { ZephyrError } from "../errors.ts"; export { ZephyrError };`,
    ],
    [
      "marin: the executor never imports cli/",
      at("marin", "executor/fixture.ts"),
      `import { runCli } from "../cli/program.ts"; export { runCli };`,
      at("marin", "cli/fixture.ts"),
      `import { runGraph } from "../executor/runner.ts"; export { runGraph };`,
    ],
    [
      "marin: step/ never imports the executor",
      at("marin", "step/fixture.ts"),
      `import { runGraph } from "../executor/runner.ts"; export { runGraph };`,
      at("marin", "executor/fixture.ts"),
      `import { defineStep } from "../step/step.ts"; export { defineStep };`,
    ],
  ];
  it.each(rules)("%s", async (_rule, file, forbidden, okFile, allowed) => {
    const errors = await layerErrors(file, forbidden);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatch(/^Folder rule \(\w+\): .*"Folder rules"/);
    expect(await layerErrors(okFile, allowed)).toEqual([]);
  });
});

describe("folder rules exempt tests", () => {
  it("a test under zephyr exec/ may drive a Dataset (nothing imports a test: no circle)", async () => {
    expect(await layerErrors("packages/zephyr/src/exec/fixture.test.ts", `import { fromList } from "../dataset.ts"; export { fromList };`)).toEqual([]);
    expect(await layerErrors("packages/zephyr/src/exec/fixture.test.ts", `import { MarinError } from "@marin/marin"; export { MarinError };`)).not.toEqual([]);
  });
});

// The folder graph of iris as the files draw it today: no two of its folders import each other,
// directly or around a circle (tests excluded: nothing imports a test). A new import that closes a
// circle fails here even where no folder rule above names the pair.
describe("iris folders form no circle", () => {
  const src = path.join(root, "packages/iris/src");
  const folderOf = (file: string): string => {
    const rel = path.relative(src, file).split(path.sep);
    return rel.length > 1 ? rel[0]! : ".";
  };
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) return e.name === "generated" ? [] : files(full);
      return /\.(ts|mjs)$/.test(e.name) && !/\.test\.ts$/.test(e.name) ? [full] : [];
    });

  it("each folder's imports point one way", () => {
    const edges = new Map<string, Set<string>>();
    for (const file of files(src)) {
      const from = folderOf(file);
      for (const ref of ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles) {
        if (!ref.fileName.startsWith(".")) continue;
        const to = folderOf(path.resolve(path.dirname(file), ref.fileName));
        if (to !== from && from !== "." && to !== ".") {
          if (!edges.has(from)) edges.set(from, new Set());
          edges.get(from)!.add(to);
        }
      }
    }
    // The named floors and layers are all there (a rename would make this test vacuous).
    for (const f of ["controller", "dashboard", "internal", "runner", "worker", "http", "autoscaler", "process"]) {
      expect([...edges.keys(), ...[...edges.values()].flatMap((s) => [...s])]).toContain(f);
    }
    const reach = (a: string, b: string, seen = new Set<string>()): boolean => {
      if (seen.has(a)) return false;
      seen.add(a);
      return [...(edges.get(a) ?? [])].some((n) => n === b || reach(n, b, seen));
    };
    const circles = [...edges].flatMap(([a, tos]) => [...tos].filter((b) => reach(b, a)).map((b) => `${a} → ${b} → … → ${a}`));
    expect(circles).toEqual([]);
  });
});

describe("imports that cost every process its start-up (no-restricted-imports)", () => {
  async function restricted(file: string, code: string): Promise<string[]> {
    const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
    return result!.messages.filter((m) => m.ruleId === "@typescript-eslint/no-restricted-imports").map((m) => m.message);
  }
  const zodValue = `import { z } from "zod"; export const s = z.string();`;
  const zodType = `import type { z } from "zod"; export type S = z.infer<z.ZodString>;`;

  it.each([IRIS, LEVANTER, SHARDING, ZEPHYR, MARIN, "test/fixture.ts", "experiments/fixture.ts"])("zod's value import is refused in %s, its types are not", async (file) => {
    expect(await restricted(file, zodValue)).toEqual([expect.stringContaining(`import { z } from "@marin/iris/toolkit"`)]);
    expect(await restricted(file, `import { z } from "zod/mini"; export const s = z.string();`)).toEqual([expect.stringContaining("@marin/iris/toolkit")]);
    expect(await restricted(file, zodType)).toEqual([]);
  });

  it("only iris's toolkit/zod.ts loads zod itself; in levanter both the zod and the TensorFlow.js rules hold", async () => {
    expect(await restricted("packages/iris/src/toolkit/zod.ts", zodValue)).toEqual([]);
    expect(await restricted(LEVANTER, `import * as tf from "@tensorflow/tfjs"; ${zodValue}`)).toEqual([
      expect.stringContaining(`src/tf.ts`),
      expect.stringContaining(`@marin/iris/toolkit`),
    ]);
    expect(await restricted(LEVANTER, `import { z } from "@marin/iris/toolkit"; export const s = z.string();`)).toEqual([]);
  });
});
