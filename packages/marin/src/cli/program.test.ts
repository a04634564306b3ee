// The marin CLI's argument checks, run in-process.
import { afterEach, describe, expect, it, vi } from "vitest";
import { runCli } from "./program.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("marin CLI arguments", () => {
  it("--max-concurrent 0 is refused with a message naming the option", async () => {
    const err: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      err.push(String(chunk));
      return true;
    });
    for (const bad of ["0", "-2", "1.5", "many"]) {
      err.length = 0;
      const code = await runCli(["run", "no-such-script.ts", "--max-concurrent", bad]);
      expect(code).not.toBe(0);
      expect(err.join("")).toMatch(new RegExp(`--max-concurrent.*'${bad.replace(".", "\\.")}'.*expected a positive integer, got ${bad.replace(".", "\\.")}`, "s"));
    }
  });
});
