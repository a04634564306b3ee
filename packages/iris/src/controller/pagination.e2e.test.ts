// The controller's reads at scale (real controller, client and HTTP face on loopback): ListJobs is
// paginated and summarises tasks by state; a job's tasks come in pages that the client follows.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { Controller } from "./controller.ts";
import { JOB_PAGE, TASK_PAGE } from "./stateQueries.ts";

let dir: string;
let controller: Controller;
let client: IrisClient;
const post = async (method: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
  const r = await fetch(`http://${controller.httpAddress}/api/${method}`, {
    method: "POST",
    headers: { authorization: `Bearer ${controller.adminToken}` },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-pages-"));
  controller = await Controller.start({ port: 0, host: "127.0.0.1", httpPort: 0, dbPath: path.join(dir, "c.sqlite") });
  client = IrisClient.connect(controller.address, { user: "pages" });
});
afterAll(async () => {
  client?.close();
  await controller?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("paginated reads", () => {
  it("a job of 20,000 tasks: ListJobs summarises it by state, GetJob pages its tasks, the client follows the pages", async () => {
    const job = await client.submit({ name: "wide", entrypoint: { command: ["true"] }, replicas: 20_000 });
    const listed = await post("ListJobs", { prefix: "/pages/wide" });
    expect(listed.status).toBe(200);
    const [summary] = listed.body.jobs as { tasks: unknown[]; taskCounts: Record<string, number>; numTasks: number }[];
    expect(summary!.tasks).toEqual([]);
    expect(summary!.taskCounts).toEqual({ PENDING: 20_000 });
    expect(summary!.numTasks).toBe(20_000);
    expect(JSON.stringify(listed.body).length).toBeLessThan(10_000);

    const first = await post("GetJob", { name: job.name });
    expect((first.body.tasks as unknown[]).length).toBe(TASK_PAGE.default);
    expect(first.body.nextTaskPageToken).not.toBe("");
    const second = await post("ListTasks", { name: job.name, taskPageSize: 7, taskPageToken: first.body.nextTaskPageToken });
    expect((second.body.tasks as { index: number }[]).map((t) => t.index)).toEqual([1000, 1001, 1002, 1003, 1004, 1005, 1006]);
    const clamped = await post("GetJob", { name: job.name, taskPageSize: 1_000_000 });
    expect((clamped.body.tasks as unknown[]).length).toBe(TASK_PAGE.max);
    const bad = await post("GetJob", { name: job.name, taskPageToken: "nonsense" });
    expect(bad.status).toBe(400);
    expect(String(bad.body.message)).toMatch(/task_page_token/);

    const st = await job.status();
    expect(st.tasks.map((t) => t.index)).toEqual(Array.from({ length: 20_000 }, (_, i) => i));
    expect(st.taskCounts).toEqual({ PENDING: 20_000 });
    const [viaClient] = await client.list({ prefix: "wide" });
    expect(viaClient).toMatchObject({ name: job.name, tasks: [], numTasks: 20_000, taskCounts: { PENDING: 20_000 } });
    await job.terminate();
    const ended = await job.wait({ timeoutMs: 60_000 });
    expect(ended.tasks).toHaveLength(20_000);
    expect(ended.taskCounts).toEqual({ KILLED: 20_000 });
  }, 120_000);

  it("ListJobs pages through 250 jobs in submission order, with a default and a largest page size", async () => {
    const many = IrisClient.connect(controller.address, { user: "many" });
    for (let i = 0; i < 250; i++) await many.submit({ name: `j${String(i).padStart(3, "0")}`, entrypoint: { command: ["true"] } });
    const names: string[] = [];
    let token = "";
    let pages = 0;
    do {
      const r = await post("ListJobs", { prefix: "/many", pageToken: token });
      expect((r.body.jobs as unknown[]).length).toBeLessThanOrEqual(JOB_PAGE.default);
      names.push(...(r.body.jobs as { name: string }[]).map((j) => j.name));
      token = String(r.body.nextPageToken ?? "");
      pages++;
    } while (token !== "");
    expect(pages).toBe(3);
    const expected = Array.from({ length: 250 }, (_, i) => `/many/j${String(i).padStart(3, "0")}`);
    expect(names).toEqual(expected);
    expect((await many.list({ prefix: "/many" })).map((j) => j.name)).toEqual(expected);
    many.close();
    const small = await post("ListJobs", { prefix: "/many", pageSize: 10 });
    expect((small.body.jobs as unknown[]).length).toBe(10);
    const negative = await post("ListJobs", { pageSize: -1 });
    expect(negative.status).toBe(400);
  }, 120_000);
});
