// The `iris` CLI as real processes: a controller and a worker started with `iris controller` and
// `iris worker`, jobs submitted and inspected with `iris job …`, on loopback.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../testing.ts";
import { SOURCE_LOADER } from "../process/sourceLoader.ts";

const MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), "main.ts");
const TOKEN = "cli-e2e-secret";

/** A running `iris …` process with its output so far. */
class IrisProcess {
  readonly child: ChildProcess;
  stdout = "";
  stderr = "";
  readonly exited: Promise<number | null>;

  constructor(args: string[], env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, ["--import", SOURCE_LOADER, MAIN, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.setEncoding("utf8").on("data", (d: string) => (this.stdout += d));
    this.child.stderr!.setEncoding("utf8").on("data", (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.on("close", (code) => resolve(code)));
  }

  /** Polls until the output matches, failing with the output seen when the deadline passes. */
  async waitFor(pattern: RegExp, stream: "stdout" | "stderr" = "stdout", timeoutMs = 60_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this[stream].match(pattern);
      if (m) return m;
      if (Date.now() > deadline || this.child.exitCode !== null) {
        throw new Error(`no ${pattern} in output of iris (exit ${this.child.exitCode})\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    return this.exited;
  }
}

let dir: string;
let env: NodeJS.ProcessEnv;
let controller: IrisProcess;
let worker: IrisProcess;

/** Runs one `iris …` command to completion. */
async function iris(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = new IrisProcess(args, { ...env, ...extraEnv });
  const code = await p.exited;
  return { code, stdout: p.stdout, stderr: p.stderr };
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-cli-e2e-"));
  const base: NodeJS.ProcessEnv = { ...process.env, IRIS_USER: "clitest" };
  delete base.IRIS_CONTROLLER_ADDRESS;
  delete base.IRIS_AUTH_TOKEN;
  controller = new IrisProcess(["controller", "--port", "0", "--db", path.join(dir, "controller.sqlite"), "--token", TOKEN, "--worker-timeout", "10"], base);
  const [, address] = await controller.waitFor(/listening on (\S+)/);
  env = { ...base, IRIS_CONTROLLER_ADDRESS: address, IRIS_AUTH_TOKEN: TOKEN };
  // Token from the environment, controller from the flag: both defaults are exercised.
  worker = new IrisProcess(["worker", "--controller", address, "--cpu", "2", "--memory", "2G", "--attr", "zone=test", "--state-dir", path.join(dir, "worker")], env);
  await worker.waitFor(/registered/);
});

afterAll(async () => {
  // Worker first, so that it stops its attempts while the controller can still hear about it.
  const codes = [await worker?.stop(), await controller?.stop()];
  fs.rmSync(dir, { recursive: true, force: true });
  expect(codes).toEqual([0, 0]);
});

describe("iris CLI end to end", () => {
  it("job run prints the generated name and exits with the task's exit code", async () => {
    const r = await iris(["job", "run", "--", "node", "-e", "console.log('about to fail'); process.exit(3)"]);
    expect(r.code, r.stderr).toBe(3);
    const [name, ...rest] = r.stdout.split("\n");
    expect(name).toMatch(/^\/clitest\/[A-Za-z0-9._-]+$/);
    expect(rest).toContain("about to fail");
    expect(r.stderr).toMatch(/FAILED/);

    const status = await iris(["job", "status", name]);
    expect(status.code).toBe(0);
    expect(status.stdout.split("\n")[0]).toBe("FAILED");
    expect(status.stdout).toMatch(/APP_EXIT\(3\)/);
  });

  it("job run of a succeeding job exits 0; status and list show it", async () => {
    const r = await iris(["job", "run", "--name", "hello", "--cpu", "0.5", "--memory", "512M", "--", "node", "-e", "console.log('hi ' + process.env.IRIS_TASK_INDEX)"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("/clitest/hello\nhi 0\n");
    expect((await iris(["job", "status", "hello"])).stdout.split("\n")[0]).toBe("SUCCEEDED");
    const list = await iris(["job", "list"]);
    expect(list.stdout).toMatch(/^\/clitest\/hello +SUCCEEDED +1 SUCCEEDED/m);
  });

  it("job logs -f streams lines while the job runs, and ends when it finishes", async () => {
    const release = path.join(dir, "release");
    const script = "console.log('line 1');" + "const t = setInterval(() => { if (require('fs').existsSync(process.argv[1])) { console.log('line 2'); clearInterval(t); } }, 50);";
    const submitted = await iris(["job", "run", "--name", "streamer", "--detach", "--", "node", "-e", script, release]);
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(submitted.stdout).toBe("/clitest/streamer\n");

    const follow = new IrisProcess(["job", "logs", "streamer", "-f"], env);
    try {
      await follow.waitFor(/line 1/);
      // The job is still running (it waits for the file): line 1 arrived by streaming.
      const running = await iris(["job", "status", "streamer"]);
      expect(running.stdout.split("\n")[0]).toBe("RUNNING");
      expect(follow.stdout).not.toMatch(/line 2/);
      fs.writeFileSync(release, "");
      expect(await follow.exited).toBe(0);
      expect(follow.stdout).toBe("line 1\nline 2\n");
    } finally {
      await follow.stop();
    }
    expect((await iris(["job", "logs", "streamer"])).stdout).toBe("line 1\nline 2\n");
  });

  it("job run says why a job is pending, iris status lists it; job kill ends it and job run exits 1", async () => {
    // The blocker holds both cores of the one worker: the next job fits the cluster, but not now.
    const blocker = await iris(["job", "run", "--name", "blocker", "--cpu", "2", "--detach", "--", "node", "-e", "setInterval(() => {}, 1000)"]);
    expect(blocker.code, blocker.stderr).toBe(0);
    await waitFor("blocker running", async () => (await iris(["job", "status", "blocker"])).stdout.startsWith("RUNNING\n"), { timeoutMs: 30_000 });
    const run = new IrisProcess(["job", "run", "--name", "stuck", "--", "node", "-e", "0"], env);
    try {
      await run.waitFor(/^\/clitest\/stuck$/m);
      await run.waitFor(/^iris: 1 of 1 tasks pending: insufficient cpu: need 1 core, best worker has 0 cores free \(1 worker\)$/m, "stderr");

      const status = await iris(["status"]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/^workers: 1 alive\n/);
      expect(status.stdout).toMatch(/^cpu: +2 of 2 cores used, 0 free$/m);
      expect(status.stdout).toMatch(/^memory: +0 B of 2\.0 GiB used, 2\.0 GiB free$/m);
      expect(status.stdout).toMatch(/^jobs: +1 RUNNING, 1 PENDING/m);
      expect(status.stdout).toMatch(/^pending tasks: 1\n {2}\/clitest\/stuck\/0: insufficient cpu: need 1 core/m);

      const workers = await iris(["workers"]);
      expect(workers.stdout.split("\n")[1]).toMatch(/ ALIVE +1 +2\/2 +0 B\/2\.0 GiB +- +zone=test$/);

      const kill = await iris(["job", "kill", "stuck"]);
      expect(kill.code, kill.stderr).toBe(0);
      expect(kill.stdout).toBe("terminated /clitest/stuck\n");
      expect(await run.exited).toBe(1);
      expect(run.stderr).toMatch(/^\/clitest\/stuck KILLED/m);
    } finally {
      await run.stop();
    }
    expect((await iris(["job", "status", "stuck"])).stdout.split("\n")[0]).toBe("KILLED");
    // Killing it again says it had already ended, instead of claiming to terminate it.
    const again = await iris(["job", "kill", "stuck"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe("/clitest/stuck had already ended (KILLED); nothing to kill\n");
    expect((await iris(["job", "kill", "blocker"])).code).toBe(0);
  });

  it("job run of a job no registered worker could ever hold exits 1 at once and prints UNSCHEDULABLE and the reason", async () => {
    const [big, gang] = await Promise.all([
      iris(["job", "run", "--name", "toobig", "--cpu", "64", "--", "true"]),
      iris(["job", "run", "--name", "widegang", "--replicas", "2", "--gang", "--", "true"]),
    ]);
    expect(big.code).toBe(1);
    expect(big.stderr).toMatch(
      /^\/clitest\/toobig UNSCHEDULABLE: task \/clitest\/toobig\/0 is unschedulable: needs cpu 64 cores, the largest of 1 registered worker has 2 cores$/m,
    );
    expect(gang.code).toBe(1);
    expect(gang.stderr).toMatch(
      /^\/clitest\/widegang UNSCHEDULABLE: .*gang of 2 needs 2 workers with cpu 1 core, memory 0 B each .* only 1 of 1 registered worker could ever hold a member/m,
    );
    const status = await iris(["job", "status", "toobig"]);
    expect(status.stdout.split("\n")[0]).toBe("UNSCHEDULABLE");

    // job list --state filters by state (any case); a state that does not exist is a usage error.
    const list = await iris(["job", "list", "--state", "unschedulable"]);
    expect(list.code, list.stderr).toBe(0);
    expect(
      list.stdout
        .split("\n")
        .slice(1)
        .filter((l) => l !== "")
        .map((l) => l.split(/ +/)[0])
        .sort(),
    ).toEqual(["/clitest/toobig", "/clitest/widegang"]);
    expect((await iris(["job", "list", "--state", "KILLED"])).stdout).not.toMatch(/toobig/);
    const bad = await iris(["job", "list", "--state", "DONE"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--state <state>' argument 'DONE' is invalid\. expected one of PENDING, RUNNING, SUCCEEDED, FAILED, KILLED, UNSCHEDULABLE/);
  });

  it("an unreachable controller says so and how to start one, instead of gRPC's text", async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const r = await iris(["job", "list", "--controller", `127.0.0.1:${port}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`cannot reach the iris controller at 127.0.0.1:${port} (connection refused) — is it running? start one with: iris cluster local\n`);
    const st = await iris(["status"], { IRIS_CONTROLLER_ADDRESS: `127.0.0.1:${port}` });
    expect(st.code).toBe(1);
    expect(st.stderr).toMatch(/^cannot reach the iris controller at 127\.0\.0\.1:\d+ \(connection refused\)/);
  });

  it("Ctrl-C on job run terminates the job", async () => {
    const run = new IrisProcess(["job", "run", "--name", "interrupted", "--", "node", "-e", "console.log('started'); setInterval(() => {}, 1000)"], env);
    try {
      await run.waitFor(/^started$/m);
      run.child.kill("SIGINT");
      expect(await run.exited).toBe(1);
      expect(run.stderr).toMatch(/^terminating \/clitest\/interrupted$/m);
      expect(run.stderr).toMatch(/^\/clitest\/interrupted KILLED/m);
    } finally {
      await run.stop();
    }
  });

  it("a wrong or missing token prints UNAUTHENTICATED and exits non-zero", async () => {
    const [wrong, missing] = await Promise.all([
      iris(["job", "list", "--token", "not-the-token"]),
      iris(["job", "run", "--name", "sneaky", "--", "true"], { IRIS_AUTH_TOKEN: "" }),
    ]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/^UNAUTHENTICATED: /m);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/^UNAUTHENTICATED: /m);
    // Nothing was submitted.
    expect((await iris(["job", "status", "sneaky"])).stderr).toMatch(/^NOT_FOUND: /m);
  });

  it("iris worker with a wrong or missing token prints UNAUTHENTICATED and exits 1 instead of retrying", async () => {
    const [wrong, missing] = await Promise.all([
      iris(["worker", "--token", "WRONG", "--state-dir", path.join(dir, "bad-worker-1")]),
      iris(["worker", "--state-dir", path.join(dir, "bad-worker-2")], { IRIS_AUTH_TOKEN: "" }),
    ]);
    for (const r of [wrong, missing]) {
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^UNAUTHENTICATED: /m);
    }
  });

