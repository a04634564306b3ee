import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeFileAtomic, writeFileAtomicSync } from "./atomicWrite.ts";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "atomic-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("writeFileAtomic", () => {
  for (const durable of [false, true]) {
    it(`replaces a file's contents and leaves no temporary file (durable: ${durable})`, async () => {
      const file = path.join(dir, "a.json");
      fs.writeFileSync(file, "old");
      await writeFileAtomic(file, "new", { durable });
      writeFileAtomicSync(path.join(dir, "b.bin"), new Uint8Array([1, 2]), { durable });
      expect(fs.readFileSync(file, "utf8")).toBe("new");
      expect([...fs.readFileSync(path.join(dir, "b.bin"))]).toEqual([1, 2]);
      expect(fs.readdirSync(dir).sort()).toEqual(["a.json", "b.bin"]);
    });
  }

  it("creates the directory only when asked, and sets the mode", async () => {
    const file = path.join(dir, "sub", "deep", "c.txt");
    await expect(writeFileAtomic(file, "x", { durable: false })).rejects.toThrow(/ENOENT/);
    await writeFileAtomic(file, "x", { durable: true, mkdir: true, mode: 0o600 });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    writeFileAtomicSync(path.join(dir, "s", "d.txt"), "y", { durable: false, mkdir: true, mode: 0o640 });
    expect(fs.statSync(path.join(dir, "s", "d.txt")).mode & 0o777).toBe(0o640);
  });

  it("removes its temporary file when the rename fails", async () => {
    const target = path.join(dir, "taken");
    fs.mkdirSync(path.join(target, "inside"), { recursive: true });
    await expect(writeFileAtomic(target, "x", { durable: false })).rejects.toThrow();
    expect(() => writeFileAtomicSync(target, "x", { durable: true })).toThrow();
    expect(fs.readdirSync(dir)).toEqual(["taken"]);
  });
});
