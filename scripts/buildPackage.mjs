#!/usr/bin/env node
// Builds one workspace package to JavaScript + .d.ts in its dist/: `node ../../scripts/buildPackage.mjs`
// from the package folder (its `build` and `prepack` scripts). A clean build (no stale files from a
// removed source), then the non-TypeScript files the code loads at run time (.mjs, .wat, .json
// .css, .png under src/) are copied beside the compiled JS, keeping their relative paths.
//
// The build is skipped when nothing it reads has changed since the last one: .tsbuild/dist-stamp.json
// records a hash of its inputs (every file under src/, the package's package.json and
// tsconfig.build.json, tsconfig.base.json, the lockfile, TypeScript's version, this script, and the
// stamps of the workspace packages it depends on, whose declarations it compiles against) and the
// list of files it wrote; a stamp that differs in either rebuilds. So `pnpm pack` after
// `pnpm install` (whose `prepare` built everything) packs the same dist/ without compiling it
// again. `--force` (or MARIN_BUILD_FORCE=1) always rebuilds.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = process.cwd();
const dist = path.join(pkgDir, "dist");
const src = path.join(pkgDir, "src");
const config = path.join(pkgDir, "tsconfig.build.json");
if (!existsSync(config)) {
  process.stderr.write(`buildPackage: no tsconfig.build.json in ${pkgDir}\n`);
  process.exit(2);
}
const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const stampFile = path.join(pkgDir, ".tsbuild", "dist-stamp.json");
const force = process.argv.includes("--force") || process.env.MARIN_BUILD_FORCE === "1";

/** Every file under `dir` (sorted, relative to it), skipping node_modules. */
function filesUnder(dir, rel = "") {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((e) => (e.isDirectory() ? (e.name === "node_modules" ? [] : filesUnder(path.join(dir, e.name), path.join(rel, e.name))) : [path.join(rel, e.name)]));
}

function readStamp(dir) {
  try {
    return JSON.parse(readFileSync(path.join(dir, ".tsbuild", "dist-stamp.json"), "utf8"));
  } catch {
    return undefined;
  }
}

function inputsHash() {
  const h = createHash("sha256");
  const add = (label, data) => h.update(`${label}\0${data.length}\0`).update(data);
  add("builder", readFileSync(fileURLToPath(import.meta.url)));
  add("typescript", require("typescript/package.json").version);
  for (const f of [path.join(pkgDir, "package.json"), config, path.join(root, "tsconfig.base.json"), path.join(root, "pnpm-lock.yaml")]) {
    add(path.relative(root, f), existsSync(f) ? readFileSync(f) : "");
  }
  for (const f of filesUnder(src)) add(`src/${f}`, readFileSync(path.join(src, f)));
  const pkg = JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8"));
  for (const dep of Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies }).sort()) {
    if (!dep.startsWith("@marin/")) continue;
    add(dep, readStamp(path.join(root, "packages", dep.slice("@marin/".length)))?.inputs ?? "unbuilt");
  }
  return h.digest("hex");
}

/** The files in dist/ with their sizes: a dist/ that was changed or removed is rebuilt. */
function outputsHash() {
  const h = createHash("sha256");
  for (const f of filesUnder(dist)) h.update(`${f}\0${statSync(path.join(dist, f)).size}\n`);
  return h.digest("hex");
}

const inputs = inputsHash();
const previous = readStamp(pkgDir);
if (!force && previous?.inputs === inputs && previous.outputs === outputsHash()) {
  process.stdout.write(`buildPackage: ${path.basename(pkgDir)}/dist is up to date (nothing it is built from changed); not rebuilt\n`);
  process.exit(0);
}
rmSync(stampFile, { force: true });
rmSync(dist, { recursive: true, force: true });
const tsc = require.resolve("typescript/bin/tsc");
const r = spawnSync(process.execPath, [tsc, "-p", config], { stdio: "inherit" });
if (r.status !== 0) process.exit(r.status ?? 1);

const ASSET = /\.(mjs|cjs|wat|json|css|png)$/;
for (const f of filesUnder(src)) {
  if (ASSET.test(f) && !f.split(path.sep).includes("__snapshots__")) cpSync(path.join(src, f), path.join(dist, f));
}

mkdirSync(path.dirname(stampFile), { recursive: true });
writeFileSync(stampFile, JSON.stringify({ inputs, outputs: outputsHash() }) + "\n");
