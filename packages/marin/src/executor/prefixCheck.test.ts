// The prefix check's messages (EROFS and EACCES cannot be produced as root here) and the real cases it refuses.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MarinError } from "../errors.ts";
import { ensurePrefix, prefixProblem } from "./prefixCheck.ts";

describe("prefix check", () => {
  it("says read-only or permission denied, naming the path", () => {
    expect(prefixProblem("/mnt/ro/out", "/mnt/ro/out", "EROFS")).toBe("--prefix /mnt/ro/out: read-only file system; choose a writable folder");
    expect(prefixProblem("/srv/x/out", "/srv/x", "EACCES")).toBe("--prefix /srv/x/out (at /srv/x): permission denied (EACCES); choose a folder you can write to");
    expect(prefixProblem("/proc/x", "/proc/x", "ENOENT")).toMatch(/^--prefix \/proc\/x: a directory cannot be created here/);
  });

  it("creates a missing prefix level by level, accepts an existing one, refuses /proc at once", async () => {
    const tmp = await fs.mkdtemp(path.join(os.tmpdir(), "marin-prefix-"));
    try {
      const p = path.join(tmp, "a", "b");
      await ensurePrefix(p);
      expect((await fs.stat(p)).isDirectory()).toBe(true);
      await ensurePrefix(p);
      const t0 = Date.now();
      const err = await ensurePrefix("/proc/marin-unit/x").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MarinError);
      expect((err as MarinError).code).toBe("INVALID_CONFIG");
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      await fs.rm(tmp, { recursive: true, force: true });
    }
  });
});
