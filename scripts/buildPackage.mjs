#!/usr/bin/env node
// Builds one workspace package to JavaScript + .d.ts in its dist/: `node ../../scripts/buildPackage.mjs`
// from the package folder (its `build` script). A clean build every time (no stale files from a
// removed source), then the non-TypeScript files the code loads at run time (.mjs, .wat, .json
// .css, .png under src/) are copied beside the compiled JS, keeping their relative paths.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const pkgDir = process.cwd();
const dist = path.join(pkgDir, "dist");
const src = path.join(pkgDir, "src");
const config = path.join(pkgDir, "tsconfig.build.json");
if (!existsSync(config)) {
  process.stderr.write(`buildPackage: no tsconfig.build.json in ${pkgDir}\n`);
  process.exit(2);
}
rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const r = spawnSync(process.execPath, [tsc, "-p", config], { stdio: "inherit" });
if (r.status !== 0) process.exit(r.status ?? 1);

const ASSET = /\.(mjs|cjs|wat|json|css|png)$/;
const SKIP_DIR = new Set(["node_modules", "__snapshots__"]);
function copyAssets(dir) {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) {
      if (!SKIP_DIR.has(name)) copyAssets(full);
    } else if (ASSET.test(name)) {
      cpSync(full, path.join(dist, path.relative(src, full)));
    }
  }
}
copyAssets(src);
