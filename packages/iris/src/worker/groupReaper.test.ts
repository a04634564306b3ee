// The group reaper's start-up: only on first use, and quiet when its worker's channel breaks under
// it (real reaper processes).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { childrenOf } from "../testkit/processes.ts";
import { waitFor } from "./testing/waitFor.ts";
import { GROUP_REAPER_PATH, GroupReaper } from "./groupReaper.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-reaper-test-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** This process's children running groupReaper.mjs. */
const reapers = (): number[] => childrenOf(process.pid, "groupReaper.mjs");

describe("GroupReaper", () => {
  it("starts its process on first use, not when made; a closed one never starts", async () => {
    const before = reapers();
    const reaper = GroupReaper.start(100);
    expect(reapers()).toEqual(before);
    expect(reaper.ready).toBe(false);
    expect(await reaper.started).toBe(true);
    expect(reaper.ready).toBe(true);
    const started = reapers().filter((p) => !before.includes(p));
    expect(started).toHaveLength(1);
    reaper.close();
    await waitFor("the reaper to exit after a clean close", () => !reapers().includes(started[0]!), { timeoutMs: 10_000 });

    const unused = GroupReaper.start(100);
    unused.close();
    expect(await unused.started).toBe(false);
    expect(unused.ready).toBe(false);
    expect(reapers().filter((p) => !before.includes(p))).toEqual([]);
  });
});

describe("groupReaper.mjs", () => {
  it("a worker gone between the reaper's check and its ready message (EPIPE): it exits quietly, no stack trace", async () => {
    // The write fails as Node fails it when the other end has closed: the error goes to the
    // callback when there is one, else it is emitted as an 'error' event on process.
    const preload = path.join(dir, "epipe.mjs");
    fs.writeFileSync(
      preload,
      `process.send = (msg, ...rest) => {
        const cb = rest.find((a) => typeof a === "function");
        const err = Object.assign(new Error("write EPIPE"), { code: "EPIPE", errno: -32, syscall: "write" });
        setImmediate(() => (cb ? cb(err) : process.emit("error", err)));
        return false;
      };\n`,
    );
    const child = spawn(process.execPath, ["--import", preload, GROUP_REAPER_PATH, String(process.pid), "100"], { stdio: ["ignore", "ignore", "pipe", "ipc"] });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const [code] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("exit", (c, s) => resolve([c, s])));
    expect(stderr).toBe("");
    expect(code).toBe(0);
  });
});
