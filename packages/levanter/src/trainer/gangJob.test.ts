// gangPlacement: where a gang of n runs from inside an iris task — on the cluster when it has n
// workers or its autoscaler's groups could start them, else on an embedded local cluster.
import type { WorkerSummary } from "@marin/iris";
import { describe, expect, it } from "vitest";
import { LevanterError } from "../errors.ts";
import { gangPlacement } from "./gangJob.ts";

const worker = (workerId: string, state = "ALIVE"): WorkerSummary =>
  ({
    workerId,
    host: "h",
    state,
    attributes: {},
    runningAttempts: 0,
    lastSeenMs: 0,
    capacity: { cpuMillis: 1000, memoryBytes: 1 << 30, devices: {} },
  }) as WorkerSummary;

const group = (name: string, maxWorkers: number, workerIds: string[] = [], shape = { cpuMillis: 1000, memoryBytes: 512 << 20 }) => ({
  name,
  maxWorkers,
  worker: { ...shape, devices: {}, attributes: {} },
  workers: workerIds.map((workerId) => ({ workerId, providerId: "1", state: "ready", busy: true })),
});

describe("gangPlacement", () => {
  it("a cluster with a worker per rank takes the gang, whatever its autoscaler", () => {
    expect(gangPlacement(2, [worker("a"), worker("b")], undefined)).toMatchObject({ onCluster: true, reason: expect.stringMatching(/2 worker\(s\) for 2 ranks/) });
  });

  it("an autoscaled cluster from zero takes a gang a group could start beside the worker running this task", () => {
    const p = gangPlacement(2, [worker("w1")], { groups: [group("small", 1), group("cpu", 3, ["w1"])] }, { ownWorker: "w1" });
    expect(p.onCluster).toBe(true);
    expect(p.reason).toMatch(/autoscaler could start 2 in group cpu \(groups holding a rank: small \(max 1\), cpu \(max 3, this task's worker among them\)\)/);
  });

  it("the autoscaler starts a gang within one group, on workers holding nothing: this task's worker and other groups do not add up", () => {
    // At max 2 with this task busy on one of them, the group can give the gang only 1 worker.
    const p = gangPlacement(2, [worker("w1")], { groups: [group("cpu", 2, ["w1"])] }, { ownWorker: "w1" });
    expect(p.onCluster).toBe(false);
    expect(p.reason).toMatch(
      /1 worker\(s\) and no scale group could start 2 for the gang \(groups holding a rank: cpu \(max 2, this task's worker among them\)\): running the gang on an embedded local cluster/,
    );
    // Two groups of 1 each hold one rank, never the gang; a task running outside the groups leaves a max of 2 whole.
    expect(gangPlacement(2, [], { groups: [group("a", 1), group("b", 1)] }).onCluster).toBe(false);
    expect(gangPlacement(2, [worker("static")], { groups: [group("cpu", 2)] }, { ownWorker: "static" }).onCluster).toBe(true);
  });

  it("groups whose workers are too small for a rank's request do not count", () => {
    const status = { groups: [group("small", 8, [], { cpuMillis: 500, memoryBytes: 1 << 30 }), group("big", 1)] };
    const p = gangPlacement(2, [], status, { request: { cpuMillis: 1000 } });
    expect(p.onCluster).toBe(false);
    expect(p.reason).toMatch(/groups holding a rank: big \(max 1\)\)/);
    expect(gangPlacement(2, [], status, { request: { cpuMillis: 250 } }).onCluster).toBe(true);
  });

  it("without an autoscaler, fewer workers than ranks (marin's embedded cluster) means the embedded local cluster; lost workers do not count", () => {
    const p = gangPlacement(2, [worker("a"), worker("b", "LOST")], undefined);
    expect(p).toMatchObject({ onCluster: false });
    expect(p.reason).toMatch(/1 worker\(s\), fewer than 2 ranks, and no autoscaler/);
  });

  it("a cluster status it cannot read is an error naming it, not a guess", () => {
    expect(() => gangPlacement(2, [], { groups: [{ name: "x" }] })).toThrow(LevanterError);
    expect(() => gangPlacement(2, [], { groups: [{ name: "x" }] })).toThrow(/cluster status is not understood/);
  });
});
