// The log path under abuse (real controller, worker and child processes on loopback): lines whose
// batch would pass gRPC's limit, a refused batch, and a flood of lines — nothing is lost silently
// and one job never blocks the logs of the next.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { Controller } from "../controller/controller.ts";
import type { LogEntry } from "../jobSpec.ts";
import { FakeController, runCommand } from "./testing/fakeController.ts";
import { waitFor } from "./testing/waitFor.ts";
import { Worker, type WorkerOptions } from "./worker.ts";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function cluster(workerOpts: Partial<WorkerOptions> = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-logs-e2e-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const controller = await Controller.start({ port: 0, host: "127.0.0.1", dbPath: path.join(dir, "c.sqlite") });
  cleanups.push(() => controller.stop());
  const worker = await Worker.start({ controller: controller.address, stateRoot: path.join(dir, "workers"), killGraceMs: 300, ...workerOpts });
  cleanups.push(() => worker.stop());
  await worker.registered;
  const client = IrisClient.connect(controller.address, { user: "logs" });
  cleanups.push(() => client.close());
  return { client, worker };
}

/** Runs `node -e script` as a job and returns its stored log entries once it has finished. */
async function runAndRead(client: IrisClient, script: string): Promise<LogEntry[]> {
  const job = await client.submit({ entrypoint: { command: [process.execPath, "-e", script] } });
  const st = await job.wait({ timeoutMs: 120_000 });
  expect(st.state).toBe("SUCCEEDED");
  const out: LogEntry[] = [];
  for await (const e of job.logs()) out.push(e);
  return out;
}

const EURO_LINES = `const l = "€".repeat(65536) + "\\n"; let i = 0;
  const next = () => { while (i < 520) { i++; if (!process.stdout.write(l)) return void process.stdout.once("drain", next); } };
  next();`;

describe("log shipping", () => {
  it("520 lines of 64K three-byte characters (100 MB, over gRPC's 64 MiB in one batch) are stored, and so are a later job's lines", async () => {
    const { client } = await cluster();
    const big = await runAndRead(client, EURO_LINES);
    const chars = big.reduce((n, e) => n + e.line.length, 0);
    expect(chars).toBe(520 * 65536);
    expect(big.every((e) => /^€+$/.test(e.line) && Buffer.byteLength(e.line) <= 65536)).toBe(true);
    const later = await runAndRead(client, `for (let i = 0; i < 50; i++) console.log("later " + i)`);
    expect(later.map((e) => e.line)).toEqual(Array.from({ length: 50 }, (_, i) => `later ${i}`));
  }, 180_000);

  it("one 100 MB line is stored in pieces, in order, and the worker stays bounded in memory", async () => {
    const { client } = await cluster();
    const rssBefore = process.memoryUsage().rss;
    const pieces = await runAndRead(client, `process.stdout.write("ab".repeat(50 * 1024 * 1024) + "\\nend\\n")`);
    expect(pieces.at(-1)!.line).toBe("end");
    const text = pieces.slice(0, -1).map((e) => e.line);
    expect(text.reduce((n, l) => n + l.length, 0)).toBe(100 * 1024 * 1024);
    expect(text.every((l) => l.length <= 65536 && /^(ab)+$/.test(l))).toBe(true);
    // Controller and worker share this process: the line was never held whole (nor 500 pieces of it at once).
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(600 * 1024 * 1024);
  }, 180_000);

  it("a batch the controller refuses is replaced by a marker counting the lost lines, and later batches still go", async () => {
    const fc = await FakeController.start();
    cleanups.push(() => fc.close());
    fc.refuseLogs = (lines) => (lines.some((l) => l.line === "poison") ? { code: grpc.status.INVALID_ARGUMENT, details: "poisoned batch" } : undefined);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-logs-e2e-"));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const worker = await Worker.start({ controller: fc.address, stateRoot: path.join(dir, "workers"), killGraceMs: 300, logLimits: { refusedTries: 2 } });
    cleanups.push(() => worker.stop());
    await worker.registered;
    const script = `for (let i = 0; i < 300; i++) console.log(i === 150 ? "poison" : "line " + i)`;
    fc.run.set("a1", runCommand("a1", [process.execPath, "-e", script]));
    fc.notify();
    await waitFor("a1 to be reported finished", () => fc.observed.get("a1")?.state === "SUCCEEDED");
    const got = fc.linesOf("a1");
    const markerAt = got.findIndex((l) => l.startsWith("[iris: "));
    expect(markerAt).toBeGreaterThanOrEqual(0);
    const m = /^\[iris: (\d+) lines dropped: (.*)\]$/.exec(got[markerAt]!);
    expect(m![2]).toContain("poisoned batch");
    const lost = Number(m![1]);
    // Every line is stored or counted, in order, with the marker where the lost ones were.
    const expected = Array.from({ length: 300 }, (_, i) => (i === 150 ? "poison" : `line ${i}`));
    expect([...got.slice(0, markerAt), ...expected.slice(markerAt, markerAt + lost), ...got.slice(markerAt + 1)]).toEqual(expected);
    expect(fc.observed.get("a1")!.logLines).toBe(got.length);
    expect(worker.droppedLogLines).toBe(lost);
    fc.run.delete("a1");
    fc.run.set("a2", runCommand("a2", [process.execPath, "-e", `for (let i = 0; i < 50; i++) console.log("later " + i)`], { taskId: "/test/job/1", taskIndex: 1 }));
    fc.notify();
    await waitFor("a2 to be reported finished", () => fc.observed.get("a2")?.state === "SUCCEEDED");
    expect(fc.linesOf("a2")).toEqual(Array.from({ length: 50 }, (_, i) => `later ${i}`));
  }, 120_000);

  it("a flood of lines through a small queue is stored completely and in order (backpressure, no loss)", async () => {
    const N = 300_000;
    const { client } = await cluster({ logLimits: { maxPendingLines: 2000, batchLines: 500 } });
    const t0 = Date.now();
    const job = await client.submit({
      entrypoint: {
        command: [
          process.execPath,
          "-e",
          `let i = 0; const next = () => { while (i < ${N}) { if (!process.stdout.write(i++ + "\\n")) return void process.stdout.once("drain", next); } }; next();`,
        ],
      },
    });
    expect((await job.wait({ timeoutMs: 120_000 })).state).toBe("SUCCEEDED");
    const t1 = Date.now();
    const entries: LogEntry[] = [];
    for await (const e of job.logs()) entries.push(e);
    const t2 = Date.now();
    console.log(
      `log flood: ${N} lines stored in ${((t1 - t0) / 1000).toFixed(1)} s (${Math.round(N / ((t1 - t0) / 1000))} lines/s through a 2,000-line queue), read back in ${((t2 - t1) / 1000).toFixed(1)} s`,
    );
    expect(entries).toHaveLength(N);
    let ordered = true;
    for (let i = 0; i < N; i++) if (entries[i]!.line !== String(i)) ordered = false;
    expect(ordered).toBe(true);
  }, 180_000);
});
