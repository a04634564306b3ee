#!/usr/bin/env node
// Builds the optional GPU backend: runs @tensorflow/tfjs-node-gpu's own install script (it
// downloads libtensorflow for CUDA), which `pnpm install` skips on purpose. `pnpm --filter
// @marin/levanter gpu:install` from the workspace; needs a machine with CUDA and internet.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const NAME = "@tensorflow/tfjs-node-gpu";
let dir;
try {
  dir = path.dirname(createRequire(import.meta.url).resolve(`${NAME}/package.json`));
} catch {
  process.stderr.write(`levanter: ${NAME} is not installed (npm removes an optional dependency whose build failed); install it with: npm install ${NAME}@4.22.0\n`);
  process.exit(1);
}
const script = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")).scripts?.install;
if (typeof script !== "string") {
  process.stderr.write(`levanter: ${NAME} in ${dir} has no install script\n`);
  process.exit(1);
}
process.stdout.write(`levanter: building ${NAME} in ${dir}: ${script}\n`);
const r = spawnSync("sh", ["-c", script], { cwd: dir, stdio: "inherit" });
if (r.status !== 0) {
  process.stderr.write(
    `levanter: ${NAME}'s build failed (exit ${r.status ?? r.signal}); it needs internet access and CUDA. Training keeps using the native or wasm CPU backend.\n`,
  );
  process.exit(1);
}
process.stdout.write(`levanter: ${NAME} is built; selectBackend() now picks it first (LEVANTER_BACKEND=tensorflow-gpu forces it)\n`);
