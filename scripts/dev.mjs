#!/usr/bin/env node
// Runs a workspace TypeScript program from source: `node scripts/dev.mjs FILE.ts [args…]` (what
// `pnpm iris|levanter|marin|bench` do). It starts FILE under iris's source loader
// (packages/iris/src/sourceLoader/register.mjs) with the `@marin/source` export
// condition in NODE_OPTIONS, so every @marin/* import, in this process and in every process or
// thread it starts (iris task runners, zephyr threads, spawned CLIs), loads src/*.ts, never a
// possibly stale dist/. Signals reach the child as they would the program itself.
import { spawn } from "node:child_process";

const [file, ...args] = process.argv.slice(2);
if (!file) {
  process.stderr.write("usage: node scripts/dev.mjs FILE.ts [args…]\n");
  process.exit(2);
}
const CONDITION = "--conditions=@marin/source";
const inherited = process.env.NODE_OPTIONS ?? "";
const nodeOptions = inherited.includes(CONDITION) ? inherited : `${CONDITION} ${inherited}`.trim();
const loader = new URL("../packages/iris/src/sourceLoader/register.mjs", import.meta.url).href;
const child = spawn(process.execPath, ["--import", loader, file, ...args], {
  stdio: "inherit",
  env: { ...process.env, NODE_OPTIONS: nodeOptions },
});
// Ctrl-C reaches the whole foreground group (the child too): wait for the child to finish with it.
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => {
    if (sig !== "SIGINT") child.kill(sig);
  });
}
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else process.exit(code ?? 1);
});
