// What a new user trips over, as real `marin` processes: unusable prefixes, misspelled options, changed code, progress, runs/logs, Ctrl-C, a SIGKILL during publish.
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, promises as fs, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOURCE_LOADER, waitFor } from "@marin/iris/testing";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../../..");
const cli = path.join(here, "main.ts");
const marinIndex = path.resolve(here, "../index.ts");

let tmp: string;
beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "marin-newuser-"));
  await fs.writeFile(path.join(tmp, "package.json"), JSON.stringify({ type: "module" }));
});
afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

interface Done {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function start(args: string[], env: Record<string, string> = {}): { child: ChildProcess; done: Promise<Done>; out: () => string } {
  const t0 = Date.now();
  const child = spawn(process.execPath, ["--import", SOURCE_LOADER, cli, ...args], {
    cwd: repoRoot,
    env: { ...process.env, npm_lifecycle_event: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  const done = new Promise<Done>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 })));
  return { child, done, out: () => stdout + stderr };
}
const marin = (args: string[], env: Record<string, string> = {}) => start(args, env).done;

/** Runs marin, but never lets it outlive `ms` (a spinning mkdir ignores SIGTERM): SIGKILLed then, and the result says so. */
async function marinWithin(ms: number, args: string[]): Promise<Done> {
  const run = start(args);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      run.done,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`marin ${args.join(" ")} still running after ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
    run.child.kill("SIGKILL");
  }
}

async function writeScript(name: string, body: string): Promise<string> {
  const file = path.join(tmp, name);
  await fs.writeFile(
    file,
    `import { writeFile, readFile, appendFile } from "node:fs/promises";\nimport path from "node:path";\nimport * as m from ${JSON.stringify(marinIndex)};\n${body}`,
  );
  return file;
}

let hello: string;
beforeAll(async () => {
  hello = await writeScript(
    "hello.ts",
    `export default () => [m.defineStep({ name: "hello", config: { n: 1 }, fn: async (ctx) => { await writeFile(path.join(ctx.outputPath, "x.txt"), "x"); } })];`,
  );
});

describe("an unusable --prefix is refused before anything runs", () => {
  it("under /proc: fails in seconds, naming the path, without a stack trace", async () => {
    const r = await marinWithin(30_000, ["run", hello, "--prefix", "/proc/marin-no-such/out"]);
    expect(r.code).toBe(1);
    expect(r.ms).toBeLessThan(30_000);
    expect(r.stderr).toContain("/proc/marin-no-such/out");
    expect(r.stderr).toMatch(/a directory cannot be created here/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("an existing folder under /proc fails too (it passes access(2) but refuses new entries)", async () => {
    const r = await marinWithin(30_000, ["run", hello, "--prefix", "/proc/self"]);
    expect(r.code).toBe(1);
    expect(r.ms).toBeLessThan(30_000);
    expect(r.stderr).toMatch(/--prefix \/proc\/self \(at \/proc\/self\/\.marin\): /);
  });

  it("a file in the way says not a directory; /sys says permission denied", async () => {
    const file = path.join(tmp, "a-file");
    await fs.writeFile(file, "");
    const r = await marin(["run", hello, "--prefix", path.join(file, "out")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${file}/out (at ${file}): not a directory`);
    const sys = await marin(["run", hello, "--prefix", "/sys/marin-no-such"]);
    expect(sys.code).toBe(1);
    expect(sys.stderr).toMatch(/--prefix \/sys\/marin-no-such: permission denied \(EPERM\)/);
    expect(sys.stderr, `stderr was: ${sys.stderr}`).not.toMatch(/\n\s+at /);
  });
});

