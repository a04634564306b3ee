// Sink options checked at the boundary (zod): bad values and unknown options fail before anything runs.
import { describe, expect, it } from "vitest";
import { fromList } from "../index.ts";
import { ZephyrError } from "../errors.ts";
import type { DatasetRunOptions } from "./contracts.ts";

async function failure(options: unknown): Promise<ZephyrError> {
  const err = await fromList([1, 2, 3])
    .count(options as DatasetRunOptions)
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ZephyrError);
  expect((err as ZephyrError).code).toBe("INVALID_ARGUMENT");
  return err as ZephyrError;
}

describe("sink options", () => {
  it("name the bad field by its path and the value given", async () => {
    expect((await failure({ backend: "inline", threads: 0 })).message).toBe("threads: expected a positive integer, got 0");
    expect((await failure({ backend: "inline", maxShardRetries: -1 })).message).toBe("maxShardRetries: expected a non-negative integer, got -1");
    expect((await failure({ backend: "inline", memoryBudgetBytes: Number.NaN })).message).toMatch(/^memoryBudgetBytes: expected a positive number, got NaN$/);
    expect((await failure({ backend: "inline", iris: { cpuMillis: -5 } })).message).toBe("iris.cpuMillis: expected a positive integer, got -5");
    expect((await failure({ backend: "gpu" })).message).toBe('backend: expected "inline", "threads" or "iris", got "gpu"');
    expect((await failure({ backend: "inline", progress: "yes" })).message).toBe('progress: expected true or false, got "yes"');
  });

  it("refuse unknown options (a misspelt skipExisting would otherwise be ignored)", async () => {
    const err = await fromList([1])
      .writeJsonl("/nonexistent-zephyr-dir/x.jsonl", { backend: "inline", skipExisitng: true } as never)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ZephyrError);
    expect((err as Error).message).toMatch(/^unknown option "skipExisitng" \(known: .*skipExisting/);
    expect((await failure({ backend: "inline", iris: { adress: "x" } })).message).toMatch(/^iris: unknown option "adress"/);
  });

  it("accept every documented option", async () => {
    const { count, stats } = await fromList([1, 2, 3]).count({
      backend: "inline",
      threads: 2,
      maxShardRetries: 0,
      memoryBudgetBytes: 1 << 20,
      progress: false,
      iris: { jobPrefix: "z", cpuMillis: 500 },
      withStats: true,
    });
    expect(count).toBe(3);
    expect(stats.backend).toBe("inline");
  });
});
