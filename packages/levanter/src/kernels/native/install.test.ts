// native/install.cjs (the package's `install` script) never fails an install: when the addon
// cannot build it prints one line and exits 0, so training falls back to wasm.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const nativeDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../native");

function runInstall(dir: string, env: Record<string, string>): { status: number | null; lines: string[] } {
  const r = spawnSync(process.execPath, [path.join(dir, "install.cjs")], { cwd: dir, encoding: "utf8", env: { ...process.env, ...env }, timeout: 120_000 });
  return { status: r.status, lines: `${r.stdout}${r.stderr}`.trim().split("\n").filter(Boolean) };
}

describe("native/install.cjs", () => {
  it("prints one line and exits 0 when the build is skipped", () => {
    const r = runInstall(nativeDir, { LEVANTER_NATIVE_SKIP_BUILD: "1" });
    expect(r.status).toBe(0);
    expect(r.lines).toEqual(["@marin/levanter: native kernels not built (LEVANTER_NATIVE_SKIP_BUILD=1); training will use wasm"]);
  });

  it("prints one line and exits 0 when the build fails (no C++ compiler, outside the package)", () => {
    // A copy outside the package (no node-addon-api there) with a compiler that always fails:
    // the real addon in native/build is left alone.
    const dir = mkdtempSync(path.join(os.tmpdir(), "lev-native-"));
    try {
      cpSync(nativeDir, dir, { recursive: true, filter: (src) => !src.includes(`${path.sep}build`) });
      const r = runInstall(dir, { CXX: "false", CC: "false", LEVANTER_NATIVE_OPENBLAS: "0" });
      expect(r.status).toBe(0);
      expect(r.lines).toHaveLength(1);
      expect(r.lines[0]).toMatch(/^@marin\/levanter: native kernels not built \(.+\); training will use wasm$/);
      expect(existsSync(path.join(dir, "build", "Release", "levanter_native.node"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
