// `iris cluster up|status|down` as real processes, with a local scale group.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { waitFor } from "../testing.ts";
import { SOURCE_LOADER } from "../process/sourceLoader.ts";

const MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "cli", "main.ts");
const TOKEN = "cluster-up-e2e-secret";

class Iris {
  readonly child: ChildProcess;
  stdout = "";
  stderr = "";
  readonly exited: Promise<number | null>;
  constructor(args: string[]) {
    const env = { ...process.env, IRIS_CONTROLLER_ADDRESS: "", IRIS_AUTH_TOKEN: "" };
    this.child = spawn(process.execPath, ["--import", SOURCE_LOADER, MAIN, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.setEncoding("utf8").on("data", (d: string) => (this.stdout += d));
    this.child.stderr!.setEncoding("utf8").on("data", (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.on("close", (code) => resolve(code)));
  }
}

async function iris(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = new Iris(args);
  const code = await p.exited;
  return { code, stdout: p.stdout, stderr: p.stderr };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-cluster-up-"));
const running: Iris[] = [];
afterAll(async () => {
  for (const p of running) if (p.child.exitCode === null) p.child.kill("SIGKILL");
  fs.rmSync(dir, { recursive: true, force: true });
});

function writeConfig(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

describe("iris cluster up", () => {
  it("rejects a bad config naming the field, exit 2", async () => {
    const missing = await iris([
      "cluster",
      "up",
      "--config",
      writeConfig("bad1.yaml", "controller: {}\nscaleGroups:\n  - { name: cpu, provider: local, maxWorkers: 2, worker: { cpu: 1, memory: 1G } }\n"),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("controller.port: required");
    const duration = await iris([
      "cluster",
      "up",
      "--config",
      writeConfig("bad2.yaml", "controller: { port: 0 }\nscaleGroups:\n  - { name: cpu, provider: local, maxWorkers: 2, idleTimeout: soon, worker: { cpu: 1, memory: 1G } }\n"),
    ]);
    expect(duration.code).toBe(2);
    expect(duration.stderr).toContain('scaleGroups[0].idleTimeout: expected a duration such as 15s, 2m or 1h, got "soon"');
    const slurm = await iris([
      "cluster",
      "up",
      "--config",
      writeConfig("bad3.yaml", "controller: { port: 0 }\nscaleGroups:\n  - { name: cpu, provider: slurm, maxWorkers: 2, worker: { cpu: 1, memory: 1G } }\n"),
    ]);
    expect(slurm.code).toBe(2);
    expect(slurm.stderr).toContain("scaleGroups[0].slurm.partition: required");
    const unknown = await iris([
      "cluster",
      "up",
      "--config",
      writeConfig("bad4.yaml", "controller: { port: 0 }\nscaleGroups:\n  - { name: cpu, provider: local, maxWorker: 2, worker: { cpu: 1, memory: 1G } }\n"),
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/scaleGroups\[0\]\.(maxWorker: unknown field|maxWorkers: required)/);
  }, 60_000);

  it("runs a job on workers it starts, shows them in status, stops them on down and on SIGTERM", async () => {
    const config = writeConfig(
      "cluster.yaml",
      [
        "controller:",
        "  port: 0",
        `  db: ${path.join(dir, "state", "iris.sqlite")}`,
        `  token: ${TOKEN}`,
        "  httpPort: 0",
        "scaleGroups:",
        "  - name: cpu",
        "    provider: local",
        "    maxWorkers: 3",
        "    idleTimeout: 1h",
        "    worker: { cpu: 1, memory: 1G, attributes: { pool: cpu } }",
        "",
      ].join("\n"),
    );
    const up = new Iris(["cluster", "up", "--config", config]);
    running.push(up);
    const m = await waitFor(
      "the ready line",
      () =>
        /iris cluster listening on (\S+)/.exec(up.stdout) ??
        (up.child.exitCode !== null
          ? (() => {
              throw new Error(up.stderr);
            })()
          : undefined),
      { timeoutMs: 60_000 },
    );
    const addr = m[1];
    const dashboard = /dashboard: (http:\/\/127\.0\.0\.1:\d+)\//.exec(up.stdout)![1];
    const client = ["--controller", addr, "--token", TOKEN];
    const job = await iris(["job", "run", ...client, "--replicas", "2", "--cpu", "1", "--", "sh", "-c", "echo hello from $IRIS_TASK_INDEX"]);
    // Only progress lines while the workers boot.
    for (const line of job.stderr.split("\n").filter((l) => l !== "")) expect(line).toMatch(/^iris: \d of 2 tasks pending: /);
    expect(job.code).toBe(0);
    expect(job.stdout).toContain("hello from");
    // Status is as of the autoscaler's last round (every 2 s): wait for one after the job ended.
    const ended = Date.now();
    type Status = { lastRoundAtMs: number; groups: { name: string; ready: number; maxWorkers: number }[]; decisions: { reason: string }[] };
    const status = await waitFor(
      "a cluster status from a round after the job",
      async () => {
        const st = await iris(["cluster", "status", "--json", ...client]);
        expect(st.code).toBe(0);
        const s = JSON.parse(st.stdout) as Status;
        return s.lastRoundAtMs >= ended ? s : undefined;
      },
      { timeoutMs: 20_000 },
    );
    expect(status.groups).toMatchObject([{ name: "cpu", ready: 2, maxWorkers: 3 }]);
    expect(status.decisions.some((d) => /^\+2 cpu for \/admin\/job-/.test(d.reason))).toBe(true);
    const table = await iris(["cluster", "status", ...client]);
    expect(table.stdout).toMatch(
      /^GROUP\s+PROVIDER\s+MIN\s+MAX\s+PENDING\s+BOOTING\s+READY\s+IDLE\s+DRAINING\s+DEMAND\s+BACKOFF\ncpu\s+local\s+0\s+3\s+0\s+0\s+2\s+2\s+0\s+-\s+-\n/,
    );
    // The dashboard's Cluster view reads the same over the HTTP API (and its module is served).
    const viaHttp = await fetch(`${dashboard}/api/GetClusterStatus`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(viaHttp.status).toBe(200);
    expect((JSON.parse(((await viaHttp.json()) as { statusJson: string }).statusJson) as { groups: { name: string }[] }).groups[0].name).toBe("cpu");
    expect((await fetch(`${dashboard}/api/GetClusterStatus`, { method: "POST", body: "{}" })).status).toBe(401);
    expect(await (await fetch(`${dashboard}/assets/cluster.mjs`)).text()).toContain("export function ClusterView");
    // Without the token: refused like any other command.
    const anon = await iris(["cluster", "status", "--controller", addr]);
    expect(anon.code).toBe(1);
    expect(anon.stderr).toContain("UNAUTHENTICATED");
    const down = await iris(["cluster", "down", ...client]);
    expect(down.stdout).toBe("iris cluster down: drained and stopped 2 workers\n");
    const workers = await iris(["workers", "--json", ...client]);
    expect(JSON.parse(workers.stdout)).toEqual([]);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
    expect(up.stderr).toContain("SIGTERM: draining and stopping the workers");
  }, 120_000);
});
