// Pruning the worker's bundle cache: real directories, real processes as holders.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { WorkerControlServiceClient } from "../internal/rpc.ts";
import { BundleCache } from "./bundleCache.ts";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-bundles-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

// Pruning never calls the controller.
const noClient = {} as WorkerControlServiceClient;
const MINUTE = 60_000;

// A built bundle whose last use was `ageMs` before `now`.
function bundle(n: number, now: number, ageMs: number): string {
  const d = path.join(dir, n.toString(16).padStart(64, "0"));
  fs.mkdirSync(path.join(d, "src"), { recursive: true });
  fs.writeFileSync(path.join(d, "src", "task.mjs"), "export const x = 1;\n");
  const marker = path.join(d, ".iris-bundle-built");
  fs.writeFileSync(marker, "");
  const t = new Date(now - ageMs);
  fs.utimesSync(marker, t, t);
  return d;
}

// The pid of a process that has exited.
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(r.stdout);
}

describe("BundleCache.prune", () => {
  it("keeps the most recently used, removes older ones unless a live process holds them or they were used in the last minute", () => {
    const now = Date.now();
    const newest = bundle(1, now, 10 * MINUTE);
    const second = bundle(2, now, 20 * MINUTE);
    const heldLive = bundle(3, now, 30 * MINUTE);
    const heldDead = bundle(4, now, 40 * MINUTE);
    const oldest = bundle(5, now, 50 * MINUTE);
    const cache = new BundleCache(dir, noClient, { keep: 2 });
    cache.hold(heldLive, "attempt-a"); // this process: alive
    cache.hold(heldDead, "attempt-b", deadPid());
    // Not built (no marker), and a removal a crash interrupted: neither is a bundle to keep.
    fs.mkdirSync(path.join(dir, `${"f".repeat(64)}`));
    fs.mkdirSync(path.join(dir, `${"e".repeat(64)}.0a1b2c3d.trash`));

    const removed = cache.prune(now);
    expect(removed.sort()).toEqual([heldDead, oldest].sort());
    for (const d of [newest, second, heldLive]) expect(fs.existsSync(path.join(d, "src", "task.mjs"))).toBe(true);
    for (const d of [heldDead, oldest]) expect(fs.existsSync(d)).toBe(false);
    expect(fs.readdirSync(dir).some((n) => n.endsWith(".trash"))).toBe(false);
    expect(fs.existsSync(path.join(dir, "f".repeat(64)))).toBe(true);

    // Used moments ago (another worker may be about to hold it): kept even beyond `keep`.
    bundle(6, now, 5_000);
    const recent = bundle(7, now, 6_000);
    const again = new BundleCache(dir, noClient, { keep: 1 });
    expect(again.prune(now).sort()).toEqual([newest, second].sort());
    expect(fs.existsSync(recent)).toBe(true);
    expect(fs.existsSync(heldLive)).toBe(true);
  });

  it("a released hold frees the bundle (even while its process still exits); keep 0 keeps everything", () => {
    const now = Date.now();
    bundle(1, now, 10 * MINUTE);
    const old = bundle(2, now, 20 * MINUTE);
    const cache = new BundleCache(dir, noClient, { keep: 1 });
    const hold = cache.hold(old, "attempt-a");
    expect(cache.prune(now)).toEqual([]);
    hold.release();
    expect(new BundleCache(dir, noClient, { keep: 0 }).prune(now)).toEqual([]);
    expect(cache.prune(now)).toEqual([old]);

    // The attempt ended, though its process (a keeper writing its exit status) may still live.
    const ended = bundle(3, now, 30 * MINUTE);
    const h2 = cache.hold(ended, "attempt-b");
    h2.setPid(process.ppid);
    h2.release();
    expect(cache.prune(now)).toEqual([ended]);
  });

  it("a hold naming a live pid with another start time (the pid was reused) does not keep the bundle", () => {
    const now = Date.now();
    bundle(1, now, 10 * MINUTE);
    const old = bundle(2, now, 20 * MINUTE);
    fs.mkdirSync(path.join(old, ".iris-holders"));
    fs.writeFileSync(path.join(old, ".iris-holders", "attempt-a"), JSON.stringify({ pid: process.pid, startTicks: "1" }));
    expect(new BundleCache(dir, noClient, { keep: 1 }).prune(now)).toEqual([old]);
  });
});
