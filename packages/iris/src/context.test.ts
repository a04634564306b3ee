// Tests of the task context API (getIrisCtx, withIrisCtx, ports, child names) without a cluster.
import { afterEach, describe, expect, it, vi } from "vitest";
import { createIrisContext, getIrisCtx, irisCtx, withIrisCtx } from "./context.ts";
import { IrisError } from "./errors.ts";
import { buildTaskEnv, type TaskIdentity } from "./process/taskEnv.ts";

const identity: TaskIdentity = {
  controllerAddress: "127.0.0.1:1",
  jobId: "/alice/train",
  taskId: "/alice/train/1",
  taskIndex: 1,
  numTasks: 2,
  attempt: 3,
  workerId: "w-7",
  advertiseHost: "10.0.0.5",
  ports: { coordinator: 41000 },
};

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

describe("the context outside a task", () => {
  it("is undefined from getIrisCtx and FAILED_PRECONDITION from irisCtx", () => {
    expect(process.env.IRIS_TASK_ID).toBeUndefined();
    expect(getIrisCtx()).toBeUndefined();
    const err = (() => {
      try {
        irisCtx();
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(IrisError);
    expect(err).toMatchObject({ code: "FAILED_PRECONDITION" });
  });
});

describe("withIrisCtx", () => {
  it("scopes a context to a call and everything it awaits, nesting and then restoring", async () => {
    const outer = createIrisContext(identity, {});
    const inner = createIrisContext({ ...identity, taskIndex: 0, taskId: "/alice/train/0" }, {});
    const seen = await withIrisCtx(outer, async () => {
      const before = irisCtx().taskIndex;
      await new Promise((resolve) => setTimeout(resolve, 1));
      const nested = await withIrisCtx(inner, async () => {
        await Promise.resolve();
        return irisCtx().taskId;
      });
      return [before, nested, getIrisCtx()?.taskIndex];
    });
    expect(seen).toEqual([1, "/alice/train/0", 1]);
    expect(getIrisCtx()).toBeUndefined();
  });
});

describe("createIrisContext", () => {
  it("carries the task identity", () => {
    const ctx = createIrisContext(identity, {});
    expect(ctx).toMatchObject({
      jobId: "/alice/train",
      taskId: "/alice/train/1",
      taskIndex: 1,
      numTasks: 2,
      attempt: 3,
      workerId: "w-7",
      advertiseHost: "10.0.0.5",
    });
  });

  it("reads named ports from IRIS_PORT_<NAME>, and explains how to get a missing one", () => {
    const ctx = createIrisContext(identity, buildTaskEnv(identity, {}, {}));
    expect(ctx.getPort("coordinator")).toBe(41000);
    expect(ctx.getPort("Coordinator")).toBe(41000);
    expect(() => ctx.getPort("metrics")).toThrow(/IRIS_PORT_METRICS is not set.*ports: \["metrics"\]/);
    try {
      ctx.getPort("metrics");
    } catch (e) {
      expect(e).toMatchObject({ code: "FAILED_PRECONDITION" });
    }
  });

  it("refuses a child job name with a slash, before dialling anything", async () => {
    const ctx = createIrisContext(identity, {});
    await expect(ctx.submitChild({ name: "a/b", entrypoint: { command: ["true"] } })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });

  it("creates its client on first use, once, scoped to the job and its user", () => {
    const ctx = createIrisContext({ ...identity, authToken: "tok" }, {});
    const client = ctx.client;
    expect(ctx.client).toBe(client);
    expect(client.address).toBe("127.0.0.1:1");
    expect(client.scopeJob).toBe("/alice/train");
    expect(client.user).toBe("alice");
    client.close();
  });
});

describe("the context of a task process", () => {
  it("is built lazily from the IRIS_* environment, once", async () => {
    for (const [k, v] of Object.entries(buildTaskEnv(identity, {}, {}))) vi.stubEnv(k, v);
    const fresh = await import("./context.ts");
    const ctx = fresh.getIrisCtx();
    expect(ctx).toMatchObject({ jobId: "/alice/train", taskIndex: 1, attempt: 3, workerId: "w-7" });
    expect(fresh.getIrisCtx()).toBe(ctx);
    expect(fresh.irisCtx().getPort("coordinator")).toBe(41000);
  });

  it("fails naming the variable when the environment is incomplete", async () => {
    for (const [k, v] of Object.entries(buildTaskEnv(identity, {}, {}))) vi.stubEnv(k, v);
    vi.stubEnv("IRIS_NUM_TASKS", "zero");
    const fresh = await import("./context.ts");
    expect(() => fresh.getIrisCtx()).toThrow(/IRIS_NUM_TASKS: expected an integer ≥ 1, got "zero"/);
  });
});
