// The autoscaler with the local provider, end to end: a real controller, real in-process workers
// started and stopped by the autoscaler, real tasks (child processes).
import { afterEach, describe, expect, it } from "vitest";
import { IrisClient } from "../client/irisClient.ts";
import { waitFor } from "../testing.ts";
import type { ClusterStatus } from "./autoscaler.ts";
import { startCluster, type RunningCluster } from "./clusterUp.ts";
import { validateClusterConfig } from "./config.ts";

const TOKEN = "autoscaler-e2e-secret";
const clusters: RunningCluster[] = [];
const clients: IrisClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const c of clusters.splice(0)) await c.stop();
});

async function start(groups: unknown[], controller: Record<string, unknown> = {}): Promise<{ cluster: RunningCluster; client: IrisClient }> {
  const config = validateClusterConfig({ controller: { port: 0, token: TOKEN, ...controller }, scaleGroups: groups });
  const cluster = await startCluster(config, { intervalMs: 200, log: () => undefined, local: { workerOptions: { killGraceMs: 500 } } });
  clusters.push(cluster);
  const client = IrisClient.connect(cluster.controller.address, { token: TOKEN });
  clients.push(client);
  return { cluster, client };
}

const status = (c: RunningCluster): ClusterStatus => c.autoscaler.status();

describe("autoscaler with the local provider", () => {
  it("scales a group up from zero for a 3-task job, runs it, and stops the idle workers after idleTimeout", async () => {
    const { cluster, client } = await start([{ name: "local", provider: "local", maxWorkers: 4, idleTimeout: "2s", worker: { cpu: 1, memory: "1G" } }]);
    expect(await client.listWorkers()).toEqual([]);
    const job = await client.submit({
      name: "three",
      replicas: 3,
      entrypoint: { command: ["sh", "-c", "echo task $IRIS_TASK_INDEX"] },
      resources: { cpuMillis: 1000, memoryBytes: 256 * 1024 * 1024 },
    });
    const st = await job.wait();
    expect(st.state).toBe("SUCCEEDED");
    expect(st.tasks.map((t) => t.attempt)).toEqual([1, 1, 1]);
    const s = status(cluster);
    expect(s.decisions.map((d) => d.reason)).toContain("+3 local for /admin/three");
    // Three workers registered for it, each under the id the autoscaler gave it.
    const ids = new Set(s.groups[0].workers.map((w) => w.workerId));
    expect(ids.size).toBe(3);
    for (const id of ids) expect(id).toMatch(/^local-[0-9a-f]{8}$/);
    // Idle for 2 s: drained and stopped, and deregistered.
    await waitFor("the idle workers to be stopped", async () => (await client.listWorkers()).length === 0 && status(cluster).groups[0].ready === 0, { timeoutMs: 30_000 });
    expect(status(cluster).decisions.filter((d) => /^-1 local: local-[0-9a-f]{8} idle for/.test(d.reason))).toHaveLength(3);
  }, 90_000);

  it("keeps minWorkers up from the start and never stops below it", async () => {
    const { cluster, client } = await start([{ name: "base", provider: "local", minWorkers: 2, maxWorkers: 2, idleTimeout: "1s", worker: { cpu: 1, memory: "1G" } }]);
    await waitFor("2 workers registered", async () => (await client.listWorkers()).length === 2, { timeoutMs: 30_000 });
    // Rounds well past idleTimeout: still two.
    const before = status(cluster).decisions.length;
    const registeredAt = Date.now();
    await waitFor("rounds past idleTimeout", () => status(cluster).lastRoundAtMs > registeredAt + 2000, { timeoutMs: 20_000 });
    expect((await client.listWorkers()).length).toBe(2);
    expect(
      status(cluster)
        .decisions.slice(before)
        .filter((d) => d.kind === "stop"),
    ).toEqual([]);
  }, 60_000);

  it("a task no group could ever hold ends UNSCHEDULABLE at once, naming the largest group's worker shape", async () => {
    const { client } = await start([
      { name: "small", provider: "local", maxWorkers: 2, worker: { cpu: 1, memory: "1G" } },
      { name: "big", provider: "local", maxWorkers: 1, worker: { cpu: 4, memory: "2G" } },
    ]);
    const job = await client.submit({ name: "huge", entrypoint: { command: ["true"] }, resources: { cpuMillis: 64_000 } });
    const st = await job.wait();
    expect(st.state).toBe("UNSCHEDULABLE");
    expect(st.tasks[0].error).toBe("no scale group can hold cpu 64 cores, memory 0 B; the largest group, big, starts workers of cpu 4 cores, memory 2.0 GiB");
    expect(await client.listWorkers()).toEqual([]);
  }, 60_000);

  it("cancels a worker that does not register within bootTimeout, counts a failed boot and backs off (visible in status)", async () => {
    // The workers dial a port nothing listens on: they never register.
    const { cluster, client } = await start([{ name: "broken", provider: "local", maxWorkers: 2, bootTimeout: "1s", worker: { cpu: 1, memory: "1G" } }], {
      advertise: "127.0.0.1:1",
    });
    const job = await client.submit({ name: "stuck", entrypoint: { command: ["true"] } });
    const reason = await waitFor(
      "the pending reason",
      async () => {
        const r = (await job.status()).tasks[0].pendingReason ?? "";
        return /^waiting for 1 broken worker to boot/.test(r) ? r : undefined;
      },
      { timeoutMs: 20_000 },
    );
    expect(reason).toMatch(/^waiting for 1 broken worker to boot/);
    await waitFor("a failed boot", () => status(cluster).groups[0].failedBoots >= 1, { timeoutMs: 20_000 });
    const g = status(cluster).groups[0];
    expect(g.backoffUntilMs).toBeGreaterThan(Date.now());
    expect(
      g.decisions.some((d) => d.kind === "cancel" && /^broken: broken-[0-9a-f]{8} not registered within 1 s.*cancelled; boot failed 1×, backing off 1 min$/.test(d.reason)),
    ).toBe(true);
    // Backing off: nothing more is started, and the pending task says why.
    await waitFor("the backoff reason", async () => /^broken: boot failed 1×, backing off/.test((await job.status()).tasks[0].pendingReason ?? ""), { timeoutMs: 10_000 });
    expect(status(cluster).groups[0].pending + status(cluster).groups[0].booting).toBe(0);
    // Over the RPC too.
    const viaRpc = (await client.clusterStatus()) as ClusterStatus;
    expect(viaRpc.groups[0].failedBoots).toBe(1);
    await job.terminate();
  }, 60_000);

  it("a gang of 2 gets 2 workers at once", async () => {
    const { cluster, client } = await start([{ name: "g", provider: "local", maxWorkers: 3, idleTimeout: "1m", worker: { cpu: 1, memory: "1G" } }]);
    const job = await client.submit({ name: "pair", replicas: 2, gang: true, entrypoint: { command: ["true"] }, resources: { cpuMillis: 500 } });
    expect((await job.wait()).state).toBe("SUCCEEDED");
    // Status is as of the autoscaler's last round: wait for one after the job ended.
    const ended = Date.now();
    await waitFor("a round after the job", () => status(cluster).lastRoundAtMs >= ended, { timeoutMs: 10_000 });
    expect(status(cluster).decisions.map((d) => d.reason)).toContain("+2 g for /admin/pair (gang of 2)");
    expect(status(cluster).groups[0].workers).toHaveLength(2);
  }, 60_000);
});
