// Controller databases under abuse, through the real `iris` CLI: an emptied or damaged file is
// refused with an error naming it, and `iris db backup` makes a copy a controller starts on.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { Controller } from "./controller.ts";
import { openDb } from "./db.ts";
import { SOURCE_LOADER } from "../process/sourceLoader.ts";

const MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "cli", "main.ts");

/** Runs `iris …` to its end; a daemon that starts is stopped with SIGTERM once it says it listens. */
function iris(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", SOURCE_LOADER, MAIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      if (/listening on/.test(stdout)) child.kill("SIGTERM");
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-db-e2e-"));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("controller databases", () => {
  it("iris controller refuses a 0-byte database file, naming it, and exits 1", async () => {
    const file = path.join(dir, "empty.sqlite");
    fs.writeFileSync(file, "");
    const r = await iris(["controller", "--port", "0", "--host", "127.0.0.1", "--db", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`DATA_LOSS: database ${file} is empty (0 bytes)`);
    expect(r.stdout).not.toMatch(/listening/);
    expect(fs.statSync(file).size).toBe(0);
  }, 60_000);

  it("iris controller creates a new database only where none exists", async () => {
    const file = path.join(dir, "new", "fresh.sqlite");
    const r = await iris(["controller", "--port", "0", "--host", "127.0.0.1", "--db", file]);
    expect(r.stdout).toMatch(/listening on/);
    expect(fs.statSync(file).size).toBeGreaterThan(0);
  }, 60_000);

  it("a database with a zeroed page is refused at start with an error naming the file", async () => {
    const file = path.join(dir, "zeroed.sqlite");
    const db = openDb(file);
    const ins = db.prepare("INSERT INTO jobs (instance_id, name, latest, spec, state, submitted_at_ms) VALUES (?, ?, 1, ?, 'SUCCEEDED', 0)");
    for (let i = 0; i < 400; i++) ins.run(`i${i}`, `/u/job${i}`, JSON.stringify({ pad: "x".repeat(300) }));
    db.pragma("wal_checkpoint(TRUNCATE)");
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    const pages = db.pragma("page_count", { simple: true }) as number;
    db.close();
    expect(pages).toBeGreaterThan(10);
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, Buffer.alloc(pageSize), 0, pageSize, pageSize * Math.floor(pages / 2));
    fs.closeSync(fd);
    await expect(Controller.start({ port: 0, host: "127.0.0.1", dbPath: file })).rejects.toThrow(`database ${file}`);
    const r = await iris(["controller", "--port", "0", "--host", "127.0.0.1", "--db", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^DATA_LOSS: database ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`, "m"));
  }, 60_000);

  it("iris db backup copies a running controller's database; a controller on the copy sees the jobs", async () => {
    const file = path.join(dir, "live.sqlite");
    const out = path.join(dir, "backup.sqlite");
    const controller = await Controller.start({ port: 0, host: "127.0.0.1", dbPath: file });
    const client = IrisClient.connect(controller.address, { user: "ops" });
    try {
      for (const name of ["a", "b", "c"]) await client.submit({ name, entrypoint: { command: ["true"] }, replicas: 2 });
      const r = await iris(["db", "backup", "--db", file, "--out", out]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`backed up ${file} to ${out}`);
      const again = await iris(["db", "backup", "--db", file, "--out", out]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain(`ALREADY_EXISTS: backup ${out} already exists`);
      const missing = await iris(["db", "backup", "--db", path.join(dir, "nope.sqlite"), "--out", path.join(dir, "x.sqlite")]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`NOT_FOUND: database ${path.join(dir, "nope.sqlite")} does not exist`);
    } finally {
      client.close();
      await controller.stop();
    }
    const restored = await Controller.start({ port: 0, host: "127.0.0.1", dbPath: out });
    const c2 = IrisClient.connect(restored.address, { user: "ops" });
    try {
      const jobs = await c2.list({ prefix: "/ops" });
      expect(jobs.map((j) => j.name).sort()).toEqual(["/ops/a", "/ops/b", "/ops/c"]);
    } finally {
      c2.close();
      await restored.stop();
    }
  }, 90_000);
});
