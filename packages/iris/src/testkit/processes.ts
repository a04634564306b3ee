// Controllers and workers as child processes (on the source loader), for tests that kill them.
import { spawn } from "node:child_process";
import fs from "node:fs";
import type { ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ControllerOptions } from "../controller/controller.ts";
import type { WorkerOptions } from "../worker/worker.ts";
import { IRIS_PACKAGE_ROOT } from "../internal/protoGen.ts";
import { waitFor } from "../worker/testing/waitFor.ts";
import { SOURCE_LOADER } from "../process/sourceLoader.ts";
import { readProcStat } from "../process/processGroup.ts";

const here = path.dirname(fileURLToPath(import.meta.url));

/** A child process started by {@link startControllerProcess} / {@link startWorkerProcess}. */
export interface ChildHandle {
  readonly proc: ChildProcess;
  /** What the process printed after its ready word ("127.0.0.1:PORT" or the worker id). */
  readonly value: string;
  /** Everything it printed to stderr so far (for failure messages). */
  stderr(): string;
  /** SIGKILLs it and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

function startScript(script: string, arg: unknown, readyWord: string, timeoutMs = 30_000): Promise<ChildHandle> {
  const proc = spawn(process.execPath, ["--import", SOURCE_LOADER, path.join(here, script), JSON.stringify(arg)], {
    cwd: IRIS_PACKAGE_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`${script} did not print ${readyWord} within ${timeoutMs} ms; stderr: ${err}`));
    }, timeoutMs);
    const early = (code: number | null): void => {
      clearTimeout(timer);
      reject(new Error(`${script} exited (${code}) before ${readyWord}; stderr: ${err}`));
    };
    proc.once("exit", early);
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = new RegExp(`${readyWord} (\\S+)`).exec(out);
      if (m) {
        clearTimeout(timer);
        proc.off("exit", early);
        resolve({
          proc,
          value: m[1]!,
          stderr: () => err,
          kill: async (signal = "SIGKILL") => {
            if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
            await exited;
          },
        });
      }
    });
  });
}

/** Starts a controller process; `value` is its address. */
export function startControllerProcess(opts: ControllerOptions): Promise<ChildHandle> {
  return startScript("controllerMain.ts", { host: "127.0.0.1", ...opts }, "LISTENING");
}

/** Starts a worker process and waits until it registered; `value` is its id. */
export function startWorkerProcess(opts: WorkerOptions): Promise<ChildHandle> {
  return startScript("workerMain.ts", opts, "REGISTERED");
}

/** Absolute path of the endpoint task program (run it with `node --import SOURCE_LOADER`). */
export const ENDPOINT_TASK = path.join(here, "endpointTask.ts");

/** {@link waitFor} with the longer default deadline that process-level tests need. */
export function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  return waitFor(what, check, { timeoutMs, intervalMs: 25 });
}

/** The pids whose parent is `ppid` (from /proc), only those whose argv contains `argvIncludes` when given. */
export function childrenOf(ppid: number, argvIncludes?: string): number[] {
  return fs
    .readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((pid) => {
      if (readProcStat(pid)?.ppid !== ppid) return false;
      if (argvIncludes === undefined) return true;
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(argvIncludes);
      } catch {
        return false; // gone meanwhile
      }
    });
}
