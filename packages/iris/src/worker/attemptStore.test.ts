// Tests of the attempt store's records on disk.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AttemptStore } from "./attemptStore.ts";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-store-test-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("AttemptStore", () => {
  it("keeps one record per attempt uid, whatever characters the uid holds, until removed", () => {
    const store = new AttemptStore(dir);
    const uids = ["a/b:1", "a_b_1", "../../escape", "ü 🙂"];
    for (const [i, uid] of uids.entries()) store.write({ attemptUid: uid, attemptId: `/u/j/${i}:1`, startedAtMs: i });
    store.write({ attemptUid: "a/b:1", attemptId: "/u/j/0:1", startedAtMs: 0, pid: 42, pgid: 42 });
    expect(new Set(store.list().map((r) => r.attemptUid))).toEqual(new Set(uids));
    expect(store.list().find((r) => r.attemptUid === "a/b:1")?.pid).toBe(42);
    for (const f of fs.readdirSync(store.dir)) expect(path.resolve(store.dir, f).startsWith(store.dir)).toBe(true);
    const scratch = store.scratchDir("a/b:1");
    fs.writeFileSync(path.join(scratch, "runner.json"), "{}");
    store.remove("a/b:1");
    expect(fs.existsSync(scratch)).toBe(false);
    expect(
      store
        .list()
        .map((r) => r.attemptUid)
        .sort(),
    ).toEqual(uids.slice(1).sort());
  });

  it("reports and drops a record that cannot be read back", () => {
    const store = new AttemptStore(dir);
    store.write({ attemptUid: "good", attemptId: "/u/j/0:1", startedAtMs: 1 });
    fs.writeFileSync(path.join(store.dir, "broken.json"), "{not json");
    const bad: string[] = [];
    expect(store.list((file) => bad.push(path.basename(file))).map((r) => r.attemptUid)).toEqual(["good"]);
    expect(bad).toEqual(["broken.json"]);
    expect(fs.existsSync(path.join(store.dir, "broken.json"))).toBe(false);
  });
});
