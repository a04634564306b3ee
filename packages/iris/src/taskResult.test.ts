// Tests of the task result contract: encoding, size limit, the non-retryable marker, report files.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { IrisError } from "./errors.ts";
import { appErrorOf, encodeTaskResult, MAX_TASK_RESULT_BYTES, readRunnerReport, writeRunnerReport } from "./taskResult.ts";

describe("encodeTaskResult", () => {
  it("gives JSON text, and nothing for undefined", () => {
    expect(encodeTaskResult({ a: [1, "é"] })).toEqual({ resultJson: '{"a":[1,"é"]}' });
    expect(encodeTaskResult(null)).toEqual({ resultJson: "null" });
    expect(encodeTaskResult(undefined)).toBeUndefined();
  });

  it("counts UTF-8 bytes against the limit", () => {
    // "é" is 2 bytes of UTF-8: half the limit in characters, plus the quotes, is over it.
    const over = encodeTaskResult("é".repeat(MAX_TASK_RESULT_BYTES / 2));
    expect(over).toMatchObject({ appError: { code: "RESULT_TOO_LARGE" } });
    expect(over && "appError" in over && over.appError.message).toContain(`${MAX_TASK_RESULT_BYTES + 2} bytes`);
    expect(encodeTaskResult("é".repeat(MAX_TASK_RESULT_BYTES / 2 - 1))).toHaveProperty("resultJson");
  });

  it("refuses BigInt, cycles and functions as RESULT_NOT_JSON", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const v of [{ n: 1n }, cycle, () => 1]) expect(encodeTaskResult(v)).toMatchObject({ appError: { code: "RESULT_NOT_JSON" } });
  });
});

describe("appErrorOf", () => {
  it("recognises the non-retryable marker and nothing else", () => {
    expect(appErrorOf(new IrisError("NOT_FOUND", "gone", { retryable: false }))).toEqual({ code: "NOT_FOUND", message: "gone" });
    expect(appErrorOf({ retryable: false, code: "MISMATCH", message: "fingerprint changed" })).toEqual({ code: "MISMATCH", message: "fingerprint changed" });
    expect(appErrorOf(new IrisError("NOT_FOUND", "gone"))).toBeUndefined();
    expect(appErrorOf(new Error("plain"))).toBeUndefined();
    expect(appErrorOf({ retryable: false })).toBeUndefined();
    expect(appErrorOf("retryable")).toBeUndefined();
  });
});

describe("runner reports", () => {
  it("round-trips through a file and reads a missing or foreign file as none", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-report-"));
    const file = path.join(dir, "result.json");
    expect(readRunnerReport(file)).toBeUndefined();
    writeRunnerReport(file, { appError: { code: "X", message: "m" } });
    expect(readRunnerReport(file)).toEqual({ appError: { code: "X", message: "m" } });
    fs.writeFileSync(file, '{"other":1}');
    expect(readRunnerReport(file)).toBeUndefined();
    fs.rmSync(dir, { recursive: true });
  });
});
