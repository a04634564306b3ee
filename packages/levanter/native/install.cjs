// `install` script of @marin/levanter: builds the native kernel addon with node-gyp. It never
// fails the install: without a toolchain (or on any build error) it prints one line and exits 0,
// and levanter then trains on the wasm backend. LEVANTER_NATIVE_SKIP_BUILD=1 skips the build.
"use strict";
const { spawnSync } = require("node:child_process");
const { existsSync } = require("node:fs");
const path = require("node:path");

const here = __dirname;

function nodeGyp() {
  const candidates = [];
  try {
    candidates.push(require.resolve("node-gyp/bin/node-gyp.js", { paths: [here] }));
  } catch {
    /* not a dependency here */
  }
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  const prefix = path.dirname(path.dirname(process.execPath));
  candidates.push(path.join(prefix, "lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"));
  candidates.push(path.join(prefix, "lib/node_modules/pnpm/dist/node_modules/node-gyp/bin/node-gyp.js"));
  return candidates.find((c) => c && existsSync(c));
}

function main() {
  if (process.env.LEVANTER_NATIVE_SKIP_BUILD === "1") {
    console.log("@marin/levanter: native kernels not built (LEVANTER_NATIVE_SKIP_BUILD=1); training will use wasm");
    return;
  }
  const gyp = nodeGyp();
  if (!gyp) {
    console.log("@marin/levanter: native kernels not built (node-gyp not found); training will use wasm");
    return;
  }
  const args = [gyp, "rebuild"];
  // Offline machines: build against the headers of the running Node when they are installed.
  const prefix = path.dirname(path.dirname(process.execPath));
  if (existsSync(path.join(prefix, "include/node/node_api.h"))) args.push(`--nodedir=${prefix}`);
  const r = spawnSync(process.execPath, args, { cwd: here, encoding: "utf8" });
  if (r.status === 0 && existsSync(path.join(here, "build/Release/levanter_native.node"))) {
    console.log("@marin/levanter: native kernels built (native/build/Release/levanter_native.node)");
    return;
  }
  const out = `${r.stderr ?? ""}${r.stdout ?? ""}`.split("\n").filter((l) => /error|ERR!/i.test(l));
  const why = (out[0] ?? r.error?.message ?? `exit ${r.status}`).trim().slice(0, 200);
  console.log(`@marin/levanter: native kernels not built (${why}); training will use wasm`);
}

try {
  main();
} catch (e) {
  console.log(`@marin/levanter: native kernels not built (${String(e && e.message).slice(0, 200)}); training will use wasm`);
}
process.exitCode = 0;
