// The four packages as a user outside this workspace gets them: `pnpm pack` each one, install the
// tarballs with npm into a scratch project under the OS temp folder, then run built JavaScript
// only: (a) a plain node ESM script (an iris LocalCluster job with a module task and its result, a
// zephyr count, a two-step marin experiment), (b) `tsc --noEmit` on a TypeScript file importing
// each package, (c) `npx marin run` on an experiment of that project.
//
// Third-party native dependencies (better-sqlite3, zstd-napi) install through prebuild-install,
// which on a machine with internet downloads a prebuilt binary from GitHub. These machines cannot
// reach it, so the test hands prebuild-install local prebuilds made of the workspace's own builds
// of the same versions (its `<pkg>_local_prebuilds` folder) instead of compiling them a second
// time; a version that differs from the workspace's finds none and compiles as before.
//
// Levanter's own addon is not compiled here (LEVANTER_NATIVE_SKIP_BUILD=1, which its install script
// honours): a user's install compiles the package's native/ folder with node-gyp, and the test
// checks instead that the tarball ships that folder byte for byte as the workspace has it, where
// `pnpm install` compiled the same files with the same toolchain and the kernel tests load the
// result. Compiling it a second time cost about 31 CPU-s and 50 s of this file's time, and the
// install script never fails the install, so nothing here could see a failed compile anyway.
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGES = ["iris", "levanter", "zephyr", "marin"] as const;
let scratch: string;
let project: string;

/**
 * The environment of a user's shell: no workspace source condition, no vitest leftovers
 * (`npm_config_jobs: max`: node-gyp compiles the native dependencies on every core).
 */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_OPTIONS: "",
    npm_config_audit: "false",
    npm_config_fund: "false",
    npm_config_update_notifier: "false",
    npm_config_jobs: "max",
  };
  for (const k of Object.keys(env)) if (k.startsWith("VITEST") || k === "TSX_TSCONFIG_PATH") delete env[k];
  return env;
}

function run(cmd: string, args: string[], cwd: string, timeoutMs = 300_000, extraEnv: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { cwd, env: { ...userEnv(), ...extraEnv }, encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) exited ${r.status ?? r.signal}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
  return r;
}

/**
 * prebuild-install's local prebuilds of the workspace's native dependencies, by package: the
 * environment that points prebuild-install at them (empty where the workspace has no build).
 */
