// The controller's bundle store: a bundle is stored only when its bytes hash to its id and it is
// within the limit; ids are checked before they name a file.
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
});
