// Tests of building and parsing the task environment.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { IrisError } from "../errors.ts";
import { buildTaskEnv, parseJobEnv, parseTaskEnv, portEnvName, type TaskIdentity } from "./taskEnv.ts";

const identity: TaskIdentity = {
  controllerAddress: "127.0.0.1:7000",
  authToken: "s3cret",
  jobId: "/alice/train",
  taskId: "/alice/train/2",
  taskIndex: 2,
  numTasks: 4,
  attempt: 3,
  workerId: "w-1",
  advertiseHost: "127.0.0.1",
  ports: { coordinator: 40001, "http-api": 40002 },
};

describe("portEnvName", () => {
  it("upper-cases the name and replaces characters an env name cannot hold", () => {
    expect(portEnvName("coordinator")).toBe("IRIS_PORT_COORDINATOR");
    expect(portEnvName("http-api.v2")).toBe("IRIS_PORT_HTTP_API_V2");
  });
});

describe("buildTaskEnv", () => {
  it("sets the IRIS_* contract, one variable per named port", () => {
    const env = buildTaskEnv(identity, {}, {});
    expect(env).toEqual({
      IRIS_CONTROLLER_ADDRESS: "127.0.0.1:7000",
      IRIS_AUTH_TOKEN: "s3cret",
      IRIS_JOB_ID: "/alice/train",
      IRIS_TASK_ID: "/alice/train/2",
      IRIS_TASK_INDEX: "2",
      IRIS_NUM_TASKS: "4",
      IRIS_ATTEMPT: "3",
      IRIS_WORKER_ID: "w-1",
      IRIS_ADVERTISE_HOST: "127.0.0.1",
      IRIS_JOB_ENV_KEYS: "[]",
      IRIS_PORT_COORDINATOR: "40001",
      IRIS_PORT_HTTP_API: "40002",
    });
  });

  it("layers the worker env, then the job env, then IRIS_* (which a job cannot override)", () => {
    const env = buildTaskEnv(
      { ...identity, authToken: undefined },
      { A: "job", IRIS_TASK_ID: "forged", IRIS_AUTH_TOKEN: "forged" },
      { A: "worker", B: "worker", IRIS_PORT_STALE: "1", IRIS_AUTH_TOKEN: "worker-token" },
    );
    expect(env.A).toBe("job");
    expect(env.B).toBe("worker");
    expect(env.IRIS_TASK_ID).toBe("/alice/train/2");
    expect(env.IRIS_PORT_STALE).toBeUndefined();
    // Without a token of its own the worker passes none: neither its env's nor the job's.
    expect(env.IRIS_AUTH_TOKEN).toBeUndefined();
  });

  it("sets the controller's IRIS_GANG_SECRET for this attempt, and never hands it on to child jobs", () => {
    const env = buildTaskEnv(identity, { A: "job", IRIS_GANG_SECRET: "round-3" }, {});
    expect(env.IRIS_GANG_SECRET).toBe("round-3");
    expect(parseJobEnv(env)).toEqual({ A: "job" });
    expect(buildTaskEnv(identity, {}, { IRIS_GANG_SECRET: "inherited" }).IRIS_GANG_SECRET).toBeUndefined();
  });
});

describe("parseJobEnv", () => {
  it("reads back the job's own env (not the worker's), for child jobs to inherit", () => {
    const env = buildTaskEnv(identity, { TEAM: "blue", IRIS_X: "y" }, { HOME: "/root" });
    expect(parseJobEnv(env)).toEqual({ TEAM: "blue", IRIS_X: "y" });
  });

  it("names the job's variables instead of copying their values, and leaves out those iris overrides", () => {
    const big = "x".repeat(100_000);
    const env = buildTaskEnv(identity, { BIG: big, IRIS_TASK_ID: "forged" }, {});
    expect(env.IRIS_JOB_ENV_KEYS).toBe('["BIG"]');
    expect(Object.values(env).filter((v) => v.includes(big))).toHaveLength(1);
    expect(parseJobEnv(env)).toEqual({ BIG: big });
  });

  it("is empty when the variable is absent or malformed", () => {
    expect(parseJobEnv({})).toEqual({});
    expect(parseJobEnv({ IRIS_JOB_ENV_KEYS: "{}" })).toEqual({});
    expect(parseJobEnv({ IRIS_JOB_ENV_KEYS: "[nope" })).toEqual({});
    expect(parseJobEnv({ IRIS_JOB_ENV_KEYS: '["A", 2, "MISSING"]', A: "1" })).toEqual({ A: "1" });
  });
});

describe("parseTaskEnv", () => {
  it("is undefined outside a task", () => {
    expect(parseTaskEnv({ PATH: "/bin" })).toBeUndefined();
  });

  it("reads back what buildTaskEnv wrote (ports keyed by their env spelling)", () => {
    const parsed = parseTaskEnv(buildTaskEnv(identity, {}, {}));
    expect(parsed).toEqual({ ...identity, ports: { COORDINATOR: 40001, HTTP_API: 40002 } });
  });

  it("round-trips any identity", () => {
    const arbIdentity = fc.record({
      controllerAddress: fc.constantFrom("127.0.0.1:1", "ctrl.example:443"),
      jobId: fc.stringMatching(/^\/[a-z]{1,8}\/[a-z0-9-]{1,12}$/),
      taskIndex: fc.nat(1000),
      numTasks: fc.integer({ min: 1, max: 1001 }),
      attempt: fc.integer({ min: 1, max: 50 }),
      workerId: fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !s.includes("\0")),
      advertiseHost: fc.constantFrom("127.0.0.1", "10.0.0.7"),
    });
    fc.assert(
      fc.property(arbIdentity, (id) => {
        const full: TaskIdentity = { ...id, taskId: `${id.jobId}/${id.taskIndex}`, ports: {} };
        expect(parseTaskEnv(buildTaskEnv(full, {}, {}))).toEqual(full);
      }),
    );
  });

  it("names the variable that is missing or malformed", () => {
    const env = buildTaskEnv(identity, {}, {});
    const broken = (patch: Record<string, string | undefined>): unknown => {
      try {
        parseTaskEnv({ ...env, ...patch });
      } catch (e) {
        return e;
      }
      return undefined;
    };
    const missing = broken({ IRIS_JOB_ID: undefined });
    expect(missing).toBeInstanceOf(IrisError);
    expect(missing).toMatchObject({ code: "FAILED_PRECONDITION" });
    expect((missing as Error).message).toMatch(/^IRIS_JOB_ID: /);
    expect((broken({ IRIS_TASK_INDEX: "-1" }) as Error).message).toMatch(/^IRIS_TASK_INDEX: expected an integer ≥ 0, got "-1"/);
    expect((broken({ IRIS_PORT_X: "99999" }) as Error).message).toMatch(/^IRIS_PORT_X: expected a TCP port/);
  });
});
