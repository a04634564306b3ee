// The marin CLI as real processes: racing runners, a killed runner, dry runs, explain, direct tsx runs, --cluster.
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { LocalCluster } from "@marin/iris";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOURCE_LOADER, waitFor } from "@marin/iris/testing";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../../..");
const cli = path.join(here, "main.ts");
const marinIndex = path.resolve(here, "../index.ts");

let tmp: string;
let script: string;

// The fixture: a → b, and c; each body appends "<name> <pid>" to $CALLS and takes $STEP_MS; with
// HANG=<name> that step writes a partial file and a marker, then never finishes.
const fixture = `
import { appendFile, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { defineStep, outputOf, runIfMain } from ${JSON.stringify(marinIndex)};

const body = (name) => async (ctx) => {
  await appendFile(process.env.CALLS, name + " " + process.pid + "\\n");
  // GATE: step a holds until the test creates that file (so a second runner is seen waiting for it).
  if (process.env.GATE && name === "a") {
    while (!(await readFile(process.env.GATE).then(() => true, () => false))) await new Promise((r) => setTimeout(r, 20));
  }
  await writeFile(path.join(ctx.outputPath, "partial.txt"), "partial");
  if (process.env.HANG === name) {
    await writeFile(process.env.MARKER, "started");
    await new Promise(() => undefined);
  }
  await new Promise((r) => setTimeout(r, Number(process.env.STEP_MS ?? 0)));
  await writeFile(path.join(ctx.outputPath, "result.txt"), name + ":" + JSON.stringify(ctx.config));
  return { name };
};

export default function build() {
  const a = defineStep({ name: "demo/a", config: { n: Number(process.env.N ?? 1), note: "x" }, fn: body("a") });
  const b = defineStep({ name: "demo/b", config: { input: outputOf(a, "result.txt") }, fn: body("b") });
  const c = defineStep({ name: "demo/c", config: { k: 3 }, fn: body("c") });
  if (!process.env.MARIN_TEST_REMOTE) return [b, c];
  // Runs as an iris job: the task re-imports this script and must rebuild the same step.
  const r = defineStep({ name: "demo/remote", resources: { cpuMillis: 100 }, config: { input: outputOf(b) }, fn: async (ctx) => {
    await writeFile(path.join(ctx.outputPath, "where.txt"), String(process.env.IRIS_JOB_ID));
    return { job: process.env.IRIS_JOB_ID, input: await readFile(path.join(ctx.config.input, "result.txt"), "utf8") };
  } });
  return [b, c, r];
}
await runIfMain(import.meta.url, build);
`;

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "marin-cli-"));
  await fs.writeFile(path.join(tmp, "package.json"), JSON.stringify({ type: "module" }));
  script = path.join(tmp, "exp.ts");
  await fs.writeFile(script, fixture);
});
afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