describe("misspelled options of standard steps are errors at run time", () => {
  it("cleanText({ minChar }) names the key and suggests minChars; nothing is written", async () => {
    const script = await writeScript(
      "typo.ts",
      `export default () => { const imp = m.importCorpus({ files: "/nowhere/*.txt" }); return [m.cleanText({ input: m.outputOf(imp), minChar: 40 } as never)]; };`,
    );
    const prefix = path.join(tmp, "typo-out");
    const r = await marin(["run", script, "--prefix", prefix]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cleanText: invalid options:\n  unknown key minChar (did you mean minChars?)");
    await expect(fs.stat(prefix)).rejects.toThrow(/ENOENT/);
  });

  it("trainLmStep's trainer.numTrainStep is named, without a spurious missing-field error", async () => {
    const script = await writeScript(
      "typo-train.ts",
      `export default () => { const d = m.defineStep({ name: "d", config: {}, fn: () => undefined }); return [m.trainLmStep({ data: m.outputOf(d), model: {}, trainer: { numTrainStep: 20 } } as never)]; };`,
    );
    const r = await marin(["plan", script, "--prefix", path.join(tmp, "typo-train-out")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("unknown key trainer.numTrainStep (did you mean numTrainSteps?)");
    expect(r.stderr).not.toMatch(/missing|expected number/);
  });
});

describe("changed code of a cached step is pointed out", () => {
  it("plan, explain and run say code changed since this output was written, and suggest version or --force", async () => {
    const body = (word: string) =>
      `export default () => [m.defineStep({ name: "c", config: { k: 1 }, fn: async (ctx) => { await writeFile(path.join(ctx.outputPath, "w.txt"), ${JSON.stringify(word)}); } })];`;
    const script = await writeScript("code.ts", body("one"));
    const prefix = path.join(tmp, "code-out");
    expect((await marin(["run", script, "--prefix", prefix])).code).toBe(0);
    const unchanged = await marin(["plan", script, "--prefix", prefix]);
    expect(unchanged.stdout).not.toContain("code changed");
    await writeScript("code.ts", body("two"));
    const plan = await marin(["plan", script, "--prefix", prefix]);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toMatch(/skip\s+c\s.*\n\s+already succeeded; code changed since this output was written .*`version`.*--force/);
    const explain = await marin(["explain", script, "c", "--prefix", prefix]);
    expect(explain.stdout).toContain("code changed since this output was written");
    const run = await marin(["run", script, "--prefix", prefix]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/warning: c: already succeeded; code changed since this output was written/);
    expect(run.stdout).toMatch(/c\s+skipped \(cached\)/);
  });
});

describe("progress, runs, logs and Ctrl-C", () => {
  it("a running step's status reports appear in the live view, in-process and as an iris job", async () => {
    const gate = path.join(tmp, "progress-gate");
    const script = await writeScript(
      "progress.ts",
      `const wait = async (f) => { while (!(await readFile(f).then(() => true, () => false))) await new Promise((r) => setTimeout(r, 20)); };
export default () => [
  m.defineStep({ name: "local", config: {}, fn: async (ctx) => { ctx.reportStatus("step 3/10 (30.0%) · loss 2.5000 · 1,234 tok/s · ETA 7s"); await wait(process.env.MARIN_GATE + "-local"); } }),
  m.defineStep({ name: "remote", config: {}, resources: { cpuMillis: 100 }, fn: async (ctx) => { ctx.reportStatus("step 4/10 (40.0%) · loss 2.4000 · 999 tok/s · ETA 6s", { step: 4 }); await wait(process.env.MARIN_GATE + "-remote"); } }),
];`,
    );
    const run = start(["run", script, "--prefix", path.join(tmp, "progress-out")], { MARIN_GATE: gate });
    try {
      await waitFor("the in-process step's progress", () => /local: step 3\/10 \(30\.0%\) · loss 2\.5000 · 1,234 tok\/s · ETA 7s/.test(run.out()), {
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      await waitFor("the iris step's progress", () => /remote: step 4\/10 \(40\.0%\) · loss 2\.4000 · 999 tok\/s · ETA 6s/.test(run.out()), {
        timeoutMs: 120_000,
        intervalMs: 100,
      });
      await fs.writeFile(`${gate}-local`, "");
      await fs.writeFile(`${gate}-remote`, "");
      const r = await run.done;
      expect(r.code, r.stdout + r.stderr).toBe(0);
    } finally {
      run.child.kill("SIGKILL");
    }
  });

  it("Ctrl-C makes the running step and its dependants CANCELLED; runs lists the runs; logs prints and follows a step's log", async () => {
    const prefix = path.join(tmp, "cancel-out");
    const marker = path.join(tmp, "cancel-marker");
    const script = await writeScript(
      "cancel.ts",
      `export default () => {
  const a = m.defineStep({ name: "a", config: { hang: m.ignore(!!process.env.HANG) }, fn: async (ctx) => {
    ctx.log("a says hello");
    if (ctx.config.hang) {
      await writeFile(process.env.MARKER, "started");
      await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
    }
    ctx.log("a says goodbye");
  } });
  const b = m.defineStep({ name: "b", config: { a: m.outputOf(a) }, fn: () => undefined });
  const c = m.defineStep({ name: "c", config: { b: m.outputOf(b) }, fn: () => undefined });
  return [c];
};`,
    );
    const run = start(["run", script, "--prefix", prefix], { HANG: "1", MARKER: marker });
    let follow: ReturnType<typeof start> | undefined;
    let r: Done;
    let followed: Done;
    try {
      await waitFor("step a running", () => existsSync(marker), { timeoutMs: 60_000, intervalMs: 50 });
      // Follow a's log while the run lives: it ends by itself when the run ends.
      const f = start(["logs", "a", "--prefix", prefix, "-f"]);
      follow = f;
      await waitFor("the follower printing a's first line", () => f.out().includes("a says hello"), { timeoutMs: 60_000, intervalMs: 50 });
      run.child.kill("SIGINT");
      r = await run.done;
      followed = await f.done;
    } finally {
      run.child.kill("SIGKILL");
      follow?.child.kill("SIGKILL");
    }
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^\s+a\s+CANCELLED/m);
    expect(r.stdout).toMatch(/^\s+b\s+CANCELLED/m);
    expect(r.stdout).toMatch(/^\s+c\s+CANCELLED/m);
    expect(r.stdout).not.toContain("DEP_FAILED");
    expect(r.stdout).toMatch(/^logs: .*\.marin\/runs\/[^/]+\/logs$/m);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toContain("a says hello");
    expect(followed.stdout).toMatch(/step failed: .*run cancelled/);

    const status = await marin(["status", "--prefix", prefix]);
    expect(status.stdout).toMatch(/^a-\w+\s+CANCELLED/m);
    expect(status.stdout).toMatch(/^b-\w+\s+CANCELLED/m);
    const plan = await marin(["plan", script, "--prefix", prefix]);
    expect(plan.stdout).toMatch(/run\s+a\s.*\n\s+CANCELLED last time; would rerun/);

    const again = await marin(["run", script, "--prefix", prefix]);
    expect(again.code, again.stderr).toBe(0);
    const runs = await marin(["runs", "--prefix", prefix]);
    expect(runs.code).toBe(0);
    const lines = runs.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^RUN\s+STARTED\s+STATE\s+RAN\s+SKIPPED\s+FAILED\s+CANCELLED$/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^\S+\s+\d{4}-\d\d-\d\dT\S+\s+failed\s+0\s+0\s+0\s+3$/);
    expect(lines[2]).toMatch(/^\S+\s+\d{4}-\d\d-\d\dT\S+\s+ok\s+3\s+0\s+0\s+0$/);
    const logs = await marin(["logs", "a", "--prefix", prefix]);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain("a says goodbye"); // the newest run's log
    const none = await marin(["logs", "nope", "--prefix", prefix]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no log of step "nope"/);
  });
});

describe("a SIGKILL during publish never leaves a half-filled output folder", () => {
  const FILES = 2000;
  // The runner is SIGKILLed (a real SIGKILL of its process, by itself) at an exact point of the
  // publish: the script, which runs in the runner's process, wraps fs.promises.rename and kills the
  // process just before, or just after, the rename of the staging folder to the output folder.
  // Deterministic where a watcher racing the runner for the journal's few microseconds was not.
  for (const at of ["before-rename", "after-rename"] as const) {
    it(`killed ${at}: the output folder is absent or complete at every moment; the next run completes the publish`, async () => {
      const dir = path.join(tmp, `publish-${at}`);
      await fs.mkdir(dir);
      const calls = path.join(dir, "calls");
      const killed = path.join(dir, "killed");
      const script = await writeScript(
        `publish-${at}.ts`,
        `import { promises as fsp, appendFileSync } from "node:fs";
const realRename = fsp.rename;
fsp.rename = async (from, to) => {
  const publishing = process.env.KILL_AT !== undefined && /^staging-\\d+$/.test(path.basename(String(from))) && /^big-/.test(path.basename(String(to)));
  const die = () => { appendFileSync(process.env.KILLED, process.env.KILL_AT + "\\n"); process.kill(process.pid, "SIGKILL"); };
  if (publishing && process.env.KILL_AT === "before-rename") die();
  await realRename(from, to);
  if (publishing && process.env.KILL_AT === "after-rename") die();
};
export default () => [m.defineStep({ name: "pub/big", config: { files: ${FILES} }, fn: async (ctx) => {
  await appendFile(process.env.CALLS, "x\\n");
  for (let i = 0; i < ctx.config.files; i++) await writeFile(path.join(ctx.outputPath, "f" + i), String(i));
  return { files: ctx.config.files };
} })];`,
      );
      const prefix = path.join(dir, "out");
      const metaRoot = path.join(prefix, "pub", ".marin");
      const outputs = () => (existsSync(path.join(prefix, "pub")) ? readdirSync(path.join(prefix, "pub")).filter((n) => n.startsWith("big-")) : []);
      // While the runner lives, every look at the output folder finds it absent or holding all its files.
      const seen: number[] = [];
      const run = start(["run", script, "--prefix", prefix], { CALLS: calls, KILLED: killed, KILL_AT: at });
      let running = true;
      const watching = (async () => {
        while (running) {
          for (const id of outputs()) {
            try {
              seen.push(readdirSync(path.join(prefix, "pub", id)).length);
            } catch {
              // renamed away between the listing and the look: nothing seen
            }
          }
          // A look every ~2 ms (2,000 files take far longer to write): not a core spinning beside the runner.
          await new Promise((r) => setTimeout(r, 2));
        }
      })();
      const r = await run.done;
      running = false;
      await watching;
      expect(r.signal, r.stdout + r.stderr).toBe("SIGKILL");
      expect(await fs.readFile(killed, "utf8")).toBe(`${at}\n`);
      for (const n of seen) expect(n).toBe(FILES);
      const id = readdirSync(metaRoot).find((n) => n.startsWith("big-"))!;
      const out = path.join(prefix, "pub", id);
      expect(existsSync(path.join(metaRoot, id, "publish.json"))).toBe(true);
      if (at === "before-rename") expect(existsSync(out)).toBe(false);
      else expect(readdirSync(out)).toHaveLength(FILES);

      const status = await marin(["status", "--prefix", prefix]);
      expect(status.stdout).toMatch(/pub\/big-\w+\s+RUNNING \(publish pending: the next run completes it\)/);
      expect((await marin(["plan", script, "--prefix", prefix])).stdout).toMatch(/publish pending/);
      const again = await marin(["run", script, "--prefix", prefix], { CALLS: calls });
      expect(again.code, again.stderr).toBe(0);
      expect(readdirSync(out)).toHaveLength(FILES);
      expect(again.stdout).toMatch(/files: 2000/);
      expect(existsSync(path.join(metaRoot, id, "publish.json"))).toBe(false);
      // Completed from the journal: the step's function ran once in all.
      expect((await fs.readFile(calls, "utf8")).trim().split("\n")).toHaveLength(1);
    });
  }
});
