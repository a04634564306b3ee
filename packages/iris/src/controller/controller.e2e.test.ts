// The controller's HTTP face: the same handlers as JSON, and Prometheus metrics.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Controller } from "./controller.ts";

describe("Controller HTTP API", () => {
  let dir: string;
  let controller: Controller;
  const auth = { authorization: "Bearer tok" };
  const post = (method: string, body: unknown, headers: Record<string, string> = auth) =>
    fetch(`http://${controller.httpAddress}/api/${method}`, { method: "POST", headers, body: JSON.stringify(body) });

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "iris-http-"));
    controller = await Controller.start({ host: "127.0.0.1", port: 0, httpPort: 0, dbPath: path.join(dir, "c.sqlite"), token: "tok" });
  });
  afterAll(async () => {
    await controller?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves the unary RPCs as JSON with the same auth and errors", async () => {
    const launched = await post("LaunchJob", { spec: { name: "/alice/web", entrypoint: { command: { argv: ["true"] } }, replicas: 2 } });
    expect(launched.status).toBe(200);
    expect(await launched.json()).toMatchObject({ name: "/alice/web" });
    const job = (await (await post("GetJob", { name: "/alice/web" })).json()) as { state: string; tasks: unknown[] };
    expect(job.state).toBe("PENDING");
    expect(job.tasks).toHaveLength(2);

    const denied = await post("ListJobs", {}, {});
    expect(denied.status).toBe(401);
    expect(await denied.json()).toMatchObject({ code: "UNAUTHENTICATED" });
    const missing = await post("GetJob", { name: "/alice/nope" });
    expect(missing.status).toBe(404);
    const bad = await post("LaunchJob", { spec: { name: "/alice/bad", entrypoint: { command: { argv: ["true"] } }, replicas: -1 } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/replicas/);
  });

  it("exposes Prometheus metrics", async () => {
    expect((await fetch(`http://${controller.httpAddress}/metrics`)).status).toBe(401);
    const text = await (await fetch(`http://${controller.httpAddress}/metrics`, { headers: auth })).text();
    expect(text).toMatch(/^iris_jobs\{state="PENDING"\} 1$/m);
    expect(text).toMatch(/^iris_tasks\{state="PENDING"\} 2$/m);
    expect(text).toMatch(/^iris_db_bytes \d+$/m);
  });
});
