// The test order's one change to Vitest's: end-to-end files that mostly wait are spread out.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { spread, WAITING_FILES } from "./setup/sequencer.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

describe("spread", () => {
  it("keeps both orders and puts the waiting files evenly among the busy ones, the first one first", () => {
    expect(spread(["b1", "b2", "b3", "b4"], ["w1", "w2"])).toEqual(["w1", "b1", "b2", "w2", "b3", "b4"]);
    expect(spread(["b1", "b2", "b3"], ["w1", "w2", "w3"])).toEqual(["w1", "b1", "w2", "b2", "w3", "b3"]);
  });

  it("never pairs two waiting files when there are enough busy ones, and loses none", () => {
    const busy = Array.from({ length: 23 }, (_, i) => `b${i}`);
    const waiting = ["w0", "w1", "w2"];
    const out = spread(busy, waiting);
    expect([...out].sort()).toEqual([...busy, ...waiting].sort());
    for (let i = 1; i < out.length; i++) expect(out[i - 1]!.startsWith("w") && out[i]!.startsWith("w")).toBe(false);
  });

  it("handles no waiting files, and more waiting files than busy ones", () => {
    expect(spread(["b1", "b2"], [])).toEqual(["b1", "b2"]);
    expect([...spread(["b1"], ["w1", "w2", "w3"])].sort()).toEqual(["b1", "w1", "w2", "w3"]);
  });
});

describe("WAITING_FILES", () => {
  it("names files that exist (a renamed file would silently lose its place)", () => {
    for (const f of WAITING_FILES) expect(existsSync(path.join(root, f)), f).toBe(true);
  });
});
