// The workspace source loader (register.mjs + hooks.mjs) in real child processes: TypeScript's
// import spellings, type stripping with esbuild, the on-disk cache, source-mapped stack traces, and
// the shapes it refuses (CommonJS packages, .cts, .tsx) with a message that says why.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const REGISTER = new URL("./register.mjs", import.meta.url).href;
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "iris-source-loader-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function write(files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
}

/** Runs `node --import register.mjs <file>` with its cache in `<dir>/tmp`. */
function run(file: string) {
  const env = { ...process.env, TMPDIR: path.join(dir, "tmp"), NODE_OPTIONS: "" };
  mkdirSync(env.TMPDIR, { recursive: true });
  return spawnSync(process.execPath, ["--import", REGISTER, path.join(dir, file)], { env, encoding: "utf8", timeout: 30_000 });
}

function cacheFiles(): string[] {
  const tmp = path.join(dir, "tmp");
  return readdirSync(tmp).flatMap((d) => readdirSync(path.join(tmp, d)).map((f) => `${d}/${f}`));
}

describe("the workspace source loader", () => {
  it("runs TypeScript with every import spelling tsc accepts, and caches what it compiled", () => {
    write({
      "main.ts": [
        `import { b } from "./b.ts";`,
        `import { c } from "./c.js";`,
        `import { d } from "./four";`,
        `import { e } from "./e";`,
        `import type { Shape } from "./types.ts";`,
        `enum Colour { Red = 1, Green }`,
        `const s: Shape = { n: Colour.Green };`,
        `console.log(JSON.stringify([b, c, d, e, s.n]));`,
      ].join("\n"),
      "b.ts": `export const b: string = "b";`,
      "c.ts": `const double = (x: number): number => x * 2;\nexport const c = double(3);`,
      "four.ts": `export const d = 4 satisfies number;`,
      "e/index.ts": `export const e = "e" as const;`,
      "types.ts": `export interface Shape { n: number }`,
    });
    const first = run("main.ts");
    expect(first.stderr).toBe("");
    expect(first.status).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual(["b", 6, 4, "e", 2]);
    const cached = cacheFiles();
    // main, b, c, four, e/index: types.ts is imported for a type only, so never loaded.
    expect(cached.filter((f) => f.endsWith(".js"))).toHaveLength(5);
    const again = run("main.ts");
    expect(again.stdout).toBe(first.stdout);
    expect(cacheFiles()).toEqual(cached);
  });

  it("uses no cache folder that others may write to", () => {
    write({ "main.ts": `const n: number = 7;\nconsole.log(n);` });
    const shared = path.join(dir, "tmp", `marin-source-loader-${process.getuid?.() ?? "user"}`);
    mkdirSync(shared, { recursive: true });
    chmodSync(shared, 0o777);
    const r = run("main.ts");
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("7");
    expect(readdirSync(shared)).toEqual([]);
  });

  it("names the TypeScript line in a stack trace", () => {
    write({ "boom.ts": [`type T = { a: number };`, ``, `function f(t: T): never {`, `  throw new Error("boom " + t.a);`, `}`, `f({ a: 1 });`].join("\n") });
    const r = run("boom.ts");
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("boom 1");
    expect(r.stderr).toMatch(/boom\.ts:4:\d+/);
  });

  it("keeps Node's own errors for a module that is not there", () => {
    write({ "missing.ts": `import "./nothing.js";` });
    const r = run("missing.ts");
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("ERR_MODULE_NOT_FOUND");
    expect(r.stderr).toContain("nothing.js");
  });

  it("refuses CommonJS TypeScript and JSX, naming the file and tsx", () => {
    write({
      "cjs/package.json": JSON.stringify({ type: "commonjs" }),
      "cjs/x.ts": `export const x = 1;`,
      "jsx.ts": `import "./view.tsx";`,
      "view.tsx": `export const v = <div />;`,
      "fromCjs.ts": `import "./cjs/x.ts";`,
    });
    const cjs = run("fromCjs.ts");
    expect(cjs.status).not.toBe(0);
    expect(cjs.stderr).toContain(`${path.join(dir, "cjs", "x.ts")}: its package.json says "type": "commonjs"`);
    expect(cjs.stderr).toContain("run this file under tsx");
    const jsx = run("jsx.ts");
    expect(jsx.status).not.toBe(0);
    expect(jsx.stderr).toContain(`${path.join(dir, "view.tsx")}: the workspace source loader runs ES-module TypeScript (.ts, .mts) only`);
  });

  it("reports a syntax error with the file and line", () => {
    write({ "bad.ts": `const a = 1;\nconst b = ;\n` });
    const r = run("bad.ts");
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("bad.ts:2");
  });
});
