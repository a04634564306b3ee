// Runs the workspace's TypeScript source in Node: `node --import @marin/iris/source-loader file.ts`.
// It registers hooks.mjs: ES-module TypeScript with its types blanked out (amaro, the stripper
// Node itself ships), cached on disk. The workspace's processes that run from source (task
// runners, workers, CLIs, zephyr threads, the tests' children) start under it instead of tsx.
// It does only what the workspace's code needs (ES modules, `.ts` imports) and, because blanking
// keeps every line and column where it was, needs no source maps: a process starts with about
// two thirds of the CPU it took under tsx. A user's module of another shape (CommonJS, JSX) runs under
// tsx, as built iris runs it (see moduleLoader.ts).
import { register } from "node:module";

const KEY = Symbol.for("@marin/iris/source-loader");
if (!globalThis[KEY]) {
  globalThis[KEY] = true;
  register("./hooks.mjs", import.meta.url);
}
