// Trackers: what each writes, on a TTY and off it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CompositeTracker, ConsoleTracker, JsonlTracker, type Tracker } from "./trackers.ts";

function fakeTty(): { stream: NodeJS.WriteStream; text: () => string } {
  let out = "";
  const w = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out += chunk.toString();
      cb();
    },
  }) as unknown as NodeJS.WriteStream;
  Object.assign(w, { isTTY: true, columns: 160, cursorTo: () => true, clearLine: () => true, moveCursor: () => true });
  return { stream: w, text: () => out };
}

describe("trackers", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    vi.restoreAllMocks();
  });

  it("ConsoleTracker draws a progress bar with loss, tok/s and MFU on a TTY", () => {
    const tty = fakeTty();
    const t = new ConsoleTracker(10, 0, tty.stream);
    t.log(4, { "train/loss": 2.5, "throughput/tokens_per_second": 3024.4, "throughput/mfu": 4.51 });
    t.finish();
    // The same status as `levanter train` prints (trainer/progress.ts).
    expect(tty.text()).toMatch(/step 4\/10 \(40\.0%\) · loss 2\.5000 · 3,024 tok\/s · MFU 4\.51%/);
  });

  it("ConsoleTracker off a TTY logs about once per tenth of the run, and every eval", () => {
    const lines: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((s: string | Uint8Array) => (lines.push(String(s)), true));
    const t = new ConsoleTracker(100, 0, { isTTY: false } as NodeJS.WriteStream);
    const previous = process.env.LEVANTER_LOG;
    process.env.LEVANTER_LOG = "info";
    try {
      for (let s = 1; s <= 100; s++) t.log(s, { "train/loss": 1 });
      t.log(100, { "eval/loss": 1, "eval/bpb": 1.4 });
    } finally {
      process.env.LEVANTER_LOG = previous;
    }
    const records = lines.map((l) => JSON.parse(l) as { msg: string; step: number });
    expect(records.filter((r) => r.msg === "train").map((r) => r.step)).toEqual([1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect(records.filter((r) => r.msg === "eval")).toHaveLength(1);
  });

  it("JsonlTracker appends one object per call; a failing tracker does not stop the others", () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-trk-"));
    const jsonl = new JsonlTracker(path.join(dir, "sub", "metrics.jsonl"));
    const broken: Tracker = {
      log: () => {
        throw new Error("disk full");
      },
      finish: () => {},
    };
    vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const all = new CompositeTracker([broken, jsonl]);
    all.log(1, { "train/loss": 3 });
    all.log(2, { "train/loss": 2 });
    all.finish();
    const rows = readFileSync(path.join(dir, "sub", "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, number>);
    expect(rows.map((r) => [r.step, r["train/loss"]])).toEqual([
      [1, 3],
      [2, 2],
    ]);
  });

  it("JsonlTracker with resumeFrom drops the rows after the resume point (and a torn last line), so a rerun logs each step once", () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-trk-"));
    const file = path.join(dir, "metrics.jsonl");
    const first = new JsonlTracker(file, { resumeFrom: 0 });
    for (let s = 1; s <= 6; s++) first.log(s, { "train/loss": 10 - s });
    writeFileSync(file, `${readFileSync(file, "utf8")}{"step":7,"tra`);
    // A rerun resumed from the checkpoint of step 4: steps 5–6 (and the torn 7) go, 5–8 come again.
    const rerun = new JsonlTracker(file, { resumeFrom: 4 });
    for (let s = 5; s <= 8; s++) rerun.log(s, { "train/loss": 20 - s });
    const rows = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, number>);
    expect(rows.map((r) => [r.step, r["train/loss"]])).toEqual([
      [1, 9],
      [2, 8],
      [3, 7],
      [4, 6],
      [5, 15],
      [6, 14],
      [7, 13],
      [8, 12],
    ]);
    // A rerun from step 0 (no checkpoint) starts the file over.
    new JsonlTracker(file, { resumeFrom: 0 }).log(1, { "train/loss": 1 });
    expect(readFileSync(file, "utf8").trim().split("\n")).toHaveLength(1);
  });
});
