// Command-line path resolution: INIT_CWD under pnpm's root scripts, else the cwd.
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { invocationDir, resolveCliPath } from "./paths.ts";

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});

describe("command-line paths", () => {
  it("resolves command-line paths against where pnpm was invoked (INIT_CWD) for root scripts, else the cwd", () => {
    const root = "/repo";
    const pnpmRoot = { npm_lifecycle_event: "marin", INIT_CWD: "/somewhere/else" };
    // `pnpm marin …` from a subfolder: pnpm runs the root script in the root; the caller is INIT_CWD.
    expect(invocationDir(pnpmRoot, "/repo", root)).toBe("/somewhere/else");
    // Some package's own script (cwd = that package): INIT_CWD is not where paths are meant from.
    expect(invocationDir(pnpmRoot, "/repo/packages/foo", root)).toBe("/repo/packages/foo");
    // Not in a script at all.
    expect(invocationDir({ INIT_CWD: "/somewhere/else" }, "/repo", root)).toBe("/repo");
    // No workspace found: never INIT_CWD.
    expect(invocationDir(pnpmRoot, "/repo", undefined)).toBe("/repo");
    delete process.env.npm_lifecycle_event;
    expect(resolveCliPath("exp.ts")).toBe(path.join(process.cwd(), "exp.ts"));
    expect(resolveCliPath("/abs/exp.ts")).toBe("/abs/exp.ts");
  });
});
