// `iris cluster up` with a Slurm scale group on a real Slurm (testkit/slurm.ts): the
// controller runs as its own process (so it can be SIGKILLed), its workers as Slurm batch jobs.
// From zero a 3-task job makes the autoscaler submit jobs that register and run it, and after
// idleTimeout no iris job is left in squeue; scancel mid-task hands the attempt back PREEMPTED; a
// SIGKILLed controller restarted on the same database adopts its jobs without submitting again;
// a group at maxWorkers says so in the pending reason; a gang of 2 runs on 2 Slurm workers; a
// worker that cannot start is cancelled after bootTimeout and the group backs off.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { skipUnlessSlurm, startSlurm, type TestSlurm } from "../testkit/slurm.ts";
import { until } from "../testkit/processes.ts";
import type { ClusterStatus } from "./autoscaler.ts";
import { SOURCE_LOADER } from "../process/sourceLoader.ts";

const skip = skipUnlessSlurm("the Slurm cluster tests");
const HERE = path.dirname(fileURLToPath(import.meta.url));
const IRIS_CLI = path.join(HERE, "..", "cli", "main.ts");

interface Up {
  proc: ChildProcess;
  address: string;
  output(): string;
  exited: Promise<void>;
}

describe.skipIf(skip)("iris cluster up on a real Slurm", () => {
  let slurm: TestSlurm;
  let dir: string;
  const ups: Up[] = [];
  const clients: IrisClient[] = [];

  beforeAll(async () => {
    slurm = await startSlurm();
  });
  afterAll(async () => {
    await slurm?.stop();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const u of ups.splice(0)) {
      if (u.proc.exitCode === null && u.proc.signalCode === null) u.proc.kill("SIGTERM");
      const t = setTimeout(() => u.proc.kill("SIGKILL"), 30_000);
      await u.exited;
      clearTimeout(t);
    }
    // Whatever a test left in Slurm is cancelled before the next one.
    spawnSync("scancel", ["--full", "-u", os.userInfo().username], { env: slurm.env });
    await until("the queue to empty", () => liveIrisJobs().length === 0, 60_000);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const liveIrisJobs = (): { id: string; name: string; state: string }[] =>
    slurm.jobs().filter((j) => j.name.startsWith("iris-") && /PENDING|RUNNING|CONFIGURING|COMPLETING/.test(j.state));

  function writeConfig(port: number, group: Record<string, unknown>): string {
    const cfg = {
      controller: { host: "127.0.0.1", port, db: path.join(dir, "iris.sqlite"), workerTimeout: 10 },
      scaleGroups: [
        {
          name: "cpu",
          provider: "slurm",
          maxWorkers: 4,
          idleTimeout: "3s",
          bootTimeout: "90s",
          worker: { cpu: 1, memory: "512M", attributes: { pool: "slurm" } },
          slurm: { partition: slurm.partition },
          ...group,
        },
      ],
    };
    const file = path.join(dir, "cluster.yaml");
    fs.writeFileSync(file, JSON.stringify(cfg, null, 2)); // JSON is YAML
    return file;
  }

  async function up(config: string): Promise<{ up: Up; client: IrisClient }> {
    const proc = spawn(process.execPath, ["--import", SOURCE_LOADER, IRIS_CLI, "cluster", "up", "--config", config], { env: slurm.env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((r) => proc.once("exit", () => r()));
    const address = await until(
      "iris cluster up's ready line",
      () => {
        if (proc.exitCode !== null) throw new Error(`iris cluster up exited ${proc.exitCode}: ${out}`);
        return /listening on (\S+)/.exec(out)?.[1];
      },
      60_000,
    );
    const u: Up = { proc, address, output: () => out, exited };
    ups.push(u);
    const client = IrisClient.connect(address, { user: "alice" });
    clients.push(client);
    return { up: u, client };
  }

  const status = async (client: IrisClient): Promise<ClusterStatus> => (await client.clusterStatus()) as ClusterStatus;
  const fresh = async (group: Record<string, unknown> = {}): Promise<string> => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-slurmcluster-"));
    // Port 0: the controller binds a free port itself and its workers dial the bound address. (A
    // port found free beforehand could be taken by another process before the controller binds
    // it: EADDRINUSE, seen with the suite's other files running beside this one.)
    return writeConfig(0, group);
  };

  it("from zero: a 3-task job makes the autoscaler submit Slurm jobs; workers register, the tasks succeed; after idleTimeout no iris job is left and no worker", async () => {
    const { client } = await up(await fresh());
    expect(await client.listWorkers()).toEqual([]);
    const job = await client.submit({
      name: "three",
      replicas: 3,
      entrypoint: { command: ["sh", "-c", "echo task $IRIS_TASK_INDEX in $SLURM_JOB_ID"] },
      resources: { cpuMillis: 1000, memoryBytes: 256 * 1024 * 1024 },
    });
    await until("iris jobs in squeue", () => liveIrisJobs().length > 0, 60_000);
    expect(liveIrisJobs().every((j) => j.name === "iris-cpu")).toBe(true);
    const st = await job.wait({ timeoutMs: 120_000 });
    expect(st.state).toBe("SUCCEEDED");
    expect(st.tasks.map((t) => t.attempt)).toEqual([1, 1, 1]);
    const s = await status(client);
    expect(s.decisions.map((d) => d.reason)).toContain("+3 cpu for /alice/three");
    await until("the idle workers to be stopped and leave squeue", async () => liveIrisJobs().length === 0 && (await client.listWorkers()).length === 0, 90_000);
  }, 240_000);

  it("scancel of a worker's Slurm job mid-task: the attempt ends PREEMPTED, reruns on a new worker, the job succeeds with a failure budget of 0", async () => {
    const { client } = await up(await fresh({ idleTimeout: "1m" }));
    const marker = path.join(dir, "started");
    const job = await client.submit({
      name: "cancelled-under",
      entrypoint: { command: ["sh", "-c", `if [ "$IRIS_ATTEMPT" = 1 ]; then touch ${marker}; exec sleep 300; fi; echo rerun`] },
      resources: { cpuMillis: 1000 },
      maxRetriesFailure: 0,
    });
    await until("attempt 1 to run", () => fs.existsSync(marker), 120_000);
    const first = (await job.status()).tasks[0]!.attempts[0]!.workerId!;
    const jobOfFirst = slurm.jobs().find((j) => j.comment.endsWith(`:${first}`) && j.state === "RUNNING")!;
    slurm.cmd("scancel", [jobOfFirst.id]);
    const st = await job.wait({ timeoutMs: 180_000 });
    expect(st.state).toBe("SUCCEEDED");
    const attempts = st.tasks[0]!.attempts;
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toMatchObject({ workerId: first, state: "PREEMPTED", failureKind: "PREEMPTED" });
    expect(attempts[1]!.state).toBe("SUCCEEDED");
    expect(attempts[1]!.workerId).not.toBe(first);
  }, 300_000);

  it("a SIGKILLed controller restarted on the same database adopts its Slurm workers: squeue's iris jobs equal the workers, nothing is submitted twice", async () => {
    const group = { minWorkers: 2, maxWorkers: 2, idleTimeout: "1m" };
    const first = await up(await fresh(group));
    // The restarted controller must listen where the workers dial: the port the first one bound.
    const config = writeConfig(Number(first.up.address.split(":").pop()), group);
    await until("2 workers registered", async () => (await first.client.listWorkers()).length === 2, 120_000);
    const jobsBefore = liveIrisJobs()
      .map((j) => j.id)
      .sort();
    expect(jobsBefore).toHaveLength(2);
    first.up.proc.kill("SIGKILL");
    await first.up.exited;
    const second = await up(config);
    await until("the 2 workers back with the restarted controller", async () => (await second.client.listWorkers()).length === 2, 120_000);
    // Several rounds later: the same two Slurm jobs, the same two workers, no start decision.
    const since = Date.now();
    await until("rounds after the restart", async () => (await status(second.client)).lastRoundAtMs > since + 3000, 60_000);
    expect(
      liveIrisJobs()
        .map((j) => j.id)
        .sort(),
    ).toEqual(jobsBefore);
    const workers = (await second.client.listWorkers()).map((w) => w.workerId).sort();
    const jobWorkers = slurm
      .jobs()
      .filter((j) => jobsBefore.includes(j.id))
      .map((j) => j.comment.split(":").pop()!)
      .sort();
    expect(workers).toEqual(jobWorkers);
    expect((await status(second.client)).decisions.filter((d) => d.kind === "start")).toEqual([]);
  }, 300_000);

  it("a group at maxWorkers: the pending task's reason says so; a gang of 2 runs on 2 Slurm workers at once", async () => {
    const { client } = await up(await fresh({ maxWorkers: 2, idleTimeout: "1m" }));
    const gang = await client.submit({
      name: "pair",
      replicas: 2,
      gang: true,
      entrypoint: { command: ["sh", "-c", "echo rank $IRIS_TASK_INDEX"] },
      resources: { cpuMillis: 1000 },
    });
    const g = await gang.wait({ timeoutMs: 180_000 });
    expect(g.state).toBe("SUCCEEDED");
    expect(new Set(g.tasks.map((t) => t.workerId)).size).toBe(2);
    expect((await status(client)).decisions.map((d) => d.reason)).toContain("+2 cpu for /alice/pair (gang of 2)");
    // Both workers busy with a long task each; a third task waits at the group's max.
    const hold = await client.submit({ name: "hold", replicas: 3, entrypoint: { command: ["sleep", "300"] }, resources: { cpuMillis: 1000 } });
    const reason = await until(
      "a pending reason naming the max",
      async () => (await hold.status()).tasks.map((t) => t.pendingReason ?? "").find((r) => /at max 2/.test(r)),
      120_000,
    );
    expect(reason).toMatch(/cpu at max 2/);
    await hold.terminate();
  }, 300_000);

  it("a worker that cannot start (never registers) is cancelled after bootTimeout; the backoff shows in iris cluster status", async () => {
    const config = await fresh({ bootTimeout: "3s", slurm: { partition: slurm.partition, setup: ["sleep 600"] } });
    const { up: u, client } = await up(config);
    const job = await client.submit({ name: "stuck", entrypoint: { command: ["true"] }, resources: { cpuMillis: 500 } });
    await until("a failed boot", async () => (await status(client)).groups[0]!.failedBoots >= 1, 120_000);
    const s = await status(client);
    expect(s.groups[0]!.backoffUntilMs).toBeGreaterThan(Date.now());
    expect(s.groups[0]!.decisions.some((d) => d.kind === "cancel" && /not registered within 3 s.*cancelled; boot failed 1×, backing off/.test(d.reason))).toBe(true);
    await until("the cancelled job to leave squeue", () => liveIrisJobs().length === 0, 60_000);
    // `iris cluster status` shows it too.
    const cli = spawnSync(process.execPath, ["--import", SOURCE_LOADER, IRIS_CLI, "cluster", "status", "--controller", u.address], { encoding: "utf8" });
    expect(cli.status).toBe(0);
    expect(cli.stdout).toMatch(/backing off/);
    await job.terminate();
  }, 240_000);
});
