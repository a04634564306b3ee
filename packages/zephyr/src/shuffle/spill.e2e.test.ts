// The shuffle spills: a groupBy over data several times larger than both the memory budget and
// the V8 heap of a real child process completes with exact results.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOURCE_LOADER } from "@marin/iris/testing";

const packageDir = fileURLToPath(new URL("../..", import.meta.url));
const probe = fileURLToPath(new URL("./fixtures/groupByLargerThanHeap.ts", import.meta.url));

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-spill-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function run(args: string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: packageDir, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe("shuffle spill under a real heap limit", () => {
  it("groups 600,000 records (~140 MB of spill) with a 40 MB heap and an 8 MB budget", async () => {
    const heapMb = 40;
    const budget = 8 * 1024 * 1024;
    const records = 600_000;
    const keys = 30_000;
    const res = await run([`--max-old-space-size=${heapMb}`, "--import", SOURCE_LOADER, probe, dir, String(records), String(keys), String(budget)]);
    expect(res.stderr).not.toMatch(/heap out of memory/i);
    expect({ code: res.code, signal: res.signal }).toEqual({ code: 0, signal: null });
    const report = JSON.parse(res.stdout.trim().split("\n").at(-1) as string) as {
      groups: number;
      seen: number;
      wrong: number;
      runs: number;
      spillBytes: number;
      partitionRecords: number[];
      peakHeap: number;
    };
    expect(report.groups).toBe(keys);
    expect(report.seen).toBe(records);
    expect(report.wrong).toBe(0);
    expect(report.partitionRecords.reduce((a, b) => a + b)).toBe(records);
    // The data really was larger than both limits, and the reducers needed a multi-pass merge
    // (more runs than the probe's fan-in of 8).
    expect(report.spillBytes).toBeGreaterThan(3 * heapMb * 1024 * 1024);
    expect(report.spillBytes).toBeGreaterThan(10 * budget);
    expect(report.runs).toBeGreaterThan(8);
    expect(report.peakHeap).toBeLessThan(heapMb * 1024 * 1024);
  });
});
