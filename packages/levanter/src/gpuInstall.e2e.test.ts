// The GPU backend is one command away: `pnpm --filter @marin/levanter gpu:install` runs
// @tensorflow/tfjs-node-gpu's own build. Here (no internet) the build starts and fails on its
// download; the command says so and exits non-zero. With internet and CUDA it would succeed.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SCRIPT = fileURLToPath(new URL("../scripts/installGpu.mjs", import.meta.url));

describe("gpu:install", () => {
  it("runs the GPU package's own build and reports how it ended", () => {
    const r = spawnSync(process.execPath, [SCRIPT], { encoding: "utf8", timeout: 120_000 });
    const out = `${r.stdout}${r.stderr}`;
    expect(out).toMatch(/levanter: building @tensorflow\/tfjs-node-gpu in .*: node scripts\/install\.js gpu download/);
    // The package's install script itself ran: it announces its download.
    expect(out).toContain("Downloading libtensorflow");
    if (r.status === 0) expect(out).toContain("is built");
    else expect(out).toContain("build failed");
  });
});
