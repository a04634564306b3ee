// Tests of the CLI's argument parsing into actions (no processes).
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { IrisError } from "../errors.ts";
import { runCli, type CliActions } from "./program.ts";

const GiB = 1024 ** 3;

/** Actions that record what they were called with, and resolve to a chosen exit code. */
function recorder(exitCode = 0, fail?: unknown) {
  const calls: { action: keyof CliActions; args: unknown }[] = [];
  const handler = {
    get(_t: object, action: keyof CliActions) {
      return async (args: unknown) => {
        calls.push({ action, args });
        if (fail) throw fail;
        return exitCode;
      };
    },
  };
  return { actions: new Proxy({}, handler) as CliActions, calls };
}

async function cli(argv: string[], exitCode = 0, fail?: unknown) {
  const { actions, calls } = recorder(exitCode, fail);
  let out = "";
  let err = "";
  const code = await runCli(argv, actions, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, calls, out, err, args: calls[0]?.args as Record<string, unknown> | undefined };
}

describe("iris CLI parsing", () => {
  const saved = { ...process.env };
  beforeEach(() => {
    delete process.env.IRIS_CONTROLLER_ADDRESS;
    delete process.env.IRIS_AUTH_TOKEN;
  });
  afterEach(() => {
    process.env = { ...saved };
  });

  it("parses controller options, with --worker-timeout in seconds", async () => {
    const r = await cli(["controller", "--port", "0", "--db", "/tmp/x.sqlite", "--token", "s3cret", "--worker-timeout", "2.5"]);
    expect(r.code).toBe(0);
    expect(r.calls).toEqual([{ action: "controller", args: { port: 0, host: "127.0.0.1", dbPath: "/tmp/x.sqlite", token: "s3cret", workerTimeoutMs: 2500 } }]);
  });

  it("requires --db for the controller and rejects a bad port", async () => {
    const noDb = await cli(["controller", "--port", "1"]);
    expect(noDb.code).toBe(1);
    expect(noDb.calls).toEqual([]);
    expect(noDb.err).toMatch(/--db <file>/);
    const badPort = await cli(["controller", "--db", "x", "--port", "70000"]);
    expect(badPort.code).toBe(1);
    expect(badPort.err).toMatch(/in 0\.\.65535/);
  });

  it("takes the token from IRIS_AUTH_TOKEN and the controller from IRIS_CONTROLLER_ADDRESS", async () => {
    process.env.IRIS_AUTH_TOKEN = "from-env";
    process.env.IRIS_CONTROLLER_ADDRESS = "10.0.0.1:7070";
    const r = await cli(["job", "list"]);
    expect(r.args).toEqual({ controller: "10.0.0.1:7070", token: "from-env", prefix: undefined, json: false });
    const flag = await cli(["job", "list", "--token", "flag", "--controller", "h:1"]);
    expect(flag.args).toMatchObject({ controller: "h:1", token: "flag" });
    const ctl = await cli(["controller", "--db", "d"]);
    expect(ctl.args).toMatchObject({ token: "from-env", port: 7070 });
  });

  it("fails without a controller address, naming the variable", async () => {
    const r = await cli(["job", "status", "x"]);
    expect(r.code).toBe(1);
    expect(r.calls).toEqual([]);
    expect(r.err).toMatch(/--controller <address> is required \(or set IRIS_CONTROLLER_ADDRESS\)/);
  });

  it("parses worker capacity: cores, human sizes and repeated attributes", async () => {
    const r = await cli(["worker", "--controller", "c:1", "--cpu", "0.5", "--memory", "2G", "--attr", "zone=us-east", "--attr", "tier=a=b"]);
    expect(r.args).toEqual({
      controller: "c:1",
      token: undefined,
      cpuMillis: 500,
      memoryBytes: 2 * GiB,
      attributes: { zone: "us-east", tier: "a=b" },
      stateDir: undefined,
      advertiseHost: undefined,
      verbose: false,
      bundleCache: undefined,
      bundleInstallFlags: undefined,
      bundleCacheKeep: undefined,
      adopt: true,
      adoptGraceMs: undefined,
      workerId: undefined,
      credentialFile: undefined,
      preemptible: false,
    });
    const provided = await cli(["worker", "--controller", "c:1", "--worker-id", "w-7", "--credential-file", "/state/w-7.cred", "--preemptible"]);
    expect(provided.args).toMatchObject({ workerId: "w-7", credentialFile: "/state/w-7.cred", preemptible: true });
    const bundled = await cli([
      "worker",
      "--controller",
      "c:1",
      "--bundle-cache",
      "/cache",
      "--bundle-install-flag=--ignore-scripts",
      "--no-adopt",
      "--adopt-grace",
      "2.5",
      "--bundle-cache-keep",
      "3",
    ]);
    expect(bundled.args).toMatchObject({ bundleCache: "/cache", bundleInstallFlags: ["--ignore-scripts"], adopt: false, adoptGraceMs: 2500, bundleCacheKeep: 3 });
    const drain = await cli(["worker", "drain", "w-1", "--controller", "c:1"]);
    expect(drain.calls).toEqual([{ action: "workerDrain", args: { controller: "c:1", token: undefined, workerId: "w-1" } }]);
    const run = await cli(["job", "run", "--controller", "c:1", "--bundle", "--", "echo", "hi"]);
    expect(run.args).toMatchObject({ bundle: true, spec: { entrypoint: { command: ["echo", "hi"] } } });
    const bad = await cli(["worker", "--controller", "c:1", "--memory", "lots"]);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/--memory <size>.*lots.*expected a size/s);
    const badAttr = await cli(["worker", "--controller", "c:1", "--attr", "novalue"]);
    expect(badAttr.err).toMatch(/expected key=value/);
  });

  it("parses cluster local", async () => {
    const r = await cli(["cluster", "local", "--workers", "3", "--port", "0", "--worker-memory", "512M"]);
    expect(r.calls).toEqual([
      {
        action: "clusterLocal",
        args: { workers: 3, port: 0, token: undefined, dbPath: undefined, workerCpuMillis: undefined, workerMemoryBytes: 512 * 1024 ** 2 },
      },
    ]);
    expect((await cli(["cluster", "local", "--workers", "0"])).code).toBe(1);
    expect((await cli(["cluster", "local", "--http-port", "8080"])).args).toMatchObject({ httpPort: 8080 });
    expect((await cli(["controller", "--db", "d", "--http-port", "0"])).args).toMatchObject({ httpPort: 0 });
    expect((await cli(["cluster", "local", "--http-port", "70000"])).code).toBe(1);
    expect((await cli(["controller", "--db", "d", "--bundle-keep", "0"])).args).toMatchObject({ bundleKeep: 0 });
    expect((await cli(["controller", "--db", "d"])).args).not.toHaveProperty("bundleKeep");
    expect((await cli(["controller", "--db", "d", "--bundle-keep", "-1"])).code).toBe(1);
  });

  it("builds a job spec from job run options and the command after --", async () => {
    const r = await cli([
      "job",
      "run",
      "--controller",
      "c:1",
      "--name",
      "train",
      "--replicas",
      "4",
      "--cpu",
      "1.5",
      "--memory",
      "1.5Gi",
      "--max-retries",
      "2",
      "--max-preemptions",
      "0",
      "--gang",
      "--constraint",
      "zone=us-east",
      "--constraint",
      "rank>3",
      "--env",
      "A=1",
      "--port",
      "coord",
      "--timeout",
      "60",
      "--",
      "node",
      "-e",
      "process.exit(3)",
      "--name",
      "not-an-option",
    ]);
    expect(r.code).toBe(0);
    expect(r.args).toEqual({
      controller: "c:1",
      token: undefined,
      detach: false,
      spec: {
        name: "train",
        entrypoint: { command: ["node", "-e", "process.exit(3)", "--name", "not-an-option"] },
        replicas: 4,
        gang: true,
        resources: { cpuMillis: 1500, memoryBytes: 1.5 * GiB },
        maxRetriesFailure: 2,
        maxRetriesPreemption: 0,
        constraints: [
          { key: "zone", op: "EQ", value: "us-east" },
          { key: "rank", op: "GT", value: "3" },
        ],
        env: { A: "1" },
        ports: ["coord"],
        timeoutMs: 60_000,
      },
    });
  });

  it("leaves the name out of the spec when --name is absent, and passes options after the command through", async () => {
    const r = await cli(["job", "run", "--controller", "c:1", "echo", "-n", "hi"]);
    expect(r.args).toEqual({ controller: "c:1", token: undefined, detach: false, spec: { entrypoint: { command: ["echo", "-n", "hi"] } } });
  });

  it("requires a command for job run", async () => {
    const r = await cli(["job", "run", "--controller", "c:1"]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/missing required argument 'command'/);
  });

  it("builds a module entrypoint from --module, --export and --args (JSON), and refuses a command beside it", async () => {
    const r = await cli(["job", "run", "--controller", "c:1", "--module", "tasks/train.ts", "--export", "train", "--args", '{"steps":3}']);
    expect(r.code).toBe(0);
    expect(r.args).toMatchObject({ spec: { entrypoint: { module: path.resolve("tasks/train.ts"), export: "train", args: { steps: 3 } } } });
    expect((await cli(["job", "run", "--controller", "c:1", "--module", "/m.ts"])).args).toMatchObject({ spec: { entrypoint: { module: "/m.ts", export: "main" } } });
    const both = await cli(["job", "run", "--controller", "c:1", "--module", "/m.ts", "--", "echo"]);
    expect(both.code).toBe(1);
    expect(both.err).toMatch(/either a command or --module/);
    const badJson = await cli(["job", "run", "--controller", "c:1", "--module", "/m.ts", "--args", "{oops"]);
    expect(badJson.code).toBe(1);
    expect(badJson.err).toMatch(/--args <json>.*expected JSON/);
  });

  it("parses status, logs -f, kill and endpoints", async () => {
    const env = ["--controller", "c:1"];
    expect((await cli(["job", "status", "train", ...env])).calls).toEqual([{ action: "jobStatus", args: { controller: "c:1", token: undefined, name: "train", json: false } }]);
    expect((await cli(["job", "logs", "/u/train", "-f", ...env])).args).toMatchObject({ name: "/u/train", follow: true });
    expect((await cli(["job", "logs", "train", ...env])).args).toMatchObject({ follow: false });
    expect((await cli(["job", "kill", "train", ...env])).calls[0].action).toBe("jobKill");
    expect((await cli(["endpoints", "/u/job/", ...env])).args).toMatchObject({ prefix: "/u/job/" });
    expect((await cli(["endpoints", ...env])).args).toMatchObject({ prefix: undefined });
    expect((await cli(["workers", "--json", ...env])).calls).toEqual([{ action: "workers", args: { controller: "c:1", token: undefined, json: true } }]);
    expect((await cli(["endpoint", "token", "/u/job/serve/m", "--ttl", "120", ...env])).calls).toEqual([
      { action: "endpointToken", args: { controller: "c:1", token: undefined, name: "/u/job/serve/m", ttlSeconds: 120, json: false } },
    ]);
    expect((await cli(["endpoint", "token", "/u/job/serve/m", ...env])).args).toMatchObject({ ttlSeconds: undefined });
    expect((await cli(["controller", "--db", "/tmp/x.sqlite", "--http-port", "0"])).args).toMatchObject({ httpPort: 0 });
  });

  it("returns the action's exit code", async () => {
    expect((await cli(["job", "run", "--controller", "c:1", "--", "false"], 3)).code).toBe(3);
  });

  it("prints an IrisError as CODE: message and exits 1", async () => {
    const r = await cli(["job", "list", "--controller", "c:1"], 0, new IrisError("UNAUTHENTICATED", "missing or invalid bearer token"));
    expect(r.code).toBe(1);
    expect(r.err).toBe("UNAUTHENTICATED: missing or invalid bearer token\n");
  });

  it("prints help for every command and exits 0", async () => {
    for (const argv of [[], ["job"], ["job", "run"], ["cluster", "local"], ["worker"], ["controller"], ["endpoints"], ["workers"]]) {
      const r = await cli([...argv, "--help"]);
      expect(r.code, argv.join(" ")).toBe(0);
      expect(r.out, argv.join(" ")).toMatch(/^Usage: iris/);
      expect(r.calls).toEqual([]);
    }
    expect((await cli(["job", "run", "--help"])).out).toMatch(/--max-preemptions <n>/);
  });

  it("rejects unknown commands and options", async () => {
    expect((await cli(["jobs"])).code).toBe(1);
    expect((await cli(["job", "list", "--controller", "c:1", "--bogus"])).err).toMatch(/unknown option '--bogus'/);
  });

  it("parses --scheduling-timeout (seconds) on controller, cluster local and job run, and job list --state", async () => {
    const c = await cli(["controller", "--db", "/tmp/x.sqlite", "--scheduling-timeout", "60"]);
    expect(c.args).toMatchObject({ schedulingTimeoutMs: 60_000 });
    const l = await cli(["cluster", "local", "--scheduling-timeout", "0"]);
    expect(l.args).toMatchObject({ schedulingTimeoutMs: 0 });
    const j = await cli(["job", "run", "--controller", "h:1", "--scheduling-timeout", "1.5", "--", "true"]);
    expect((j.args as { spec: unknown }).spec).toMatchObject({ schedulingTimeoutMs: 1500 });
    const list = await cli(["job", "list", "--controller", "h:1", "--state", "running"]);
    expect(list.args).toMatchObject({ state: "RUNNING" });
    const bad = await cli(["job", "list", "--controller", "h:1", "--state", "done"]);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/expected one of PENDING, RUNNING, SUCCEEDED, FAILED, KILLED, UNSCHEDULABLE, got "done"/);
    expect((await cli(["status", "--controller", "h:1"])).calls).toEqual([{ action: "status", args: { controller: "h:1", token: undefined, json: false } }]);
  });

  it("prints a readable line for an unreachable controller and CODE: message for other errors", async () => {
    const refused = new IrisError("UNAVAILABLE", "No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:9. Resolution note: ");
    const r = await cli(["job", "list", "--controller", "127.0.0.1:9"], 0, refused);
    expect(r.code).toBe(1);
    expect(r.err).toBe("cannot reach the iris controller at 127.0.0.1:9 (connection refused) — is it running? start one with: iris cluster local\n");
    const other = await cli(["job", "list", "--controller", "h:1"], 0, new IrisError("UNAVAILABLE", "controller shutting down"));
    expect(other.err).toBe("UNAVAILABLE: controller shutting down\n");
  });
});
