import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { IrisClient, JobSpecInput, JobStatus } from "@marin/iris";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
    // A client whose job reports task 0 done while task 1 still runs, then writes both results.
    const client = {
      submit: async (spec: JobSpecInput) => ({
        name: spec.name,
        wait: async (opts: { onStatus?: (s: JobStatus) => void } = {}) => {
          opts.onStatus?.(status("RUNNING", ["SUCCEEDED", "RUNNING"]));
          doneDuringWait.push(done);
          const { resultDir } = (spec.entrypoint as { args: { resultDir: string } }).args;
          for (const i of [0, 1]) await writeFile(path.join(resultDir, `result-${i}.json`), JSON.stringify({ ok: true, result: { shard: i } }));
          const final = status("SUCCEEDED", ["SUCCEEDED", "SUCCEEDED"]);
          opts.onStatus?.(final);
          return final;
        },
      }),
    } as unknown as IrisClient;
    const backend = irisBackend({ origin: { url: import.meta.url, name: "p", args: {} }, identity: "f".repeat(64) }, { client }, scratch);
    const specs = [0, 1].map((shard) => ({ stageId: 0, shard, numShards: 2, attempt: 0 }) as unknown as TaskSpec);
    const results = await backend.runStage(plan.stages[0], specs, { maxRetries: 0, isRetryable: () => false, onRetry: () => undefined, onShardDone: () => void done++ });
    expect(doneDuringWait).toEqual([1]);
    expect(done).toBe(2);
    expect(results).toEqual([{ shard: 0 }, { shard: 1 }]);
    await backend.close();
  });
});
