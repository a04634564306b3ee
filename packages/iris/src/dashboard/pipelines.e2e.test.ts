// Pipeline records have owners: a real controller with an auth file and its HTTP face on loopback.
// A record is created by whoever PUTs it first and changed only by that user (or its job's tasks)
// or an admin; worker tokens and sessions never write one.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorkerControlClient, unary } from "../internal/rpc.ts";
import { sha256Hex, type Principal } from "../controller/auth.ts";
import { Controller } from "../controller/controller.ts";
import { PipelineStore, pipelineOwnerOf, pipelineWriteRefusal } from "./pipelines.ts";

const ADMIN = "admin-token-0123456789";
const ALICE = "alice-token-0123456789";
const BOB = "bob-token-01234567890";
const WORKER = "worker-token-0123456789";

const run = (runId: string, state: "running" | "finished" = "running") => ({ runId, prefix: "/tmp/x", state, startedAtMs: Date.now(), steps: [] });

describe("pipeline records have owners", () => {
  let dir: string;
  let controller: Controller;
  let base: string;
  const put = (token: string, body: { runId: string }) =>
    fetch(`${base}/api/pipelines/${body.runId}`, { method: "PUT", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const states = async (): Promise<Record<string, string>> => {
    const r = (await (await fetch(`${base}/api/pipelines`, { headers: { authorization: `Bearer ${ALICE}` } })).json()) as { runs: { runId: string; state: string }[] };
    return Object.fromEntries(r.runs.map((x) => [x.runId, x.state]));
  };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-pipe-"));
    const authFile = path.join(dir, "auth.yaml");
    fs.writeFileSync(
      authFile,
      [
        "tokens:",
        `  - { user: root, role: admin, sha256: ${sha256Hex(ADMIN)} }`,
        `  - { user: alice, role: user, token: ${ALICE} }`,
        `  - { user: bob, role: user, token: ${BOB} }`,
        `  - { user: fleet, role: worker, sha256: ${sha256Hex(WORKER)} }`,
        "",
      ].join("\n"),
    );
    controller = await Controller.start({ host: "127.0.0.1", port: 0, httpPort: 0, dbPath: path.join(dir, "c.sqlite"), authFile });
    base = `http://${controller.httpAddress}`;
  });
  afterAll(async () => {
    await controller?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("only the creator or an admin changes a record; another user cannot overwrite it", async () => {
    expect((await put(ALICE, run("alice-run"))).status).toBe(200);
    const res = await put(BOB, run("alice-run", "finished"));
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toMatch(/belongs to alice/);
    expect((await states())["alice-run"]).toBe("running");
    expect((await put(ALICE, run("alice-run", "finished"))).status).toBe(200);
    expect((await states())["alice-run"]).toBe("finished");
    expect((await put(ADMIN, run("alice-run", "running"))).status).toBe(200);
    expect((await states())["alice-run"]).toBe("running");
    // The admin's change did not make the record the admin's.
    expect((await put(ALICE, run("alice-run", "finished"))).status).toBe(200);
  });

  it("worker tokens and worker sessions cannot write records", async () => {
    expect((await put(WORKER, run("worker-run"))).status).toBe(403);
    const wc = createWorkerControlClient(controller.address, { token: WORKER });
    try {
      const { sessionToken } = await unary(wc, "registerWorker", { workerId: "wp", host: "127.0.0.1", attributes: {}, capacity: { cpuMillis: 0 }, instanceId: "i" });
      expect((await put(sessionToken, run("worker-run"))).status).toBe(403);
      expect((await put(sessionToken, run("alice-run", "running"))).status).toBe(403);
    } finally {
      wc.close();
    }
    expect(await states()).not.toHaveProperty("worker-run");
  });

  it("one writer flooding records cannot push out another owner's", async () => {
    expect((await put(ALICE, run("alice-keep"))).status).toBe(200);
    for (let i = 0; i < 150; i++) expect((await put(BOB, run(`bob-${i}`))).status).toBe(200);
    const s = await states();
    expect(s["alice-keep"]).toBe("running");
    expect(s["bob-149"]).toBe("running");
    expect(s).not.toHaveProperty("bob-0");
    // And so cannot take over the name of a record it pushed out.
    expect((await put(BOB, run("alice-keep", "finished"))).status).toBe(403);
  });
});

describe("pipelineWriteRefusal", () => {
  const alice: Principal = { user: "alice", role: "user" };
  const task = (job: string): Principal => ({ user: "alice", role: "task", job, attempt: `${job}/0:0` });
  it("task tokens write the records their own job's tree created, and nothing else", () => {
    const owner = pipelineOwnerOf(task("/alice/pipeline"));
    expect(owner).toEqual({ user: "alice", job: "/alice/pipeline" });
    if (typeof owner === "string") throw new Error(owner);
    expect(pipelineWriteRefusal(task("/alice/pipeline"), owner)).toBeUndefined();
    expect(pipelineWriteRefusal(task("/alice/pipeline/step"), owner)).toBeUndefined();
    expect(pipelineWriteRefusal(task("/alice/other"), owner)).toMatch(/belongs to job \/alice\/pipeline/);
    expect(pipelineWriteRefusal(alice, owner)).toBeUndefined();
    // A user's own record is not open to the tasks of any of her jobs.
    expect(pipelineWriteRefusal(task("/alice/pipeline"), { user: "alice" })).toMatch(/belongs to alice/);
    expect(pipelineOwnerOf({ user: "w", role: "worker", worker: "w1" })).toMatch(/worker token may not/);
  });
  it("keeps the first writer as the owner", () => {
    const store = new PipelineStore();
    store.put({ ...run("r"), steps: [] }, { user: "alice" });
    store.put({ ...run("r", "finished"), steps: [] }, { user: "root" });
    expect(store.ownerOf("r")).toEqual({ user: "alice" });
  });
});