  it("endpoints and workers list the cluster", async () => {
    const [endpoints, workers] = await Promise.all([iris(["endpoints"]), iris(["workers"])]);
    expect(endpoints.code, endpoints.stderr).toBe(0);
    expect(endpoints.stdout).toBe("no endpoints\n");
    expect(workers.code, workers.stderr).toBe(0);
    const [header, row, ...rest] = workers.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^WORKER +HOST +STATE +RUNNING +CPU USED\/TOTAL +MEMORY USED\/TOTAL +DEVICES +ATTRIBUTES$/);
    expect(row).toMatch(/ zone=test$/);
    expect(rest).toEqual([]);
  });
});

describe("iris cluster local", () => {
  it("serves jobs from one process and stops cleanly on SIGTERM", async () => {
    const cluster = new IrisProcess(["cluster", "local", "--workers", "2", "--port", "0", "--worker-cpu", "1"], {
      ...process.env,
      IRIS_USER: "clitest",
      IRIS_AUTH_TOKEN: "",
    });
    try {
      const [, address] = await cluster.waitFor(/listening on (\S+) with 2 workers/);
      // One core per worker and one per task: the two replicas need both workers.
      const r = await iris(["job", "run", "--replicas", "2", "--controller", address, "--", "node", "-e", "console.log('task ' + process.env.IRIS_TASK_INDEX)"], {
        IRIS_AUTH_TOKEN: "",
      });
      expect(r.code, r.stderr).toBe(0);
      expect(
        r.stdout
          .split("\n")
          .filter((l) => l.startsWith("["))
          .sort(),
      ).toEqual(["[0] task 0", "[1] task 1"]);
      // Its workers are a local scale group with min = max = 2 under the autoscaler.
      const st = await iris(["cluster", "status", "--json", "--controller", address], { IRIS_AUTH_TOKEN: "" });
      expect(st.code, st.stderr).toBe(0);
      const groups = (JSON.parse(st.stdout) as { groups: { name: string; provider: string; minWorkers: number; maxWorkers: number; workers: unknown[] }[] }).groups;
      expect(groups.map((g) => [g.name, g.provider, g.minWorkers, g.maxWorkers])).toEqual([["local", "local", 2, 2]]);
      expect(groups[0].workers).toHaveLength(2);
    } finally {
      expect(await cluster.stop()).toBe(0);
    }
  });

  it("splits the machine's cores and memory between its workers by default (iris workers, iris status)", async () => {
    const cluster = new IrisProcess(["cluster", "local", "--workers", "2", "--port", "0"], { ...process.env, IRIS_USER: "clitest", IRIS_AUTH_TOKEN: "" });
    try {
      const [, address] = await cluster.waitFor(/listening on (\S+) with 2 workers/);
      const each = Math.floor((os.availableParallelism() * 1000) / 2) / 1000;
      const workers = await iris(["workers", "--controller", address], { IRIS_AUTH_TOKEN: "" });
      expect(workers.code, workers.stderr).toBe(0);
      const rows = workers.stdout.trimEnd().split("\n").slice(1);
      expect(rows).toHaveLength(2);
      for (const row of rows) expect(row).toMatch(new RegExp(` ALIVE +0 +0/${each} +0 B/`));
      const status = await iris(["status", "--controller", address], { IRIS_AUTH_TOKEN: "" });
      expect(status.stdout).toMatch(new RegExp(`^cpu: +0 of ${each * 2} cores used, ${each * 2} free$`, "m"));
      expect(status.stdout).toMatch(/^jobs: +none$/m);
      expect(status.stdout).toMatch(/^pending tasks: none$/m);
    } finally {
      expect(await cluster.stop()).toBe(0);
    }
  });
});
