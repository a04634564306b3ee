// The Slurm provider's pure parts: squeue parsing, time limits, the sbatch arguments and the batch
// script (the real commands run in slurmProvider.e2e.test.ts).
import { describe, expect, it } from "vitest";
import type { ProviderStartRequest } from "./provider.ts";
import { batchScript, parseSqueue, sbatchArgs, sbatchEnv, slurmTimeLimitSeconds, warningSeconds } from "./slurmProvider.ts";

const req = (slurm: Partial<NonNullable<ProviderStartRequest["group"]["slurm"]>> = {}): ProviderStartRequest => ({
  group: {
    name: "gpu",
    provider: "slurm",
    minWorkers: 0,
    maxWorkers: 2,
    idleTimeoutMs: 1,
    bootTimeoutMs: 1,
    priority: 0,
    worker: { cpuMillis: 2500, memoryBytes: 8 * 1024 ** 3, devices: { gpu: 2 }, attributes: {} },
    slurm: { partition: "main", extraArgs: [], setup: [], ...slurm },
  },
  workerId: "w-1",
  controllerAddress: "login1:7070",
  credentialFile: "/state/creds/w-1",
  stateDir: "/state",
});

describe("slurm provider parts", () => {
  it("parses squeue rows; a comment may hold the separator; blank and short lines are skipped", () => {
    expect(parseSqueue("812|iris-cpu|PENDING|Resources|iris:abc:w-1\n\n813|iris-cpu|RUNNING|None|iris:abc:a|b\nbroken\n")).toEqual([
      { id: "812", name: "iris-cpu", state: "PENDING", reason: "Resources", comment: "iris:abc:w-1" },
      { id: "813", name: "iris-cpu", state: "RUNNING", reason: "None", comment: "iris:abc:a|b" },
    ]);
  });

  it("reads Slurm time limits in all their forms", () => {
    expect(slurmTimeLimitSeconds("90")).toBe(5400);
    expect(slurmTimeLimitSeconds("1:30")).toBe(90);
    expect(slurmTimeLimitSeconds("08:00:00")).toBe(8 * 3600);
    expect(slurmTimeLimitSeconds("2-12")).toBe(60 * 3600);
    expect(slurmTimeLimitSeconds("1-00:30")).toBe(24 * 3600 + 1800);
    expect(slurmTimeLimitSeconds("1-00:00:10")).toBe(86410);
    expect(slurmTimeLimitSeconds("UNLIMITED")).toBeUndefined();
    expect(warningSeconds("1")).toBe(30);
    expect(warningSeconds("08:00:00")).toBe(300);
    expect(warningSeconds("8")).toBe(120);
    expect(warningSeconds(undefined)).toBe(300);
  });

  it("builds sbatch's arguments from the group: name, comment, shape, partition, account, qos, limit, gres, extra args; a short environment", () => {
    const args = sbatchArgs(req({ account: "proj", qos: "high", timeLimit: "1:00:00", extraArgs: ["--constraint=a100"] }), {
      comment: "iris:abc:w-1",
      logFile: "/state/logs/slurm-gpu-%j.log",
    });
    expect(args).toEqual([
      "--parsable",
      "--job-name=iris-gpu",
      "--comment=iris:abc:w-1",
      "--output=/state/logs/slurm-gpu-%j.log",
      "--error=/state/logs/slurm-gpu-%j.log",
      "--open-mode=append",
      "--nodes=1",
      "--ntasks=1",
      "--cpus-per-task=3",
      "--mem=8192M",
      "--partition=main",
      "--signal=B:USR1@300",
      "--no-requeue",
      "--export=ALL",
      "--account=proj",
      "--qos=high",
      "--time=1:00:00",
      "--gres=gpu:2",
      "--constraint=a100",
    ]);
  });

  it("runs sbatch (whose environment the job inherits) with the listed variables and Slurm's own only", () => {
    expect(
      sbatchEnv({ PATH: "/bin", HOME: "/root", IRIS_TOKEN: "secret", AWS_SECRET_ACCESS_KEY: "k", SLURM_CONF: "/etc/slurm.conf", SBATCH_PARTITION: "p", NODE_OPTIONS: "--x" }),
    ).toEqual({
      PATH: "/bin",
      HOME: "/root",
      SLURM_CONF: "/etc/slurm.conf",
      SBATCH_PARTITION: "p",
      NODE_OPTIONS: "--x",
    });
  });

  it("writes a batch script that runs the setup lines, then execs the worker with quoted arguments", () => {
    const script = batchScript(req({ setup: ["module load nodejs/20"] }), ["/usr/bin/node", "/opt/iris/bin/iris.mjs", "worker", "--attr", "note=it's here"], {
      PATH: "/bin:/usr/bin",
      IRIS_TOKEN: "secret",
      NODE_OPTIONS: "--max-old-space-size=4096 --conditions=x",
    });
    const lines = script.split("\n");
    // Only the listed variables, never the rest of the controller's environment.
    expect(lines.filter((l) => l.startsWith("export "))).toEqual(["export PATH=/bin:/usr/bin", "export NODE_OPTIONS='--max-old-space-size=4096 --conditions=x'"]);
    expect(script).not.toContain("secret");
    expect(lines[0]).toBe("#!/bin/bash");
    expect(lines.indexOf("module load nodejs/20")).toBeLessThan(lines.findIndex((l) => l.startsWith("exec ")));
    expect(lines.find((l) => l.startsWith("exec "))).toBe(`exec /usr/bin/node /opt/iris/bin/iris.mjs worker --attr 'note=it'\\''s here'`);
  });
});