function localPrebuilds(dir: string): NodeJS.ProcessEnv {
  mkdirSync(dir, { recursive: true });
  const env: NodeJS.ProcessEnv = {};
  const abi = `node-v${process.versions.modules}`;
  for (const { name, binary, runtime } of [
    { name: "better-sqlite3", binary: "build/Release/better_sqlite3.node", runtime: abi },
    { name: "zstd-napi", binary: "build/Release/binding.node", runtime: "napi-v8" },
  ]) {
    const pnpmDir = path.join(root, "node_modules", ".pnpm");
    const entry = readdirSync(pnpmDir).find((d) => d.startsWith(`${name}@`));
    if (!entry) continue;
    const pkgDir = path.join(pnpmDir, entry, "node_modules", name);
    if (!existsSync(path.join(pkgDir, binary))) continue;
    const version = (JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8")) as { version: string }).version;
    // The name prebuild-install looks for: {name}-v{version}-{runtime}-v{abi}-{platform}{libc}-{arch}.tar.gz
    run("tar", ["-czf", path.join(dir, `${name}-v${version}-${runtime}-${process.platform}-${process.arch}.tar.gz`), "-C", pkgDir, binary], root);
    env[`npm_config_${name.replace(/[^a-zA-Z0-9]/g, "_")}_local_prebuilds`] = dir;
  }
  return env;
}

beforeAll(() => {
  scratch = mkdtempSync(path.join(os.tmpdir(), "marin-pack-"));
  const tarballs = path.join(scratch, "tarballs");
  for (const p of PACKAGES) run("pnpm", ["pack", "--pack-destination", tarballs], path.join(root, "packages", p));
  project = path.join(scratch, "project");
  const files = readdirSync(tarballs).filter((f) => f.endsWith(".tgz"));
  expect(files).toHaveLength(4);
  run("mkdir", ["-p", project], scratch);
  writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }, null, 2));
  // The toolchain a TypeScript user brings, pinned to the workspace's versions.
  const ts = JSON.parse(spawnSync("node", ["-p", "JSON.stringify(require('./package.json').devDependencies)"], { cwd: root, encoding: "utf8" }).stdout) as Record<string, string>;
  run(
    "npm",
    ["install", "--no-audit", "--no-fund", "--prefer-offline", ...files.map((f) => path.join(tarballs, f)), `typescript@${ts.typescript}`, `@types/node@${ts["@types/node"]}`],
    project,
    600_000,
    { ...localPrebuilds(path.join(scratch, "prebuilds")), LEVANTER_NATIVE_SKIP_BUILD: "1" },
  );
}, 900_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("installed from tarballs", () => {
  it("loads built JavaScript only: no src/ in the packages", () => {
    for (const p of PACKAGES) {
      const dir = path.join(project, "node_modules", "@marin", p);
      expect(existsSync(path.join(dir, "dist", "index.js")), `${p} dist/index.js`).toBe(true);
      expect(existsSync(path.join(dir, "src")), `${p} ships no src/`).toBe(false);
    }
  });

  it("ships levanter's native/ folder as the workspace has it: every source node-gyp compiles, byte for byte", () => {
    const source = path.join(root, "packages", "levanter", "native");
    const installed = path.join(project, "node_modules", "@marin", "levanter", "native");
    /** Files under `dir` (relative), the build output left out. */
    const files = (dir: string): string[] =>
      readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
        .filter((f) => !f.startsWith(`build${path.sep}`))
        .sort();
    const shipped = files(installed);
    expect(shipped).toEqual(files(source));
    expect(shipped).toEqual(expect.arrayContaining(["binding.gyp", "install.cjs", "detectOpenblas.cjs"]));
    expect(shipped.filter((f) => f.endsWith(".cc")).length).toBeGreaterThan(0);
    for (const f of shipped) expect(readFileSync(path.join(installed, f)).equals(readFileSync(path.join(source, f))), f).toBe(true);
    // The install script ran and honoured the skip: nothing was compiled.
    expect(existsSync(path.join(installed, "build"))).toBe(false);
  });

  it("(a) a plain node ESM script runs an iris job, a zephyr count and a two-step marin experiment", () => {
    writeFileSync(path.join(project, "task.mjs"), `export async function main(args) { return { doubled: args.n * 2, index: Number(process.env.IRIS_TASK_INDEX) }; }\n`);
    // A task module in TypeScript: the built task runner has no loader until it meets one.
    writeFileSync(path.join(project, "typedTask.ts"), `export async function main(args: { word: string }): Promise<string> { return args.word.toUpperCase(); }\n`);
    writeFileSync(
      path.join(project, "steps.mjs"),
      [
        `import { defineStep, outputOf } from "@marin/marin";`,
        `import { writeFile, readFile } from "node:fs/promises";`,
        `import path from "node:path";`,
        `export const first = defineStep({ name: "first", config: { n: 3 }, fn: async ({ outputPath, config }) => { await writeFile(path.join(outputPath, "n.txt"), String(config.n)); return { n: config.n }; } });`,
        `export const second = defineStep({ name: "second", config: { from: outputOf(first) }, fn: async ({ outputPath, config }) => { const n = Number(await readFile(path.join(config.from, "n.txt"), "utf8")); await writeFile(path.join(outputPath, "sq.txt"), String(n * n)); return { sq: n * n }; } });`,
        `export default () => [first, second];`,
        ``,
      ].join("\n"),
    );
    writeFileSync(
      path.join(project, "main.mjs"),
      [
        `import { LocalCluster } from "@marin/iris";`,
        `import { fromList } from "@marin/zephyr";`,
        `import { runGraph, resolveGraph } from "@marin/marin";`,
        `import { fileURLToPath } from "node:url";`,
        `import steps from "./steps.mjs";`,
        `const cluster = await LocalCluster.start({ workers: 1, httpPort: 0 });`,
        `try {`,
        // The dashboard's page, its own modules and the vendored ones, straight from the install.
        `  const base = "http://" + cluster.controller.httpAddress;`,
        `  const codes = await Promise.all(["/", "/assets/app.mjs", "/assets/style.css", "/assets/vendor/preact.mjs", "/assets/vendor/hooks.mjs", "/assets/vendor/htm.mjs", "/assets/vendor/uPlot.mjs"].map(async (u) => { const r = await fetch(base + u); await r.arrayBuffer(); return r.status; }));`,
        `  console.log("DASHBOARD", codes.join(","));`,
        `  const job = await cluster.client.submit({ name: "pack-e2e", replicas: 2, entrypoint: { module: fileURLToPath(new URL("./task.mjs", import.meta.url)), export: "main", args: { n: 21 } } });`,
        `  const status = await job.wait();`,
        `  console.log("JOB", status.state, JSON.stringify(await job.results()));`,
        `  const typed = await cluster.client.submit({ name: "pack-e2e-ts", entrypoint: { module: fileURLToPath(new URL("./typedTask.ts", import.meta.url)), export: "main", args: { word: "typed" } } });`,
        `  console.log("TYPED", (await typed.wait()).state, JSON.stringify(await typed.results()));`,
        `} finally { await cluster.stop(); }`,
        `console.log("COUNT", await fromList([1, 2, 3, 4, 5], { shards: 2 }).filter((x) => x % 2 === 1).count());`,
        `const summary = await runGraph(resolveGraph(steps(), process.argv[2]));`,
        `console.log("MARIN", summary.steps.map((s) => s.name + ":" + s.outcome).join(","));`,
        ``,
      ].join("\n"),
    );
    const r = run(process.execPath, ["main.mjs", path.join(scratch, "out-a")], project);
    expect(r.stdout).toContain(`JOB SUCCEEDED [{"doubled":42,"index":0},{"doubled":42,"index":1}]`);
    expect(r.stdout).toContain(`TYPED SUCCEEDED ["TYPED"]`);
    expect(r.stdout).toContain("DASHBOARD 200,200,200,200,200,200,200");
    expect(r.stdout).toContain("COUNT 3");
    expect(r.stdout).toMatch(/MARIN first:\w+,second:\w+/);
  });

  it("(b) types resolve: tsc --noEmit on a TypeScript file importing each package", () => {
    writeFileSync(
      path.join(project, "types.ts"),
      [
        `import { LocalCluster, IrisClient, type JobStatus } from "@marin/iris";`,
        `import { fromList, readJsonl } from "@marin/zephyr";`,
        `import { trainLm } from "@marin/levanter";`,
        `import { defineStep } from "@marin/marin";`,
        `export const used = [LocalCluster, IrisClient, fromList, readJsonl, trainLm, defineStep];`,
        `export const n: Promise<number> = fromList([1, 2]).count();`,
        `export type S = JobStatus["state"];`,
        ``,
      ].join("\n"),
    );
    writeFileSync(
      path.join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { target: "ES2023", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, skipLibCheck: true, types: ["node"] },
        files: ["types.ts"],
      }),
    );
    const tsc = path.join(project, "node_modules", "typescript", "bin", "tsc");
    run(process.execPath, [tsc, "-p", "."], project);
    // The declarations are real types, not `any`: a wrong use is an error.
    writeFileSync(path.join(project, "wrong.ts"), `import { fromList } from "@marin/zephyr";\nexport const s: Promise<string> = fromList([1, 2]).count();\n`);
    writeFileSync(path.join(project, "tsconfig.wrong.json"), JSON.stringify({ extends: "./tsconfig.json", files: ["wrong.ts"] }));
    const wrong = spawnSync(process.execPath, [tsc, "-p", "tsconfig.wrong.json"], { cwd: project, env: userEnv(), encoding: "utf8" });
    expect(wrong.status).not.toBe(0);
    expect(wrong.stdout).toMatch(/wrong\.ts\(2,14\): error TS2322: Type 'Promise<number>' is not assignable to type 'Promise<string>'/);
  });

  it("(c) npx marin run runs a TypeScript experiment of that project", () => {
    writeFileSync(
      path.join(project, "exp.ts"),
      [
        `import { defineStep, outputOf } from "@marin/marin";`,
        `import { writeFile, readFile } from "node:fs/promises";`,
        `import path from "node:path";`,
        `const a = defineStep({ name: "a", config: { word: "hello" }, fn: async ({ outputPath, config }) => { await writeFile(path.join(outputPath, "w.txt"), config.word); } });`,
        `const b = defineStep({ name: "b", config: { from: outputOf(a) }, fn: async ({ outputPath, config }) => { const w: string = await readFile(path.join(config.from, "w.txt"), "utf8"); await writeFile(path.join(outputPath, "w.txt"), w.toUpperCase()); } });`,
        `export default () => [a, b];`,
        ``,
      ].join("\n"),
    );
    const prefix = path.join(scratch, "out-c");
    run("npx", ["--no-install", "marin", "run", "exp.ts", "--prefix", prefix], project);
    const found = spawnSync("sh", ["-c", `cat ${prefix}/b-*/w.txt`], { encoding: "utf8" });
    expect(found.stdout).toBe("HELLO");
  });
});
