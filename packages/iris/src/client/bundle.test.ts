// Bundle packing: deterministic ids, what a bundle holds, paths rewritten into it.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeWorkspace } from "../testkit/workspace.ts";
import { bundleFiles, packBundle, rebaseEntrypoint } from "./bundle.ts";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-bundle-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("packBundle", () => {
  it("gives the same id for the same files, whenever and wherever they were written", async () => {
    const files = { "a.ts": "export const a = 1;\n", "sub/b.txt": "b", "pnpm-lock.yaml": "lockfileVersion: '9.0'\n" };
    const one = makeWorkspace(path.join(dir, "one"), files);
    const two = makeWorkspace(path.join(dir, "two"), files);
    fs.utimesSync(path.join(two, "a.ts"), new Date(1000), new Date(1000));
    const [p1, p2] = [await packBundle(one), await packBundle(path.join(two, "sub"))];
    expect(p1.id).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(p1.id).toBe(`sha256:${createHash("sha256").update(p1.bytes).digest("hex")}`);
    // A directory inside the work tree bundles the whole work tree.
    expect(p2.root).toBe(two);
    expect(p2.id).toBe(p1.id);
    fs.writeFileSync(path.join(two, "a.ts"), "export const a = 2;\n");
    expect((await packBundle(two)).id).not.toBe(p1.id);
  });

  it("holds the tracked files as they are on disk and the lockfile, not untracked or deleted files", () => {
    const ws = makeWorkspace(path.join(dir, "ws"), { "keep.ts": "1", "gone.ts": "2", ".gitignore": "pnpm-lock.yaml\n" });
    fs.writeFileSync(path.join(ws, "untracked.ts"), "3");
    fs.writeFileSync(path.join(ws, "pnpm-lock.yaml"), "lockfileVersion: '9.0'\n");
    fs.rmSync(path.join(ws, "gone.ts"));
    expect(bundleFiles(ws)).toEqual([".gitignore", "keep.ts", "pnpm-lock.yaml"]);
  });

  it("refuses a directory outside any git work tree, naming it", async () => {
    const plain = path.join(dir, "plain");
    fs.mkdirSync(plain);
    await expect(packBundle(plain)).rejects.toMatchObject({ code: "FAILED_PRECONDITION", message: expect.stringContaining(plain) });
  });
});

describe("rebaseEntrypoint", () => {
  it("rewrites modules and cwds under the root into the bundle and leaves the rest", () => {
    expect(rebaseEntrypoint({ module: "/r/jobs/a.ts", export: "main" }, "/r")).toEqual({ entrypoint: { module: "jobs/a.ts", export: "main" }, changed: true });
    expect(rebaseEntrypoint({ module: "file:///r/a.ts", export: "main" }, "/r").entrypoint).toEqual({ module: "a.ts", export: "main" });
    expect(rebaseEntrypoint({ module: "/elsewhere/a.ts", export: "main" }, "/r")).toEqual({ entrypoint: { module: "/elsewhere/a.ts", export: "main" }, changed: false });
    expect(rebaseEntrypoint({ command: ["ls"], cwd: "/r" }, "/r").entrypoint).toEqual({ command: ["ls"], cwd: "." });
    expect(rebaseEntrypoint({ command: ["ls"], cwd: "/r/x/y" }, "/r").entrypoint).toEqual({ command: ["ls"], cwd: "x/y" });
    expect(rebaseEntrypoint({ command: ["ls"] }, "/r")).toEqual({ entrypoint: { command: ["ls"] }, changed: false });
  });
});
