// End-to-end on a LocalCluster: module entrypoints' return values recorded with their attempts
// and read with Job.results(); non-retryable failures (APP_ERROR) shown by the real `iris` CLI.
import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IrisClient } from "./client/irisClient.ts";
import { IrisError } from "./errors.ts";
import { RESULT_TASKS } from "./testkit/resultTasks.ts";
import { LocalCluster } from "./localCluster.ts";
import { MAX_TASK_RESULT_BYTES } from "./taskResult.ts";
import { SOURCE_LOADER } from "./process/sourceLoader.ts";

const TOKEN = "results-token";
const MAIN = path.join(import.meta.dirname, "cli", "main.ts");

/** Runs the real `iris` CLI against the cluster. */
function irisCli(address: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env = { ...process.env, IRIS_CONTROLLER_ADDRESS: address, IRIS_AUTH_TOKEN: TOKEN };
    const child = spawn(process.execPath, ["--import", SOURCE_LOADER, MAIN, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("task results and APP_ERROR (LocalCluster)", () => {
  let cluster: LocalCluster;
  let client: IrisClient;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ workers: 1, token: TOKEN, workerCpuMillis: 4000 });
    client = cluster.client;
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("gives each task's return value to Job.results() and to its TaskStatus", async () => {
    const job = await client.submit({
      name: "echo",
      entrypoint: { module: RESULT_TASKS, export: "echo", args: { tag: "hi" } },
      replicas: 3,
      resources: { cpuMillis: 500 },
    });
    const st = await job.wait({ timeoutMs: 60_000 });
    expect(st.state).toBe("SUCCEEDED");
    expect(await job.results()).toEqual([0, 1, 2].map((index) => ({ tag: "hi", index, attempt: 1 })));
    expect(st.tasks[1]!.result).toEqual({ tag: "hi", index: 1, attempt: 1 });
    expect(st.tasks[1]!.attempts[0]!.result).toEqual({ tag: "hi", index: 1, attempt: 1 });
  });

  it("gives undefined for a task that returned nothing", async () => {
    const job = await client.submit({ name: "nothing", entrypoint: { module: RESULT_TASKS, export: "nothing" }, resources: { cpuMillis: 500 } });
    expect((await job.wait({ timeoutMs: 60_000 })).state).toBe("SUCCEEDED");
    const results = await job.results();
    expect(results).toHaveLength(1);
    expect(results[0]).toBeUndefined();
  });

  it("ends a non-retryable throw as APP_ERROR after one attempt, with retries left, shown by the CLI", async () => {
    const job = await client.submit({
      name: "refuse",
      entrypoint: { module: RESULT_TASKS, export: "refuse", args: { why: "bad input" } },
      maxRetriesFailure: 3,
      resources: { cpuMillis: 500 },
    });
    const st = await job.wait({ timeoutMs: 60_000 });
    expect(st.state).toBe("FAILED");
    const t = st.tasks[0]!;
    expect(t.attempts).toHaveLength(1);
    expect(t).toMatchObject({ state: "FAILED", failureKind: "APP_ERROR", errorCode: "INVALID_ARGUMENT", error: "refused: bad input" });
    expect(t.attempts[0]).toMatchObject({ failureKind: "APP_ERROR", errorCode: "INVALID_ARGUMENT", error: "refused: bad input" });
    expect(st.error).toBe(`task ${job.name}/0 failed: APP_ERROR(INVALID_ARGUMENT): refused: bad input`);
    // The stack is in the task's stderr log.
    const stderr: string[] = [];
    for await (const e of job.logs()) if (e.stream === "stderr") stderr.push(e.line);
    expect(stderr[0]).toBe("IrisError: refused: bad input");
    expect(stderr.some((l) => l.includes("resultTasks.ts"))).toBe(true);

    const results = job.results();
    await expect(results).rejects.toBeInstanceOf(IrisError);
    await expect(results).rejects.toMatchObject({ code: "FAILED_PRECONDITION", message: expect.stringContaining(`job ${job.name}`) });
    await expect(results).rejects.toMatchObject({ message: expect.stringContaining("is FAILED") });

    const cli = await irisCli(cluster.address, ["job", "status", job.name]);
    expect(cli.code).toBe(0);
    expect(cli.stdout.split("\n")[0]).toBe("FAILED");
    expect(cli.stdout).toMatch(/APP_ERROR\(INVALID_ARGUMENT\)/);
    expect(cli.stdout).toContain("refused: bad input");
    const json = await irisCli(cluster.address, ["job", "status", job.name, "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ tasks: [{ failureKind: "APP_ERROR", errorCode: "INVALID_ARGUMENT" }] });
  });

  it("shows APP_ERROR with its code and message in `iris job run`'s failure output", async () => {
    const cli = await irisCli(cluster.address, [
      "job",
      "run",
      "--name",
      "cli-refuse",
      "--max-retries",
      "2",
      "--cpu",
      "500m",
      "--module",
      RESULT_TASKS,
      "--export",
      "refuse",
      "--args",
      '{"why":"from the CLI"}',
    ]);
    expect(cli.code).toBe(1);
    expect(cli.stdout.split("\n")[0]).toMatch(/\/cli-refuse$/);
    expect(cli.stderr).toMatch(/cli-refuse FAILED: task \S+\/0 failed: APP_ERROR\(INVALID_ARGUMENT\): refused: from the CLI/);
    // With a token the controller places the bare name under the token's user (the shorthand's
    // is "admin"): follow the name the CLI printed.
    const st = await client.job(cli.stdout.split("\n")[0]!).status();
    expect(st.tasks[0]!.attempts).toHaveLength(1);
  });

  it("still retries a plain throw (APP_EXIT) within the failure budget", async () => {
    const job = await client.submit({
      name: "flaky",
      entrypoint: { module: RESULT_TASKS, export: "flaky", args: { okFrom: 2 } },
      maxRetriesFailure: 2,
      resources: { cpuMillis: 500 },
    });
    const st = await job.wait({ timeoutMs: 60_000 });
    expect(st.state).toBe("SUCCEEDED");
    expect(st.tasks[0]!.attempts.map((a) => [a.state, a.failureKind ?? "", a.exitCode])).toEqual([
      ["FAILED", "APP_EXIT", 1],
      ["SUCCEEDED", "", 0],
    ]);
    expect(await job.results()).toEqual(["recovered"]);
  });

  it("fails a result over MAX_TASK_RESULT_BYTES as RESULT_TOO_LARGE, and one that is not JSON as RESULT_NOT_JSON", async () => {
    const big = await client.submit({
      name: "big",
      entrypoint: { module: RESULT_TASKS, export: "big", args: { bytes: MAX_TASK_RESULT_BYTES } },
      maxRetriesFailure: 2,
      resources: { cpuMillis: 500 },
    });
    const notJson = await client.submit({
      name: "bigint",
      entrypoint: { module: RESULT_TASKS, export: "bigint" },
      maxRetriesFailure: 2,
      resources: { cpuMillis: 500 },
    });
    // Exactly at the limit is fine: the JSON text of a string of MAX - 2 characters is MAX bytes.
    const fits = await client.submit({
      name: "fits",
      entrypoint: { module: RESULT_TASKS, export: "big", args: { bytes: MAX_TASK_RESULT_BYTES - 2 } },
      resources: { cpuMillis: 500 },
    });
    const bigSt = await big.wait({ timeoutMs: 60_000 });
    expect(bigSt.state).toBe("FAILED");
    expect(bigSt.tasks[0]!.attempts).toHaveLength(1);
    expect(bigSt.tasks[0]).toMatchObject({ failureKind: "APP_ERROR", errorCode: "RESULT_TOO_LARGE" });
    expect(bigSt.tasks[0]!.error).toContain(`${MAX_TASK_RESULT_BYTES + 2} bytes`);
    expect(bigSt.tasks[0]!.error).toContain(`limit is ${MAX_TASK_RESULT_BYTES} bytes`);

    const njSt = await notJson.wait({ timeoutMs: 60_000 });
    expect(njSt.state).toBe("FAILED");
    expect(njSt.tasks[0]!.attempts).toHaveLength(1);
    expect(njSt.tasks[0]).toMatchObject({ failureKind: "APP_ERROR", errorCode: "RESULT_NOT_JSON" });
    expect(njSt.tasks[0]!.error).toMatch(/BigInt/);

    expect((await fits.wait({ timeoutMs: 60_000 })).state).toBe("SUCCEEDED");
    const [value] = await fits.results();
    expect(typeof value === "string" && value.length).toBe(MAX_TASK_RESULT_BYTES - 2);
  });
});
