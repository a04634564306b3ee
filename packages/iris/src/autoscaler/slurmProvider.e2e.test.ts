// The Slurm provider against a real Slurm (testkit/slurm.ts) and a real controller: a
// worker is one batch job named iris-<group> with this cluster's comment, registers under the id
// it was given with the credential from its 0600 file (never in argv, the job's environment or
// `scontrol show job`), and runs tasks; `scancel` mid-task hands the attempt back PREEMPTED (the
// failure budget, 0 here, untouched); a short time limit makes the worker drain before Slurm kills
// it; a provider on the same state directory adopts the jobs and another cluster's sees none;
// sbatch's refusal carries Slurm's own message.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { Controller } from "../controller/controller.ts";
import { skipUnlessSlurm, startSlurm, type TestSlurm } from "../testkit/slurm.ts";
import { until } from "../testkit/processes.ts";
import type { ScaleGroupConfig } from "./provider.ts";
import { SlurmProvider } from "./slurmProvider.ts";

const skip = skipUnlessSlurm("the Slurm provider tests");
const TOKEN = "slurm-provider-test-secret-4f1c";

function group(over: Partial<ScaleGroupConfig["slurm"]> = {}, name = "cpu"): ScaleGroupConfig {
  return {
    name,
    provider: "slurm",
    minWorkers: 0,
    maxWorkers: 4,
    idleTimeoutMs: 60_000,
    bootTimeoutMs: 120_000,
    priority: 0,
    worker: { cpuMillis: 1000, memoryBytes: 512 * 1024 * 1024, devices: {}, attributes: { pool: "slurm" } },
    slurm: { partition: "main", extraArgs: [], setup: ["export IRIS_SETUP_RAN=1"], ...over },
  };
}