interface Done {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function start(args: string[], env: Record<string, string> = {}, entry = cli): { child: ChildProcess; done: Promise<Done>; stderr: () => string } {
  const child = spawn(process.execPath, ["--import", SOURCE_LOADER, entry, ...args], {
    cwd: repoRoot,
    env: { ...process.env, npm_lifecycle_event: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const done = new Promise<Done>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done, stderr: () => stderr };
}

const marin = (args: string[], env: Record<string, string> = {}) => start(args, env).done;

async function tree(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const n of await fs.readdir(d).catch(() => [] as string[])) {
      const p = path.join(d, n);
      const st = await fs.stat(p);
      out.push(`${path.relative(root, p)} ${st.mtimeMs}`);
      if (st.isDirectory()) await walk(p);
    }
  };
  await walk(root);
  return out.sort();
}

/** Every file under `root` (relative paths). */
async function files(root: string): Promise<string[]> {
  return (await tree(root)).map((l) => l.slice(0, l.lastIndexOf(" ")));
}

async function readCalls(file: string): Promise<string[]> {
  return (await fs.readFile(file, "utf8").catch(() => "")).split("\n").filter(Boolean);
}

describe("marin CLI (real processes)", () => {
  it("--help lists the commands", async () => {
    const r = await marin(["--help"]);
    expect(r.code).toBe(0);
    for (const c of ["run", "plan", "status", "explain", "runs", "logs"]) expect(r.stdout).toContain(c);
  });

  it("two runners on one prefix at once run each step exactly once", async () => {
    const prefix = path.join(tmp, "race");
    const calls = path.join(tmp, "race-calls.log");
    const gate = path.join(tmp, "race-gate");
    const env = { CALLS: calls, STEP_MS: "400", GATE: gate };
    const runners = [start(["run", script, "--prefix", prefix], env), start(["run", script, "--prefix", prefix], env)];
    let results: Done[];
    try {
      // Step a holds until the gate opens: wait until one runner reports waiting for the other's a.
      await waitFor("a runner waiting on the held step", async () => runners.some((r) => /demo\/a: waiting \(held by /.test(r.stderr())), { timeoutMs: 60_000, intervalMs: 50 });
      await fs.writeFile(gate, "open");
      results = await Promise.all(runners.map((r) => r.done));
    } finally {
      for (const r of runners) r.child.kill("SIGKILL");
    }
    const [r1, r2] = results;
    expect(r1.code, r1.stderr).toBe(0);
    expect(r2.code, r2.stderr).toBe(0);
    const names = (await readCalls(calls)).map((l) => l.split(" ")[0]).sort();
    expect(names).toEqual(["a", "b", "c"]);
    // They overlapped: one ran a, the other waited for it and reused its result.
    const aLines = [r1.stdout, r2.stdout].map((o) => /demo\/a\s+(\w+)/.exec(o)?.[1]).sort();
    expect(aLines).toEqual(["ran", "reused"]);
    const statusOut = await marin(["status", "--prefix", prefix]);
    expect(statusOut.stdout.match(/SUCCESS/g)).toHaveLength(3);
  });

  it("plan/--dry-run write nothing; explain names the changed field with old and new values", async () => {
    const prefix = path.join(tmp, "explain");
    const env = { CALLS: path.join(tmp, "explain-calls.log") };
    expect((await marin(["run", script, "--prefix", prefix], env)).code).toBe(0);
    const before = await tree(tmp);
    const dry = await marin(["run", script, "--prefix", prefix, "--dry-run"], { ...env, N: "5" });
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/run\s+demo\/a/);
    expect(dry.stdout).toMatch(/skip\s+demo\/c\s.*\n\s+already succeeded/);
    const plan = await marin(["plan", script, "--prefix", path.join(tmp, "nowhere")], env);
    expect(plan.stdout).toContain("never ran at this prefix");
    const explain = await marin(["explain", script, "demo/b", "--prefix", prefix], { ...env, N: "5" });
    expect(explain.code, explain.stderr).toBe(0);
    expect(explain.stdout).toContain("demo/b: would run");
    expect(explain.stdout).toMatch(/n: 1 → 5/);
    const same = await marin(["explain", script, "demo/c", "--prefix", prefix], env);
    expect(same.stdout).toContain("would skip");
    expect(await tree(tmp)).toEqual(before);
    await expect(fs.stat(path.join(tmp, "nowhere"))).rejects.toThrow();
  });

  it("running the script directly with tsx runs it like `marin run`", async () => {
    const prefix = path.join(tmp, "direct");
    const r = await start(["--prefix", prefix], { CALLS: path.join(tmp, "direct-calls.log") }, script).done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/demo\/a\s+ran/);
    expect((await readCalls(path.join(tmp, "direct-calls.log"))).length).toBe(3);
  });

  it("--cluster runs steps with resources as iris jobs on that cluster", async () => {
    const cluster = await LocalCluster.start({ workers: 1 });
    try {
      const prefix = path.join(tmp, "remote");
      const env = { CALLS: path.join(tmp, "remote-calls.log"), MARIN_TEST_REMOTE: "1" };
      // N is not forwarded to tasks (only MARIN_*, LEVANTER_*, ZEPHYR_* are): the task rebuilds a
      // different graph, and the fingerprint check refuses to run the step under the wrong identity.
      const mismatch = await marin(["run", script, "--prefix", prefix, "--cluster", cluster.address], { ...env, N: "7" });
      expect(mismatch.code).toBe(1);
      expect(mismatch.stdout).toMatch(/demo\/remote\s+FAILED/);
      expect(mismatch.stdout).toMatch(/step demo\/remote: the script now gives demo\/remote-\w+, the runner planned demo\/remote-\w+/);
      // The runner's identity travels with the task, so the refusal names what differs.
      expect(mismatch.stdout).toMatch(/Changed \(planned → now\): input: outputOf\(demo\/b-\w+\) → outputOf\(demo\/b-\w+\)/);
      // A deterministic failure: the task ends APP_ERROR with marin's code after one attempt, never retried.
      expect(mismatch.stdout).toMatch(/APP_ERROR\(FINGERPRINT_MISMATCH\): step demo\/remote/);
      const failedName = (await cluster.client.list()).find((j) => j.name.includes("marin-demo.remote-") && j.state === "FAILED")?.name;
      const failedJob = failedName === undefined ? undefined : await cluster.client.job(failedName).status();
      expect(failedJob?.tasks[0]?.errorCode).toBe("FINGERPRINT_MISMATCH");
      expect(failedJob?.tasks[0]?.attempts.map((a) => a.failureKind)).toEqual(["APP_ERROR"]);

      const r = await marin(["run", script, "--prefix", prefix, "--cluster", cluster.address], env);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/demo\/remote\s+ran/);
      const jobs = await cluster.client.list();
      expect(jobs.some((j) => j.name.includes("marin-demo.remote-") && j.state === "SUCCEEDED")).toBe(true);
      expect(r.stdout).toMatch(/job: "\/[^"]*marin-demo\.remote-/);
      expect(r.stdout).toMatch(/input: "b:/);
      const dir = /demo\/remote\s+ran\s+\S+\s+(\S+)/.exec(r.stdout)![1];
      expect((await fs.readdir(dir)).sort()).toEqual(["where.txt"]);
      const meta = path.join(path.dirname(dir), ".marin", path.basename(dir));
      // The step's return value came back as the iris task's result: no result file anywhere.
      const succeeded = (await cluster.client.list()).find((j) => j.name.includes("marin-demo.remote-") && j.state === "SUCCEEDED")!;
      expect(await cluster.client.job(succeeded.name).results()).toEqual([{ job: expect.stringContaining("marin-demo.remote-"), input: expect.stringMatching(/^b:/) }]);
      expect((await fs.readdir(meta)).sort()).toEqual(["info.json", "lease-1.json", "status.json"]);
      expect(JSON.parse(await fs.readFile(path.join(meta, "status.json"), "utf8")).result.input).toMatch(/^b:/);
      expect((await files(prefix)).filter((f) => /result/i.test(path.basename(f)) && path.basename(f) !== "result.txt")).toEqual([]);
    } finally {
      await cluster.stop();
    }
  });

