// scripts/buildPackage.mjs in a scratch workspace of two packages (b depends on a): it builds, then
// skips a build whose inputs are unchanged, and rebuilds when a source file, dist/ itself, a
// dependency's build or --force says so.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let root: string;

function write(rel: string, text: string): void {
  mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  writeFileSync(path.join(root, rel), text);
}

function build(pkg: string, ...args: string[]): { rebuilt: boolean; out: string } {
  const r = spawnSync(process.execPath, [path.join(root, "scripts", "buildPackage.mjs"), ...args], {
    cwd: path.join(root, "packages", pkg),
    encoding: "utf8",
    env: { ...process.env, MARIN_BUILD_FORCE: "" },
  });
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  return { rebuilt: !/is up to date/.test(r.stdout), out: r.stdout };
}

const mtime = (rel: string): number => statSync(path.join(root, rel)).mtimeMs;

beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "build-package-"));
  symlinkSync(path.join(repo, "node_modules"), path.join(root, "node_modules"));
  mkdirSync(path.join(root, "scripts"));
  copyFileSync(path.join(repo, "scripts", "buildPackage.mjs"), path.join(root, "scripts", "buildPackage.mjs"));
  copyFileSync(path.join(repo, "tsconfig.base.json"), path.join(root, "tsconfig.base.json"));
  write("pnpm-lock.yaml", "lockfileVersion: '9.0'\n");
  const tsconfig = JSON.stringify({
    extends: "../../tsconfig.base.json",
    compilerOptions: { types: [], rootDir: "src", outDir: "dist", composite: false, incremental: false, declaration: true, emitDeclarationOnly: false, customConditions: [] },
    include: ["src/**/*.ts"],
  });
  write("packages/a/package.json", JSON.stringify({ name: "@marin/a", type: "module" }));
  write("packages/a/tsconfig.build.json", tsconfig);
  write("packages/a/src/index.ts", `export const a: number = 1;\n`);
  write("packages/a/src/data.json", `{"x":1}\n`);
  write("packages/b/package.json", JSON.stringify({ name: "@marin/b", type: "module", dependencies: { "@marin/a": "workspace:*" } }));
  write("packages/b/tsconfig.build.json", tsconfig);
  write("packages/b/src/index.ts", `export const b: string = "b";\n`);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("buildPackage", () => {
  it("builds, then skips a build whose inputs did not change", () => {
    expect(build("a").rebuilt).toBe(true);
    expect(readFileSync(path.join(root, "packages/a/dist/index.js"), "utf8")).toContain("export const a = 1;");
    expect(readFileSync(path.join(root, "packages/a/dist/data.json"), "utf8")).toBe(`{"x":1}\n`);
    expect(build("b").rebuilt).toBe(true);
    const before = mtime("packages/a/dist/index.js");
    const again = build("a");
    expect(again.rebuilt).toBe(false);
    expect(again.out).toContain("a/dist is up to date");
    expect(mtime("packages/a/dist/index.js")).toBe(before);
    expect(build("b").rebuilt).toBe(false);
  });

  it("rebuilds after a source file changed, and its dependents after it", () => {
    write("packages/a/src/index.ts", `export const a: number = 2;\n`);
    expect(build("a").rebuilt).toBe(true);
    expect(readFileSync(path.join(root, "packages/a/dist/index.js"), "utf8")).toContain("export const a = 2;");
    expect(build("b").rebuilt).toBe(true);
    expect(build("b").rebuilt).toBe(false);
  });

  it("rebuilds when dist/ lost a file, and on --force", () => {
    rmSync(path.join(root, "packages/a/dist/data.json"));
    expect(build("a").rebuilt).toBe(true);
    expect(readFileSync(path.join(root, "packages/a/dist/data.json"), "utf8")).toBe(`{"x":1}\n`);
    expect(build("a").rebuilt).toBe(false);
    expect(build("a", "--force").rebuilt).toBe(true);
  });
});