describe.skipIf(skip)("SlurmProvider on a real Slurm", () => {
  let slurm: TestSlurm;
  let dir: string;
  let controller: Controller;
  let client: IrisClient;
  let provider: SlurmProvider;
  let credentialFile: string;
  let n = 0;

  beforeAll(async () => {
    slurm = await startSlurm();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-slurmprov-"));
    controller = await Controller.start({ host: "127.0.0.1", port: 0, dbPath: path.join(dir, "iris.sqlite"), token: TOKEN, workerTimeoutMs: 10_000 });
    client = IrisClient.connect(controller.address, { token: TOKEN });
    provider = new SlurmProvider({ stateDir: dir, env: slurm.env });
    credentialFile = path.join(dir, "credential");
    fs.writeFileSync(credentialFile, `${TOKEN}\n`, { mode: 0o600 });
  });
  afterAll(async () => {
    client?.close();
    await slurm?.stop();
    await controller?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const startWorker = async (g = group()): Promise<{ jobId: string; workerId: string }> => {
    const workerId = `slurm-w${++n}-${process.pid}`;
    const w = await provider.start({ group: g, workerId, controllerAddress: controller.address, credentialFile, stateDir: dir });
    expect(w).toMatchObject({ group: g.name, workerId, state: "pending" });
    await until(`worker ${workerId} to register`, async () => (await client.listWorkers()).some((x) => x.workerId === workerId), 90_000);
    return { jobId: w.providerId, workerId };
  };

  it("a worker is a batch job named iris-<group> with the cluster's comment; it registers under its id and runs a task; the credential is in no argv, environment or job record", async () => {
    const { jobId, workerId } = await startWorker();
    const row = slurm.jobs().find((j) => j.id === jobId);
    expect(row).toMatchObject({ name: "iris-cpu", state: "RUNNING", comment: `iris:${provider.clusterId}:${workerId}` });
    const listed = await provider.list();
    expect(listed).toContainEqual(expect.objectContaining({ providerId: jobId, workerId, group: "cpu", state: "running" }));
    const worker = (await client.listWorkers()).find((x) => x.workerId === workerId)!;
    expect(worker.attributes).toMatchObject({ pool: "slurm", "iris.group": "cpu" });

    const job = await client.submit({
      name: "on-slurm",
      entrypoint: { command: ["sh", "-c", "echo ran in slurm job $SLURM_JOB_ID"] },
      constraints: [{ key: "pool", op: "EQ", value: "slurm" }],
    });
    const st = await job.wait({ timeoutMs: 60_000 });
    expect(st.state).toBe("SUCCEEDED");
    expect(st.tasks[0]!.attempts).toHaveLength(1);
    expect(st.tasks[0]!.workerId).toBe(workerId);

    // Slurm's record of the job, the worker's argv and its environment never hold the credential.
    expect(slurm.cmd("scontrol", ["show", "job", jobId])).not.toContain(TOKEN);
    const pids = fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p));
    const workerProcs = pids.filter((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/cmdline`, "utf8").includes(workerId);
      } catch {
        return false;
      }
    });
    expect(workerProcs.length).toBeGreaterThan(0);
    for (const p of workerProcs) {
      expect(fs.readFileSync(`/proc/${p}/cmdline`, "utf8")).not.toContain(TOKEN);
      expect(fs.readFileSync(`/proc/${p}/environ`, "utf8")).not.toContain(TOKEN);
      expect(fs.readFileSync(`/proc/${p}/environ`, "utf8")).toContain("IRIS_SETUP_RAN=1");
    }
    // Its output goes to a log under the state directory.
    const log = path.join(dir, "logs", `slurm-cpu-${jobId}.log`);
    expect(fs.readFileSync(log, "utf8")).toContain(`iris: worker ${workerId} starting in slurm job ${jobId}`);

    await provider.stop(jobId);
    await until("the worker to leave", async () => !(await client.listWorkers()).some((x) => x.workerId === workerId), 60_000);
    await until("the job to leave squeue's live states", async () => (await provider.list()).every((w) => w.providerId !== jobId || w.state === "ended"), 60_000);
    await provider.stop(jobId); // already gone: no error
  });

  it("scancel of a worker's job mid-task: the attempt ends PREEMPTED and reruns elsewhere; the failure budget (0) is untouched", async () => {
    const first = await startWorker();
    const marker = path.join(dir, "scancel-started");
    const job = await client.submit({
      name: "survives-scancel",
      entrypoint: { command: ["sh", "-c", `if [ "$IRIS_ATTEMPT" = 1 ]; then touch ${marker}; exec sleep 120; fi; echo second`] },
      constraints: [{ key: "pool", op: "EQ", value: "slurm" }],
      maxRetriesFailure: 0,
    });
    await until("attempt 1 to run", () => fs.existsSync(marker), 60_000);
    slurm.cmd("scancel", [first.jobId]);
    await until("the first worker to leave", async () => !(await client.listWorkers()).some((x) => x.workerId === first.workerId), 60_000);
    const second = await startWorker();
    const st = await job.wait({ timeoutMs: 90_000 });
    expect(st.state).toBe("SUCCEEDED");
    const attempts = st.tasks[0]!.attempts;
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toMatchObject({ workerId: first.workerId, state: "PREEMPTED", failureKind: "PREEMPTED" });
    expect(attempts[1]).toMatchObject({ workerId: second.workerId, state: "SUCCEEDED" });
    await provider.stop(second.jobId);
    await until("the second worker to leave", async () => !(await client.listWorkers()).some((x) => x.workerId === second.workerId), 60_000);
  });

  it("a short time limit: Slurm's warning signal makes the worker hand its attempt back and leave before the limit", async () => {
    const { jobId, workerId } = await startWorker(group({ timeLimit: "1" }));
    const job = await client.submit({
      name: "outlives-limit",
      entrypoint: { command: ["sleep", "600"] },
      constraints: [{ key: "pool", op: "EQ", value: "slurm" }],
      maxRetriesFailure: 0,
    });
    await until("the attempt to run on the short worker", async () => (await job.status()).tasks[0]?.attempts[0]?.workerId === workerId, 60_000);
    await until("the worker to drain and leave", async () => !(await client.listWorkers()).some((x) => x.workerId === workerId), 150_000);
    const a = (await job.status()).tasks[0]!.attempts[0]!;
    expect(a).toMatchObject({ state: "PREEMPTED", failureKind: "PREEMPTED" });
    const log = fs.readFileSync(path.join(dir, "logs", `slurm-cpu-${jobId}.log`), "utf8");
    expect(log).toContain("the time limit is near (SIGUSR1)");
    // The job ended by itself (COMPLETED), not by the limit (TIMEOUT).
    await until("the Slurm job to end", () => /COMPLETED|TIMEOUT|CANCELLED|FAILED/.test(slurm.jobs().find((j) => j.id === jobId)?.state ?? ""), 90_000);
    expect(slurm.jobs().find((j) => j.id === jobId)?.state).toBe("COMPLETED");
    await job.terminate();
  }, 240_000);

  it("a provider on the same state directory lists (adopts) the jobs; another cluster's provider sees none of them", async () => {
    const { jobId, workerId } = await startWorker();
    const again = new SlurmProvider({ stateDir: dir, env: slurm.env });
    expect(again.clusterId).toBe(provider.clusterId);
    expect((await again.list()).filter((w) => w.state !== "ended")).toEqual([expect.objectContaining({ providerId: jobId, workerId, group: "cpu", state: "running" })]);
    const otherDir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-slurmprov-other-"));
    try {
      const other = new SlurmProvider({ stateDir: otherDir, env: slurm.env });
      expect(other.clusterId).not.toBe(provider.clusterId);
      expect(await other.list()).toEqual([]);
    } finally {
      fs.rmSync(otherDir, { recursive: true, force: true });
    }
    await again.stop(jobId);
    await until("the worker to leave", async () => !(await client.listWorkers()).some((x) => x.workerId === workerId), 60_000);
  });

  it("sbatch refusing (an unknown partition) rejects with Slurm's own message; a pending job shows squeue's reason", async () => {
    await expect(
      provider.start({ group: group({ partition: "nosuchpart" }), workerId: "never", controllerAddress: controller.address, credentialFile, stateDir: dir }),
    ).rejects.toThrow(/sbatch: .*invalid partition/i);
    // A group asking for more than the node has stays PENDING with Slurm's reason.
    const big = group({ extraArgs: ["--hold"] }, "held");
    const w = await provider.start({ group: big, workerId: "held-1", controllerAddress: controller.address, credentialFile, stateDir: dir });
    const listed = await until("the held job to be listed", async () => (await provider.list()).find((x) => x.providerId === w.providerId && x.detail?.includes("PENDING:")));
    expect(listed).toMatchObject({ state: "pending", group: "held", workerId: "held-1" });
    expect(listed.detail).toMatch(new RegExp(`^slurm job ${w.providerId} PENDING: \\w+`));
    await provider.stop(w.providerId);
  });

  it("refuses a credential file others can read", async () => {
    const loose = path.join(dir, "loose-credential");
    fs.writeFileSync(loose, TOKEN, { mode: 0o644 });
    fs.chmodSync(loose, 0o644);
    await expect(provider.start({ group: group(), workerId: "loose", controllerAddress: controller.address, credentialFile: loose, stateDir: dir })).rejects.toThrow(
      /readable by its owner only/,
    );
  });
});
