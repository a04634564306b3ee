// The controller's bundle store: a bundle is stored only when its bytes hash to its id and it is
// within the limit; ids are checked before they name a file; pruning removes only what nothing
// needs (not in use, not among the most recently used, not used within the grace time).
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BundleStore } from "./bundleStore.ts";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-bundle-store-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("BundleStore", () => {
  it("stores a bundle whose bytes hash to its id, and refuses one that does not or is too big", () => {
    const store = new BundleStore(path.join(dir, "store"), 10);
    const data = Buffer.from("0123456789");
    const id = `sha256:${createHash("sha256").update(data).digest("hex")}`;
    const w = store.begin(id, data.length);
    w.write(data.subarray(0, 4));
    w.write(data.subarray(4));
    w.finish();
    expect(store.size(id)).toBe(10);
    const wrong = `sha256:${"0".repeat(64)}`;
    const bad = store.begin(wrong, data.length);
    bad.write(data);
    expect(() => bad.finish()).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(store.size(wrong)).toBeUndefined();
    expect(() => store.begin(wrong, 11)).toThrow(expect.objectContaining({ code: "RESOURCE_EXHAUSTED" }));
    expect(() => store.fileOf("sha256:../../etc")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(fs.readdirSync(store.dir)).toEqual([`${id.slice(7)}.tgz`]);
  });

  function put(store: BundleStore, text: string, usedMs: number): string {
    const data = Buffer.from(text);
    const id = `sha256:${createHash("sha256").update(data).digest("hex")}`;
    const w = store.begin(id, data.length);
    w.write(data);
    w.finish();
    store.touch(id, usedMs);
    return id;
  }

  it("prunes the least recently used bundles that no live job needs and that were not used within the grace time", () => {
    const store = new BundleStore(path.join(dir, "store"));
    const now = Date.UTC(2026, 0, 1);
    const minute = 60_000;
    // Last used 50, 40, 30, 20 minutes and 1 minute ago.
    const [a, b, c, d, e] = [50, 40, 30, 20, 1].map((ago, i) => put(store, `bundle ${i}`, now - ago * minute));
    // keep 0: nothing is ever removed.
    expect(store.prune({ inUse: new Set(), keep: 0, graceMs: 0, now })).toEqual([]);
    // Keep the 2 most recent (e, d); b is in use; a and c go, least recent last.
    const removed = store.prune({ inUse: new Set([b!]), keep: 2, graceMs: 10 * minute, now });
    expect(removed).toEqual([c, a]);
    for (const id of [b, d, e]) expect(store.size(id!)).toBeGreaterThan(0);
    for (const id of [a, c]) expect(store.size(id!)).toBeUndefined();
    // Within the grace time a bundle stays even beyond `keep`; touching it again renews it.
    store.touch(b!, now);
    expect(store.prune({ inUse: new Set(), keep: 1, graceMs: 25 * minute, now })).toEqual([]);
    expect(store.prune({ inUse: new Set(), keep: 1, graceMs: 10 * minute, now: now + 5 * minute })).toEqual([d]);
    expect(store.size(b!)).toBeGreaterThan(0);
    expect(store.size(e!)).toBeGreaterThan(0);
  });

  it("removes partial uploads an earlier process left, never one in progress", () => {
    const store = new BundleStore(path.join(dir, "store"));
    const hex = "ab".repeat(32);
    const stale = path.join(store.dir, `${hex}.tgz.0badc0de.part`);
    fs.writeFileSync(stale, "half");
    const old = (Date.now() - 3_600_000) / 1000;
    fs.utimesSync(stale, old, old);
    const unrelated = path.join(store.dir, "notes.txt");
    fs.writeFileSync(unrelated, "not a bundle");
    fs.utimesSync(unrelated, old, old);
    const live = store.begin(`sha256:${hex}`, 4);
    live.write(Buffer.from("ab"));
    fs.utimesSync(live.tmpFile, old, old);
    store.prune({ inUse: new Set(), keep: 1, graceMs: 60_000, now: Date.now() });
    expect(fs.existsSync(stale)).toBe(false);
    expect(fs.existsSync(live.tmpFile)).toBe(true);
    expect(fs.existsSync(unrelated)).toBe(true);
    live.abort();
    expect(fs.readdirSync(store.dir)).toEqual(["notes.txt"]);
  });
});
