// remoteInference on a LocalCluster: the server job, its endpoint and metadata, the capability URL
// through the controller's proxy, teardown after the callback and after a throw, two replicas
// balanced by the controller's endpoint proxy (and replica 0's URL on a cluster without one), and a
// server that never becomes ready.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { LocalCluster } from "@marin/iris";
import type { Job } from "@marin/iris";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyCheckpoint } from "../internal/fixtures/tinyCheckpoint.ts";
import { remoteInference } from "./remoteInference.ts";

const run = promisify(execFile);
const STUCK = fileURLToPath(new URL("../internal/fixtures/stuckServer.ts", import.meta.url));
const env = { LEVANTER_BACKEND: "wasm", LEVANTER_LOG: "warn" };

async function ended(job: Job): Promise<string> {
  return (await job.wait({ timeoutMs: 20_000 })).state;
}

describe("remoteInference", () => {
  let dir: string;
  let ckpt: string;
  let cluster: LocalCluster;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    dir = mkdtempSync(path.join(os.tmpdir(), "marin-serve-"));
    ckpt = await tinyCheckpoint(path.join(dir, "ckpt"));
    cluster = await LocalCluster.start({ workers: 1, workerCpuMillis: 8000, httpPort: 0 });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves a checkpoint behind serve/<name>, reachable by capability URL, and terminates the job after the callback", async () => {
    let job: Job | undefined;
    const out = await remoteInference({ checkpoint: ckpt, client: cluster.client, name: "tiny", env, startupTimeoutMs: 60_000 }, async (s) => {
      job = s.job;
      expect(s.model).toBe("tiny");
      expect(s.endpoint).toBe(`${s.job.name}/serve/tiny`);
      const [e] = await cluster.client.listEndpoints(s.endpoint);
      expect(e!.metadata).toMatchObject({ model: "tiny", kind: "openai", replicas: "1", max_context: "32", status: "ready" });
      const models = (await (await fetch(`${s.baseUrl}/models`)).json()) as { data: { id: string }[] };
      expect(models.data[0]!.id).toBe("tiny");
      // Through the controller: a capability URL works with curl, without the cluster token.
      const cap = await cluster.client.mintEndpointToken(s.endpoint);
      const { stdout } = await run("curl", [
        "-sS",
        "-X",
        "POST",
        `${cap.url}/v1/completions`,
        "-H",
        "content-type: application/json",
        "-d",
        JSON.stringify({ model: "tiny", prompt: "hi", max_tokens: 4, temperature: 0 }),
      ]);
      const body = JSON.parse(stdout) as { choices: { text: string; finish_reason: string }[] };
      expect(body.choices).toHaveLength(1);
      return body.choices[0]!.finish_reason;
    });
    expect(["length", "stop"]).toContain(out);
    expect(await ended(job!)).toBe("KILLED");
    expect(await cluster.client.listEndpoints(`${job!.name}/serve/tiny`)).toEqual([]);
  }, 90_000);

  it("terminates the job when the callback throws, and spreads requests over two replicas (await using)", async () => {
    let job: Job | undefined;
    await expect(
      remoteInference({ checkpoint: ckpt, client: cluster.client, name: "boom", env, startupTimeoutMs: 60_000 }, async (s) => {
        job = s.job;
        throw new Error("the caller failed");
      }),
    ).rejects.toThrow("the caller failed");
    expect(await ended(job!)).toBe("KILLED");

    let job2: Job;
    {
      await using s = await remoteInference({ checkpoint: ckpt, client: cluster.client, name: "pair", replicas: 2, env, startupTimeoutMs: 60_000 });
      job2 = s.job;
      expect(s.replicaUrls).toHaveLength(2);
      // A capability URL on the controller's endpoint proxy, which balances over the replicas.
      expect(s.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/cap\/[\w-]+\.[\w-]+\/v1$/);
      expect(s.baseUrl.startsWith(`${cluster.controller.proxyOrigin!}/cap/`)).toBe(true);
      expect(s.capabilityExpiresAtMs).toBeGreaterThan(Date.now() + 23 * 3600_000);
      expect(s.replicaUrls).not.toContain(s.baseUrl);
      const post = () =>
        fetch(`${s.baseUrl}/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "pair", prompt: "ab", max_tokens: 8, temperature: 0 }),
        }).then((r) => r.json() as Promise<{ choices: { text: string }[] }>);
      const answers = await Promise.all([post(), post(), post(), post()]);
      // Same weights, greedy: the same text whichever replica answered.
      expect(new Set(answers.map((a) => a.choices[0]!.text)).size).toBe(1);
      // Both replicas served some of them (the proxy's least-in-flight choice spreads concurrent ones).
      const served = await Promise.all(
        s.replicaUrls.map(async (u) => {
          const text = await (await fetch(u.replace(/\/v1$/, "/metrics"))).text();
          return [...text.matchAll(/^levanter_serve_requests_total\{[^}]*route="\/v1\/completions"[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
        }),
      );
      expect(served[0]! + served[1]!).toBe(4);
      expect(Math.min(...served)).toBeGreaterThan(0);
    }
    expect(await ended(job2)).toBe("KILLED");
  }, 120_000);

  it("hands out replica 0's own URL where the controller serves no HTTP port (no endpoint proxy)", async () => {
    const bare = await LocalCluster.start({ workers: 1, workerCpuMillis: 8000 });
    try {
      const lines: string[] = [];
      await using s = await remoteInference({ checkpoint: ckpt, client: bare.client, name: "bare", replicas: 2, env, startupTimeoutMs: 60_000, log: (l) => lines.push(l) });
      expect(s.replicaUrls).toHaveLength(2);
      expect(s.baseUrl).toBe(s.replicaUrls[0]);
      expect(s.capabilityExpiresAtMs).toBeUndefined();
      expect(lines.join("\n")).toMatch(/no endpoint proxy to balance the 2 replicas \(.*HTTP port.*\)/);
      const models = (await (await fetch(`${s.baseUrl}/models`)).json()) as { data: { id: string }[] };
      expect(models.data[0]!.id).toBe("bare");
    } finally {
      await bare.stop();
    }
  }, 120_000);

  it("fails within its start-up budget, naming what it waited for, when the server never becomes ready", async () => {
    const t0 = Date.now();
    const err = await remoteInference({
      checkpoint: ckpt,
      client: cluster.client,
      name: "stuck",
      startupTimeoutMs: 10_000,
      server: { module: STUCK, export: "stuckReplica" },
    }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/serve\/stuck was not ready within 10 s: still waiting for GET \/v1\/models to answer \(.*answered 503\)/);
    expect(Date.now() - t0).toBeLessThan(25_000);
    const [j] = (await cluster.client.list()).filter((x) => x.name.endsWith("/serve-stuck"));
    expect(j!.state).toBe("KILLED");
  }, 40_000);

  it("refuses bad options with a clear error", async () => {
    await expect(remoteInference({ checkpoint: ckpt, replicas: 0, client: cluster.client })).rejects.toThrow(/replicas: expected a positive integer, got 0/);
    await expect(remoteInference({ checkpoint: ckpt })).rejects.toThrow(/no iris cluster/);
  });
});
