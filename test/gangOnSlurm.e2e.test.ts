// Training gangs through `--cluster` on autoscaled Slurm workers (issue #27, requirement 7): `iris
// cluster up` with one Slurm group that starts from zero (max 3 workers) on a real test Slurm.
// `marin run experiments/tiny-brown.ts --cluster` (shortened, the train step on 2 ranks): its steps
// with resources run from the bundle of this checkout on Slurm workers; the train step, seeing one
// worker registered (its own, busy while it waits), asks the controller whether its group could
// start 2 more and submits the gang as its child job there (it used to fall back to an embedded
// cluster that refused the bundle). Then `levanter train --ranks 2 --cluster` on the tokens that
// run made: one gang attempt on 2 workers.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { IrisClient, type JobStatus } from "@marin/iris";
import { skipUnlessSlurm, startSlurm, waitFor, type TestSlurm } from "@marin/iris/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DEV = path.join(root, "scripts", "dev.mjs");
const IRIS_CLI = path.join(root, "packages", "iris", "src", "cli", "main.ts");
const MARIN_CLI = path.join(root, "packages", "marin", "src", "cli", "main.ts");
const LEVANTER_CLI = path.join(root, "packages", "levanter", "src", "cli", "main.ts");
const TOKEN = "gang-on-slurm-token";

const skip = skipUnlessSlurm("training gangs on Slurm");

/** Runs a CLI of this checkout to its end: exit code, stdout, and stdout with stderr. */
function runCli(args: string[], env: Record<string, string>, timeoutMs: number): Promise<{ code: number | null; stdout: string; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [DEV, ...args], {
      cwd: root,
      env: { ...process.env, ...env, IRIS_AUTH_TOKEN: TOKEN, npm_lifecycle_event: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let out = "";
    child.stdout.on("data", (d: Buffer) => ((stdout += d.toString()), (out += d.toString())));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const t = setTimeout(() => child.kill("SIGTERM"), timeoutMs);
    child.on("close", (code) => (clearTimeout(t), resolve({ code, stdout, out })));
  });
}

