// The iris backend against a scripted client: progress per task, results through Job.results(),
// and a task's APP_ERROR rethrown as the ZephyrError the task threw.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { IrisClient, JobSpecInput, JobStatus } from "@marin/iris";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ZephyrError } from "../errors.ts";
import { planStages } from "../plan/planner.ts";
import { irisBackend } from "./iris.ts";
import type { TaskSpec } from "./contracts.ts";

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), "zephyr-iris-unit-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const task = (index: number, state: string) => ({ taskId: `t${index}`, index, state, attempt: 1, attempts: [] });
const status = (state: JobStatus["state"], states: string[]): JobStatus => ({ name: "/u/j", instanceId: "1", state, tasks: states.map((s, i) => task(i, s)), submittedAtMs: 0 });

describe("the iris backend", () => {
  it("advances progress as each task succeeds, not only when the stage's job ends", async () => {
    const plan = planStages({ source: { kind: "list", items: [1, 2, 3], shards: 2 }, ops: [] });
    const doneDuringWait: number[] = [];
    let done = 0;
    // A client whose job reports task 0 done while task 1 still runs, then both, with their results.
    const client = {
      submit: async (spec: JobSpecInput) => ({
        name: spec.name,
        wait: async (opts: { onStatus?: (s: JobStatus) => void } = {}) => {
          opts.onStatus?.(status("RUNNING", ["SUCCEEDED", "RUNNING"]));
          doneDuringWait.push(done);
          const final = status("SUCCEEDED", ["SUCCEEDED", "SUCCEEDED"]);
          opts.onStatus?.(final);
          return final;
        },
        results: async () => [0, 1].map((shard) => ({ shard, output: { kind: "count", count: shard } })),
      }),
    } as unknown as IrisClient;
    const backend = irisBackend({ origin: { url: import.meta.url, name: "p", args: {} }, identity: "f".repeat(64) }, { client }, scratch);
    const specs = [0, 1].map((shard) => ({ stageId: 0, shard, numShards: 2, attempt: 0 }) as unknown as TaskSpec);
    const results = await backend.runStage(plan.stages[0], specs, { maxRetries: 0, isRetryable: () => false, onRetry: () => undefined, onShardDone: () => void done++ });
    expect(doneDuringWait).toEqual([1]);
    expect(done).toBe(2);
    expect(results).toEqual([0, 1].map((shard) => ({ shard, output: { kind: "count", count: shard } })));
    await backend.close();
  });

  const failedWith = (t: Partial<JobStatus["tasks"][number]>): IrisClient =>
    ({
      submit: async (spec: JobSpecInput) => ({
        name: spec.name,
        wait: async () => ({ ...status("FAILED", ["FAILED"]), tasks: [{ ...task(0, "FAILED"), ...t }] }),
        results: async () => {
          throw new Error("a failed job has no results");
        },
      }),
    }) as unknown as IrisClient;
  const runOne = (client: IrisClient) => {
    const plan = planStages({ source: { kind: "list", items: [1], shards: 1 }, ops: [] });
    const backend = irisBackend({ origin: { url: import.meta.url, name: "p", args: {} }, identity: "f".repeat(64) }, { client }, scratch);
    const spec = { stageId: 0, shard: 0, numShards: 1, attempt: 0 } as unknown as TaskSpec;
    return backend.runStage(plan.stages[0], [spec], { maxRetries: 2, isRetryable: () => true, onRetry: () => undefined, onShardDone: () => undefined });
  };

  it("rethrows a task's APP_ERROR as the ZephyrError it threw, code and message kept", async () => {
    const err = await runOne(failedWith({ failureKind: "APP_ERROR", errorCode: "BAD_RECORD", error: "bad.jsonl line 3: malformed JSON" })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as ZephyrError).code).toBe("BAD_RECORD");
    expect((err as ZephyrError).message).toBe("bad.jsonl line 3: malformed JSON");
  });

  it("reports any other failed job as SHARD_FAILED naming the job and the task's failure", async () => {
    const err = await runOne(failedWith({ failureKind: "APP_EXIT", error: "exit 1: disk full", attempt: 3 })).catch((e: unknown) => e);
    expect((err as ZephyrError).code).toBe("SHARD_FAILED");
    expect((err as ZephyrError).message).toMatch(/ended FAILED.*task 0: APP_EXIT exit 1: disk full/);
  });

  it("reports an APP_ERROR whose code is iris's own (a result over the cap) as SHARD_FAILED with that code", async () => {
    const err = await runOne(failedWith({ failureKind: "APP_ERROR", errorCode: "RESULT_TOO_LARGE", error: "the task's return value is 2000000 bytes of JSON" })).catch(
      (e: unknown) => e,
    );
    expect((err as ZephyrError).code).toBe("SHARD_FAILED");
    expect((err as ZephyrError).message).toMatch(/task 0: APP_ERROR\(RESULT_TOO_LARGE\) the task's return value is 2000000 bytes/);
  });
});
