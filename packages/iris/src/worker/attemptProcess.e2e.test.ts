// End-to-end tests of AttemptProcess with real child processes.
import { describe, expect, it } from "vitest";
import { AttemptProcess, type LogLine } from "./attemptProcess.ts";
import { processAlive, waitFor } from "./testing/waitFor.ts";

const node = (script: string): string[] => [process.execPath, "-e", script];

function start(argv: string[], opts: Partial<Parameters<typeof AttemptProcess.spawn>[0]> = {}) {
  const lines: LogLine[] = [];
  const proc = AttemptProcess.spawn({ argv, env: { PATH: process.env.PATH ?? "" }, onLine: (l) => lines.push(l), ...opts });
  const printed = (text: string) => waitFor(`a line "${text}"`, () => lines.find((l) => l.line === text));
  return { proc, lines, printed };
}

describe("AttemptProcess", () => {
  it("captures stdout and stderr line by line, in order per stream, with timestamps", async () => {
    const { proc, lines } = start(
      node(`for (let i = 0; i < 500; i++) { console.log("out " + i); console.error("err " + i); }
            process.stdout.write("partial-last-line");`),
    );
    const before = Date.now();
    const outcome = await proc.exited;
    expect(outcome).toMatchObject({ kind: "APP_EXIT", exitCode: 0 });
    const out = lines.filter((l) => l.stream === "stdout").map((l) => l.line);
    const err = lines.filter((l) => l.stream === "stderr").map((l) => l.line);
    expect(out).toEqual([...Array.from({ length: 500 }, (_, i) => `out ${i}`), "partial-last-line"]);
    expect(err).toEqual(Array.from({ length: 500 }, (_, i) => `err ${i}`));
    for (const l of lines) expect(l.timeMs).toBeLessThanOrEqual(Date.now());
    expect(lines[0].timeMs).toBeGreaterThan(before - 60_000);
  });

  it("stops with SIGTERM, then SIGKILL after the grace period when SIGTERM is ignored", async () => {
    const { proc, lines, printed } = start(node(`process.on("SIGTERM", () => console.log("got SIGTERM")); console.log("ready"); setInterval(() => {}, 1000);`));
    await printed("ready");
    const t0 = Date.now();
    const outcome = await proc.stop(300);
    expect(outcome).toMatchObject({ kind: "KILLED", signal: "SIGKILL" });
    expect(lines.map((l) => l.line)).toContain("got SIGTERM");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
  });

  it("lets a process that honours SIGTERM end by it", async () => {
    const { proc, printed } = start(node(`console.log("ready"); setInterval(() => {}, 1000);`));
    await printed("ready");
    expect(await proc.stop(10_000)).toMatchObject({ kind: "KILLED", signal: "SIGTERM" });
  });

  it("reports a signal it did not send as SIGNAL and an exit code as APP_EXIT", async () => {
    const killed = start(node(`process.kill(process.pid, "SIGSEGV")`));
    expect(await killed.proc.exited).toMatchObject({ kind: "SIGNAL", signal: "SIGSEGV" });
    const failed = start(node(`console.error("Error: bad input"); process.exit(7)`));
    expect(await failed.proc.exited).toMatchObject({ kind: "APP_EXIT", exitCode: 7, message: "exited with code 7: Error: bad input" });
  });

  it("stops an attempt that runs past its timeout and classifies it TIMEOUT", async () => {
    const { proc } = start(node(`setInterval(() => {}, 1000)`), { timeoutMs: 200, killGraceMs: 200 });
    expect(await proc.exited).toMatchObject({ kind: "TIMEOUT" });
  });

  it("classifies a program that cannot be spawned as LAUNCH_FAILED", async () => {
    const { proc } = start(["/nonexistent/iris-test-binary"]);
    expect(proc.pid).toBeUndefined();
    const outcome = await proc.exited;
    expect(outcome.kind).toBe("LAUNCH_FAILED");
    expect(outcome.message).toContain("ENOENT");
  });

  it("kills the whole process group, including what the attempt spawned", async () => {
    const { proc, lines } = start(
      node(`const c = require("child_process").spawn("sleep", ["1000"], { stdio: "ignore" });
            console.log("grandchild " + c.pid); setInterval(() => {}, 1000);`),
    );
    await waitFor("the grandchild's pid", () => lines.some((l) => l.line.startsWith("grandchild ")));
    const pid = Number(lines.find((l) => l.line.startsWith("grandchild "))!.line.split(" ")[1]);
    expect(processAlive(pid)).toBe(true);
    await proc.stop(2000);
    await waitFor("the grandchild to die", () => !processAlive(pid));
  });

  it("ends what an attempt left behind when its main process exits", async () => {
    const { proc, lines } = start(
      node(`const c = require("child_process").spawn("sleep", ["1000"], { stdio: "ignore" });
            console.log("grandchild " + c.pid); process.exit(0);`),
    );
    expect(await proc.exited).toMatchObject({ kind: "APP_EXIT", exitCode: 0 });
    const pid = Number(lines.find((l) => l.line.startsWith("grandchild "))!.line.split(" ")[1]);
    await waitFor("the grandchild to die", () => !processAlive(pid));
  });

  it("kills an attempt over its memory limit and classifies it OOM", async () => {
    const { proc } = start(node(`const b = Buffer.alloc(300 * 1024 * 1024, 1); console.log(b.length); setInterval(() => {}, 1000);`), {
      memoryLimitBytes: 150 * 1024 * 1024,
      memoryPollMs: 50,
    });
    expect(await proc.exited).toMatchObject({ kind: "OOM", signal: "SIGKILL" });
  });

  it("recognises Node running out of heap as OOM", async () => {
    const { proc } = start([process.execPath, "--max-old-space-size=24", "-e", `const keep = []; for (;;) keep.push(new Array(100000).fill({ a: 1 }));`]);
    expect(await proc.exited).toMatchObject({ kind: "OOM" });
  });
});