describe.skipIf(skip)("training gangs through --cluster on autoscaled Slurm workers", () => {
  let slurm: TestSlurm;
  let dir: string;
  let up: ChildProcess | undefined;
  let upOut = "";
  let client: IrisClient;
  let address: string;

  beforeAll(async () => {
    slurm = await startSlurm();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "gang-slurm-"));
    const config = {
      controller: { host: "127.0.0.1", port: 0, db: path.join(dir, "iris.sqlite"), token: TOKEN, workerTimeout: 30 },
      scaleGroups: [
        {
          name: "cpu",
          provider: "slurm",
          minWorkers: 0,
          maxWorkers: 3,
          idleTimeout: "2m",
          bootTimeout: "120s",
          worker: { cpu: 2, memory: "8G" },
          slurm: { partition: slurm.partition, setup: ["export npm_config_ignore_scripts=true"] },
        },
      ],
    };
    // Port 0: the controller binds a free port itself (its address comes from its ready line); a
    // port found free beforehand could be taken by another process first (EADDRINUSE).
    fs.writeFileSync(path.join(dir, "cluster.yaml"), JSON.stringify(config)); // JSON is YAML
    // The Slurm workers unpack the bundle of this checkout into a cache of this test's own
    // (IRIS_BUNDLE_CACHE reaches them), and install it without its lifecycle scripts (slurm.setup):
    // the ranks run the TypeScript source, as in test/severalHosts; building every package and
    // levanter's native addon in the bundle would cost a minute of CPU this test is not about.
    const env = { ...slurm.env, IRIS_BUNDLE_CACHE: path.join(dir, "bundles") };
    up = spawn(process.execPath, [DEV, IRIS_CLI, "cluster", "up", "--config", path.join(dir, "cluster.yaml")], { env, stdio: ["ignore", "pipe", "pipe"] });
    up.stdout!.on("data", (d: Buffer) => (upOut += d.toString()));
    up.stderr!.on("data", (d: Buffer) => (upOut += d.toString()));
    address = await waitFor(
      "iris cluster up's ready line",
      () => {
        if (up!.exitCode !== null) throw new Error(`iris cluster up exited ${up!.exitCode}: ${upOut}`);
        return /listening on (\S+)/.exec(upOut)?.[1];
      },
      { timeoutMs: 60_000 },
    );
    client = IrisClient.connect(address, { token: TOKEN });
    expect(await client.listWorkers()).toEqual([]);
  }, 120_000);

  afterAll(async () => {
    client?.close();
    if (up && up.exitCode === null && up.signalCode === null) {
      const exited = new Promise<void>((r) => up!.once("exit", () => r()));
      up.kill("SIGTERM");
      const t = setTimeout(() => up!.kill("SIGKILL"), 60_000);
      await exited;
      clearTimeout(t);
    }
    if (slurm) spawnSync("scancel", ["--full", "-u", os.userInfo().username], { env: slurm.env });
    await slurm?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  /** The SUCCEEDED gang jobs named `leaf`, each with its tasks. */
  async function gangs(leaf: string): Promise<JobStatus[]> {
    const jobs = (await client.list()).filter((j) => j.name.endsWith(`/${leaf}`) && j.state === "SUCCEEDED");
    return Promise.all(jobs.map((j) => client.job(j.name).status()));
  }

  let tokens: string | undefined;

  it("marin run experiments/tiny-brown.ts --cluster: the train step's 2 ranks run as its child gang on 2 Slurm workers", async () => {
    const prefix = path.join(dir, "out");
    const env = { MARIN_TINY_BROWN_FILES: "20", MARIN_TINY_BROWN_STEPS: "20", MARIN_TINY_BROWN_DMODEL: "32", MARIN_TINY_BROWN_RANKS: "2" };
    const r = await runCli([MARIN_CLI, "run", path.join(root, "experiments", "tiny-brown.ts"), "--prefix", prefix, "--cluster", address, "--no-dashboard"], env, 840_000);
    expect(r.code, `${r.out}\n--- iris cluster up:\n${upOut}`).toBe(0);
    expect(r.stdout).toMatch(/tiny-brown\/train\s+ran\s/);
    expect(r.stdout).toMatch(/ranks: 2/);
    const [gang] = await gangs("levanter-train");
    expect(gang, JSON.stringify((await client.list()).map((j) => [j.name, j.state]))).toBeDefined();
    // A child of the train step's job, one attempt, its ranks on 2 distinct Slurm workers.
    expect(gang!.name).toMatch(/tiny-brown\.train-[^/]*\/levanter-train$/);
    expect(gang!.tasks.map((t) => Math.max(t.attempt, t.attempts.length))).toEqual([1, 1]);
    expect(new Set(gang!.tasks.map((t) => t.workerId)).size).toBe(2);
    // The step's log gives the reason.
    const stepJob = gang!.name.slice(0, gang!.name.lastIndexOf("/"));
    const lines: string[] = [];
    for await (const e of client.job(stepJob).logs()) lines.push(e.line);
    expect(lines.join("\n")).toMatch(
      /autoscaler could start 2 in group cpu \(groups holding a rank: cpu \(max 3, this task's worker among them\)\): running the gang as a child job/,
    );
    const tokDir = fs.readdirSync(path.join(prefix, "tiny-brown")).find((d) => d.startsWith("tokenize-"));
    tokens = tokDir && path.join(prefix, "tiny-brown", tokDir, "train");
  }, 900_000);

  it("levanter train --ranks 2 --cluster: one gang attempt on 2 Slurm workers", async () => {
    expect(tokens, "the marin run left no token cache").toBeDefined();
    const config = path.join(dir, "lev.yaml");
    fs.writeFileSync(
      config,
      `model: {nLayers: 1, dModel: 16, nHeads: 2, seqLen: 16}\ndata: {trainCache: ${tokens}}\ntrainer: {numTrainSteps: 4, batchSize: 4, trackers: [jsonl], backend: wasm, threads: 1, runDir: ${path.join(dir, "lev-run")}}\n`,
    );
    const r = await runCli([LEVANTER_CLI, "train", "--config", config, "--ranks", "2", "--cluster", address], { LEVANTER_LOG: "warn" }, 400_000);
    expect(r.code, r.out).toBe(0);
    const result = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as { state: string; ranks: number; job: string; attempts: number };
    expect(result, r.out).toMatchObject({ state: "SUCCEEDED", ranks: 2, attempts: 1 });
    const st = await client.job(result.job).status();
    expect(new Set(st.tasks.map((t) => t.workerId)).size).toBe(2);
    expect(
      fs
        .readFileSync(path.join(dir, "lev-run", "metrics.jsonl"), "utf8")
        .trim()
        .split("\n"),
    ).toHaveLength(4);
  }, 420_000);
});