  it("a runner killed mid-step leaves nothing marked SUCCESS, and the re-run completes", async () => {
    const prefix = path.join(tmp, "crash");
    const calls = path.join(tmp, "crash-calls.log");
    const marker = path.join(tmp, "crash-marker");
    const { child, done } = start(["run", script, "--prefix", prefix, "--max-concurrent", "1"], { CALLS: calls, HANG: "b", MARKER: marker });
    try {
      await waitFor(
        "the step's marker file",
        () =>
          fs.stat(marker).then(
            () => true,
            () => false,
          ),
        { timeoutMs: 60_000, intervalMs: 50 },
      );
    } finally {
      child.kill("SIGKILL");
    }
    expect((await done).signal).toBe("SIGKILL");

    // Bookkeeping lives beside the outputs (demo/.marin/b-<hash>/); the output folder appears only when published.
    const dirs = (await fs.readdir(path.join(prefix, "demo", ".marin"))).sort();
    const bId = dirs.find((d) => d.startsWith("b-"))!;
    const bDir = path.join(prefix, "demo", bId);
    const bMeta = path.join(prefix, "demo", ".marin", bId);
    const status = JSON.parse(await fs.readFile(path.join(bMeta, "status.json"), "utf8"));
    expect(status.state).toBe("RUNNING");
    await expect(fs.stat(bDir)).rejects.toThrow(/ENOENT/);
    const st = await marin(["status", "--prefix", prefix]);
    expect(st.stdout).toMatch(/demo\/b-\w+\s+RUNNING \(stale lease\)/);

    const rerun = await marin(["run", script, "--prefix", prefix], { CALLS: calls });
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toMatch(/demo\/b\s+ran/);
    expect(rerun.stdout).toMatch(/demo\/a\s+skipped/);
    expect(JSON.parse(await fs.readFile(path.join(bMeta, "status.json"), "utf8")).state).toBe("SUCCESS");
    expect((await fs.readdir(bDir)).sort()).toEqual(["partial.txt", "result.txt"]);
    const names = (await readCalls(calls)).map((l) => l.split(" ")[0]);
    expect(names.filter((n) => n === "b")).toHaveLength(2);
    expect(names.filter((n) => n === "a")).toHaveLength(1);
  });
});
