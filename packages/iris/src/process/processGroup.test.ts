// Tests of /proc parsing and group signalling.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cgroupOomKills, groupRssBytes, parseProcStat, readProcStat, watchGroupRss } from "./processGroup.ts";
import { waitFor } from "../worker/testing/waitFor.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-pg-test-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("cgroupOomKills", () => {
  it("reads the oom_kill counter of cgroup v2 and v1 files, the first readable one winning", () => {
    const v2 = path.join(dir, "memory.events");
    const v1 = path.join(dir, "memory.oom_control");
    fs.writeFileSync(v2, "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\n");
    fs.writeFileSync(v1, "oom_kill_disable 0\nunder_oom 0\noom_kill 9\n");
    const missing = { file: path.join(dir, "absent"), key: "oom_kill" };
    expect(cgroupOomKills([missing, { file: v2, key: "oom_kill" }, { file: v1, key: "oom_kill" }])).toBe(2);
    expect(cgroupOomKills([missing, { file: v1, key: "oom_kill" }])).toBe(9);
    expect(cgroupOomKills([missing])).toBeUndefined();
  });
});

describe("readProcStat", () => {
  it("parses a command name with spaces and parentheses", () => {
    const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
    fields[0] = "S";
    const stat = parseProcStat(`4242 (a) b (c)) ${fields.join(" ")}\n`);
    // ppid is field 4, pgrp field 5, starttime field 22, rss field 24.
    expect(stat).toEqual({ pid: 4242, ppid: 4, pgrp: 5, state: "S", startTicks: "22", rssPages: 24 });
  });

  it("reads this process's pid, parent and group", () => {
    const stat = readProcStat("self");
    expect(stat?.pid).toBe(process.pid);
    expect(stat?.ppid).toBe(process.ppid);
    expect(stat?.pgrp).toBeGreaterThan(0);
    expect(stat?.startTicks).toMatch(/^\d+$/);
    expect(readProcStat(2 ** 22 + 12345)).toBeUndefined();
  });
});

describe("watchGroupRss", () => {
  it("samples a group's resident memory for every watcher until each stops watching", async () => {
    const pgid = readProcStat("self")!.pgrp;
    expect(groupRssBytes(pgid)).toBeGreaterThan(readProcStat("self")!.rssPages * 4096 - 1);
    const a: number[] = [];
    const b: number[] = [];
    const stopA = watchGroupRss(pgid, 20, (bytes) => a.push(bytes));
    const stopB = watchGroupRss(pgid, 20, (bytes) => b.push(bytes));
    await waitFor("samples for both watchers", () => a.length >= 2 && b.length >= 2);
    expect(Math.min(...a, ...b)).toBeGreaterThan(1024 * 1024);
    stopA();
    const seenByA = a.length;
    await waitFor("more samples for b", () => b.length >= seenByA + 3);
    expect(a.length).toBe(seenByA);
    stopB();
  });
});
