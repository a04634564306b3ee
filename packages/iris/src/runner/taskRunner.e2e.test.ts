// End-to-end tests of the task runner as a real child process (modules, commands, orphaning).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AttemptProcess, type LogLine } from "../worker/attemptProcess.ts";
import { processAlive, waitFor } from "../worker/testing/waitFor.ts";
import { runnerArgv, type RunnerSpec } from "./runnerSpec.ts";

let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-runner-test-"));
  fs.writeFileSync(
    path.join(dir, "tasks.ts"),
    `
export async function echo(args: { words: string[] }): Promise<void> {
  const n: number = args.words.length;
  console.log("words " + n + ": " + args.words.join(" "));
  console.log("task " + process.env.IRIS_TASK_ID);
}
export async function boom(): Promise<void> {
  await Promise.resolve();
  throw new Error("boom from the task");
}
export async function spin(): Promise<void> {
  const { spawn } = await import("node:child_process");
  const child = spawn("sleep", ["1000"], { stdio: "ignore" });
  console.log("spinning " + process.pid + " " + child.pid);
  await new Promise(() => setInterval(() => undefined, 1000));
}
export const notAFunction = 3;
`,
  );
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function runTask(entrypoint: RunnerSpec["entrypoint"], env: Record<string, string> = {}) {
  const specPath = path.join(dir, `spec-${Math.random().toString(36).slice(2)}.json`);
  const spec: RunnerSpec = { entrypoint, parentPid: process.pid };
  fs.writeFileSync(specPath, JSON.stringify(spec));
  const lines: LogLine[] = [];
  const proc = AttemptProcess.spawn({
    argv: runnerArgv(entrypoint, specPath),
    env: { PATH: process.env.PATH ?? "", ...env },
    ipc: true,
    killGraceMs: 2000,
    onLine: (l) => lines.push(l),
  });
  const text = (stream: LogLine["stream"]) => lines.filter((l) => l.stream === stream).map((l) => l.line);
  return { proc, lines, text };
}

