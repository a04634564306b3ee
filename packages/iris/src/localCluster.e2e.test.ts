// End-to-end on a LocalCluster: a real controller and two real workers on loopback, real child
// processes, auth on.
import os from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IrisClient } from "./client/irisClient.ts";
import type { JobStatus } from "./jobSpec.ts";
import { IrisError } from "./errors.ts";
import { ENDPOINT_TASK, until } from "./testkit/processes.ts";
import { IRIS_PACKAGE_ROOT } from "./internal/protoGen.ts";
import { LocalCluster } from "./localCluster.ts";
import { SOURCE_LOADER } from "./process/sourceLoader.ts";

const TOKEN = "s3cret-token";

describe("LocalCluster (2 workers, auth on)", () => {
  let cluster: LocalCluster;
  let client: IrisClient;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ workers: 2, token: TOKEN, workerCpuMillis: 4000, workerTimeoutMs: 3000 });
    client = cluster.client;
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  async function lines(name: string): Promise<string[]> {
    const out: string[] = [];
    for await (const e of client.job(name).logs()) out.push(e.line);
    return out;
  }

  it("gives replicas task indexes 0..N-1 and their output to logs", async () => {
    const job = await client.submit({
      name: "replicas",
      entrypoint: { command: ["sh", "-c", 'echo "index=$IRIS_TASK_INDEX of $IRIS_NUM_TASKS"'] },
      replicas: 4,
      resources: { cpuMillis: 500 },
    });
    expect(job.name).toBe(`/${client.user}/replicas`);
    const seen: JobStatus[] = [];
    const st = await job.wait({ timeoutMs: 30_000, onStatus: (s) => seen.push(s) });
    expect(st.state).toBe("SUCCEEDED");
    // onStatus saw the job's progress, task by task, ending with the status wait returned.
    expect(seen.at(-1)).toEqual(st);
    const succeeded = seen.map((s) => s.tasks.filter((t) => t.state === "SUCCEEDED").length);
    expect(succeeded).toEqual([...succeeded].sort((a, b) => a - b));
    expect(st.tasks.map((t) => t.index)).toEqual([0, 1, 2, 3]);
    expect((await lines("replicas")).sort()).toEqual(["index=0 of 4", "index=1 of 4", "index=2 of 4", "index=3 of 4"]);
  });

  it("retries a task that fails on its first attempt", async () => {
    const job = await client.submit({
      name: "flaky",
      entrypoint: { command: ["sh", "-c", '[ "$IRIS_ATTEMPT" -ge 2 ] || exit 3'] },
      maxRetriesFailure: 1,
      resources: { cpuMillis: 100 },
    });
    const st = await job.wait({ timeoutMs: 30_000 });
    expect(st.state).toBe("SUCCEEDED");
    const t = st.tasks[0]!;
    expect(t.attempt).toBe(2);
    expect(t.attempts[0]).toMatchObject({ state: "FAILED", exitCode: 3, failureKind: "APP_EXIT" });
    expect(t.attempts[1]).toMatchObject({ state: "SUCCEEDED", exitCode: 0 });
  });

  it("fails a job whose task exhausts its failure budget (default 0 retries)", async () => {
    const st = await (await client.submit({ name: "fails", entrypoint: { command: ["sh", "-c", "exit 7"] }, resources: { cpuMillis: 100 } })).wait({ timeoutMs: 30_000 });
    expect(st.state).toBe("FAILED");
    expect(st.tasks[0]).toMatchObject({ state: "FAILED", exitCode: 7, failureKind: "APP_EXIT" });
    expect(st.error).toMatch(/APP_EXIT\(7\)/);
  });

  it("ends an attempt that outlives its timeout as TIMEOUT, charged to the failure budget", async () => {
    const st = await (await client.submit({ name: "slow", entrypoint: { command: ["sleep", "60"] }, timeoutMs: 500, resources: { cpuMillis: 100 } })).wait({ timeoutMs: 30_000 });
    expect(st.state).toBe("FAILED");
    expect(st.tasks[0]).toMatchObject({ state: "FAILED", failureKind: "TIMEOUT" });
  });

  it("ends a gang that could never fit the registered workers as UNSCHEDULABLE, with the reason", async () => {
    const job = await client.submit({ name: "biggang", entrypoint: { command: ["true"] }, replicas: 3, gang: true, resources: { cpuMillis: 100 } });
    const st = await job.wait({ timeoutMs: 10_000 });
    expect(st.state).toBe("UNSCHEDULABLE");
    expect(st.tasks.every((t) => t.state === "UNSCHEDULABLE")).toBe(true);
    expect(st.error).toMatch(/gang of 3 needs 3 workers .* only 2 of 2 registered workers could ever hold a member/);
  });

  it("ends a failed gang member's peers as PEER_FAILED and reruns the gang", async () => {
    const script = [
      'if [ "$IRIS_ATTEMPT" = 1 ]; then',
      '  if [ "$IRIS_TASK_INDEX" = 1 ]; then sleep 0.3; exit 2; fi',
      "  exec sleep 60",
      "fi",
      'echo "gang member $IRIS_TASK_INDEX ok"',
    ].join("\n");
    const job = await client.submit({
      name: "gang",
      entrypoint: { command: ["sh", "-c", script] },
      replicas: 2,
      gang: true,
      maxRetriesFailure: 1,
      resources: { cpuMillis: 100 },
    });
    const st = await job.wait({ timeoutMs: 30_000 });
    expect(st.state).toBe("SUCCEEDED");
    const [t0, t1] = st.tasks;
    expect(t1!.attempts[0]).toMatchObject({ failureKind: "APP_EXIT", exitCode: 2 });
    expect(t0!.attempts[0]!.failureKind).toBe("PEER_FAILED");
    expect(t0!.attempts.map((a) => a.attempt)).toEqual([1, 2]);
    expect(t1!.attempts.map((a) => a.attempt)).toEqual([1, 2]);
    expect(t0!.attempts[1]!.state).toBe("SUCCEEDED");
  });

  it("terminates a job and cascades to its children", async () => {
    const parent = await client.submit({ name: "parent", entrypoint: { command: ["sleep", "60"] }, resources: { cpuMillis: 100 } });
    const child = await client.submit({ name: `${parent.name}/child`, entrypoint: { command: ["sleep", "60"] }, resources: { cpuMillis: 100 } });
    await until("both running", async () => (await parent.status()).state === "RUNNING" && (await child.status()).state === "RUNNING");
    await parent.terminate();
    const [p, c] = await Promise.all([parent.wait({ timeoutMs: 10_000 }), child.wait({ timeoutMs: 10_000 })]);
    expect(p.state).toBe("KILLED");
    expect(c.state).toBe("KILLED");
    expect(c.tasks[0]!.attempts[0]!.failureKind).toBe("KILLED");
    await until("the attempts' processes to be gone", () => cluster.workers.every((w) => w.attempts().every((a) => a.state !== "RUNNING" && a.state !== "BUILDING")));
  });

  it("streams logs with follow as they are printed", async () => {
    const job = await client.submit({
      name: "follow",
      entrypoint: {
        command: ["node", "-e", "let i = 0; const t = setInterval(() => { console.log('tick ' + i); if (++i === 5) clearInterval(t); }, 250);"],
      },
      resources: { cpuMillis: 100 },
    });
    const got: { line: string; jobState: string }[] = [];
    for await (const e of job.logs({ follow: true })) {
      got.push({ line: e.line, jobState: got.length === 0 ? (await job.status()).state : "" });
    }
    expect(got.map((g) => g.line)).toEqual(["tick 0", "tick 1", "tick 2", "tick 3", "tick 4"]);
    // The first line reached us while the job was still running: streamed, not read at the end.
    expect(got[0]!.jobState).toBe("RUNNING");
    expect((await job.status()).state).toBe("SUCCEEDED");
  });

  it("keeps every line of a long log, in order", async () => {
    const job = await client.submit({
      name: "chatty",
      entrypoint: { command: ["node", "-e", "for (let i = 0; i < 20000; i++) console.log('line ' + i)"] },
      resources: { cpuMillis: 100 },
    });
    expect((await job.wait({ timeoutMs: 60_000 })).state).toBe("SUCCEEDED");
    const got = await lines("chatty");
    expect(got.length).toBe(20000);
    expect(got.every((l, i) => l === `line ${i}`)).toBe(true);
  });

  it("resolves an endpoint registered by another task and drops it when the attempt ends", async () => {
    const server = await client.submit({
      name: "epserver",
      entrypoint: { command: [process.execPath, "--import", SOURCE_LOADER, ENDPOINT_TASK, "serve"], cwd: IRIS_PACKAGE_ROOT },
      ports: ["http"],
      resources: { cpuMillis: 100 },
    });
    const resolver = await client.submit({
      name: `${server.name}/resolver`,
      entrypoint: { command: [process.execPath, "--import", SOURCE_LOADER, ENDPOINT_TASK, "resolve"], cwd: IRIS_PACKAGE_ROOT },
      resources: { cpuMillis: 100 },
    });
    expect((await resolver.wait({ timeoutMs: 120_000 })).state).toBe("SUCCEEDED");
    const out = await lines(resolver.name);
    expect(out.join("\n")).toMatch(new RegExp(`resolved ${server.name}/svc 127\\.0\\.0\\.1:\\d+ server`));
    const eps = await client.listEndpoints(`${server.name}/`);
    expect(eps.map((e) => e.name)).toEqual([`${server.name}/svc`]);
    await server.terminate();
    await server.wait({ timeoutMs: 10_000 });
    expect(await client.listEndpoints(`${server.name}/`)).toEqual([]);
    await expect(client.resolveEndpoint(`${server.name}/svc`)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("rejects calls without the token or with a wrong one, changing nothing", async () => {
    const anonymous = IrisClient.connect(cluster.address);
    const wrong = IrisClient.connect(cluster.address, { token: "wrong" });
    try {
      await expect(anonymous.list()).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
      const err = await wrong.submit({ name: "intruder", entrypoint: { command: ["true"] } }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(IrisError);
      expect((err as IrisError).code).toBe("UNAUTHENTICATED");
      await expect(wrong.job("replicas").status()).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
      expect((await client.list()).map((j) => j.name)).not.toContain(`/${client.user}/intruder`);
    } finally {
      anonymous.close();
      wrong.close();
    }
  });

  it("rejects an invalid spec naming the field, and a running name as ALREADY_EXISTS", async () => {
    await expect(client.submit({ name: "bad", entrypoint: { command: ["true"] }, replicas: -3 })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/replicas/),
    });
    const job = await client.submit({ name: "dup", entrypoint: { command: ["sleep", "60"] }, resources: { cpuMillis: 100 } });
    await expect(client.submit({ name: "dup", entrypoint: { command: ["true"] } })).rejects.toMatchObject({ code: "ALREADY_EXISTS" });
    await job.terminate();
    await job.wait({ timeoutMs: 10_000 });
    const again = await client.submit({ name: "dup", entrypoint: { command: ["true"] }, resources: { cpuMillis: 100 } });
    expect(again.instanceId).not.toBe(job.instanceId);
    expect((await again.wait({ timeoutMs: 30_000 })).state).toBe("SUCCEEDED");
    expect((await client.job("dup").status()).instanceId).toBe(again.instanceId);
  });
});

describe("LocalCluster default capacity", () => {
  it("splits the machine's cores and memory between its workers instead of giving each the whole machine", async () => {
    const cluster = await LocalCluster.start({ workers: 2 });
    try {
      const workers = await cluster.client.listWorkers();
      expect(workers).toHaveLength(2);
      const cores = os.availableParallelism() * 1000;
      for (const w of workers) {
        expect(w.capacity.cpuMillis).toBe(Math.floor(cores / 2));
        expect(w.capacity.memoryBytes).toBe(Math.floor(os.totalmem() / 2));
      }
      const total = workers.reduce((a, w) => a + w.capacity.cpuMillis, 0);
      expect(total).toBeLessThanOrEqual(cores);
      expect(workers.reduce((a, w) => a + w.capacity.memoryBytes, 0)).toBeLessThanOrEqual(os.totalmem());
      // What runs on it by default still fits: a gang of one half-core rank per worker.
      const gang = await cluster.client.submit({ entrypoint: { command: ["true"] }, replicas: 2, gang: true, resources: { cpuMillis: 500 } });
      expect((await gang.wait({ timeoutMs: 30_000 })).state).toBe("SUCCEEDED");
    } finally {
      await cluster.stop();
    }
  });
});