describe("task runner, module entrypoints", () => {
  it("imports the module by path or file: URL and awaits the export with the JSON args", async () => {
    const byPath = runTask({ module: path.join(dir, "tasks.ts"), export: "echo", args: { words: ["a", "b"] } });
    expect(await byPath.proc.exited).toMatchObject({ kind: "APP_EXIT", exitCode: 0 });
    expect(byPath.text("stdout")).toContain("words 2: a b");
    const byUrl = runTask({ module: new URL(`file://${path.join(dir, "tasks.ts")}`).href, export: "echo", args: { words: [] } });
    expect(await byUrl.proc.exited).toMatchObject({ kind: "APP_EXIT", exitCode: 0 });
    expect(byUrl.text("stdout")).toContain("words 0: ");
  });

  it("maps a throw to exit 1 with the error and its stack on stderr", async () => {
    const { proc, text } = runTask({ module: path.join(dir, "tasks.ts"), export: "boom" });
    const outcome = await proc.exited;
    expect(outcome).toMatchObject({ kind: "APP_EXIT", exitCode: 1 });
    expect(outcome.message).toContain("Error: boom from the task");
    const stderr = text("stderr");
    expect(stderr[0]).toBe("Error: boom from the task");
    expect(stderr.some((l) => /^\s+at .*tasks\.ts:\d+:\d+/.test(l))).toBe(true);
  });

  it("fails clearly when the export is not a function, or the environment is broken", async () => {
    const missing = runTask({ module: path.join(dir, "tasks.ts"), export: "notAFunction" });
    expect(await missing.proc.exited).toMatchObject({ kind: "APP_EXIT", exitCode: 1 });
    expect(missing.text("stderr")[0]).toMatch(/has no exported function "notAFunction" \(exported functions: (boom|echo|spin)/);

    const broken = runTask({ module: path.join(dir, "tasks.ts"), export: "echo", args: { words: [] } }, { IRIS_TASK_ID: "/u/j/0" });
    expect(await broken.proc.exited).toMatchObject({ kind: "APP_EXIT", exitCode: 1 });
    expect(broken.text("stderr")[0]).toMatch(/IRIS_CONTROLLER_ADDRESS: expected a value/);
  });
});

describe("task runner, command entrypoints", () => {
  it("exits with the command's exit code and passes its output through", async () => {
    const { proc, text } = runTask({ command: ["sh", "-c", "echo out; echo err >&2; exit 3"], cwd: dir });
    expect(await proc.exited).toMatchObject({ kind: "APP_EXIT", exitCode: 3 });
    expect(text("stdout")).toEqual(["out"]);
    expect(text("stderr")).toEqual(["err"]);
  });

  it("runs the command in its cwd", async () => {
    const { proc, text } = runTask({ command: ["pwd"], cwd: dir });
    expect(await proc.exited).toMatchObject({ kind: "APP_EXIT", exitCode: 0 });
    expect(text("stdout")).toEqual([fs.realpathSync(dir)]);
  });

  it("dies by the signal that killed the command", async () => {
    const { proc } = runTask({ command: ["sh", "-c", "kill -SEGV $$"] });
    expect(await proc.exited).toMatchObject({ kind: "SIGNAL", signal: "SIGSEGV" });
  });

  it("reports a command that cannot be started as LAUNCH_FAILED", async () => {
    const { proc } = runTask({ command: ["/nonexistent/iris-command"] });
    const outcome = await proc.exited;
    expect(outcome.kind).toBe("LAUNCH_FAILED");
    expect(outcome.message).toContain("/nonexistent/iris-command");
  });

  it("stops the command with the group's SIGTERM and reports KILLED", async () => {
    const { proc, lines } = runTask({ command: ["sh", "-c", "trap 'echo term; exit 143' TERM; echo ready; while true; do sleep 0.1; done"] });
    await waitFor("the command to start", () => lines.some((l) => l.line === "ready"));
    expect(await proc.stop()).toMatchObject({ kind: "KILLED" });
    expect(lines.map((l) => l.line)).toContain("term");
  });
});

describe("task runner, when its worker dies", () => {
  async function orphan(entrypoint: RunnerSpec["entrypoint"], isReady: (line: string) => number | undefined) {
    const fixture = path.join(import.meta.dirname, "..", "worker", "testing", "fakeWorker.ts");
    const sourceArgv = runnerArgv({ module: fixture, export: "unused" }, "unused").slice(0, 3);
    const worker = spawn(sourceArgv[0], [...sourceArgv.slice(1), fixture, JSON.stringify(entrypoint), "2000", dir], {
      stdio: ["ignore", "pipe", "inherit"],
      detached: true,
    });
    const seen: string[] = [];
    readline.createInterface({ input: worker.stdout }).on("line", (l) => seen.push(l));
    const runnerPid = await waitFor("the runner's pid", () => {
      const msg = seen.map((l) => JSON.parse(l) as { runner?: number }).find((m) => m.runner !== undefined);
      return msg?.runner;
    });
    const taskPid = await waitFor("the task to start", () => {
      for (const l of seen) {
        const msg = JSON.parse(l) as { line?: string };
        const pid = msg.line === undefined ? undefined : isReady(msg.line);
        if (pid !== undefined) return pid;
      }
      return undefined;
    });
    expect(processAlive(runnerPid)).toBe(true);
    expect(processAlive(taskPid)).toBe(true);
    const killedAt = Date.now();
    process.kill(worker.pid!, "SIGKILL");
    await waitFor("the attempt to exit", () => !processAlive(runnerPid) && !processAlive(taskPid), { timeoutMs: 8000 });
    return Date.now() - killedAt;
  }

  it("ends a command attempt (and the command) within seconds of a SIGKILL of the worker", async () => {
    const elapsed = await orphan({ command: ["sh", "-c", "echo pid $$; exec sleep 1000"] }, (l) => (l.startsWith("pid ") ? Number(l.slice(4)) : undefined));
    expect(elapsed).toBeLessThan(5000);
  });

  it("ends a module attempt, and what it spawned, within seconds of a SIGKILL of the worker", async () => {
    // The watched pid is the module's child process: the runner must take its whole group down.
    const elapsed = await orphan({ module: path.join(dir, "tasks.ts"), export: "spin" }, (l) => (l.startsWith("spinning ") ? Number(l.split(" ")[2]) : undefined));
    expect(elapsed).toBeLessThan(5000);
  });
});
