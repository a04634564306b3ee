// An attempt run under the attempt keeper (runner/attemptKeeper.mjs), which a restarted worker can
// adopt: started by this worker or taken over from the previous one on the same state directory,
// its output read from the keeper's output file (tailed; paused by backpressure), its end read
// from the keeper's exit file, stopped (SIGTERM then SIGKILL to its group), limits enforced.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { classifyExit, type AttemptExit } from "./attemptOutcome.ts";
import type { LogLine } from "./attemptProcess.ts";
import { readProcStat, signalGroup, watchGroupRss } from "../process/processGroup.ts";

/** The keeper script (plain JavaScript, from source and built alike). */
export const ATTEMPT_KEEPER_PATH = fileURLToPath(new URL("../runner/attemptKeeper.mjs", import.meta.url));
/** The file a worker touches to tell its keepers it is alive. */
export const HEARTBEAT_FILE = "heartbeat";
/** How often the output file is read for new lines. */
const TAIL_POLL_MS = 50;
const STDERR_TAIL_LINES = 30;

/** The keeper's files of one attempt, all in its scratch directory. */
export function keeperFiles(scratch: string): { spec: string; output: string; exit: string } {
  return { spec: path.join(scratch, "keeper.json"), output: path.join(scratch, "output.jsonl"), exit: path.join(scratch, "exit.json") };
}

/** How to run or adopt one kept attempt. */
export interface KeptAttemptOptions {
  /** The attempt's scratch directory (the keeper's files live there). */
  scratch: string;
  /** When the attempt started (timeouts count from here, across a restart too). */
  startedAtMs: number;
  timeoutMs?: number;
  killGraceMs?: number;
  memoryLimitBytes?: number;
  onLine?: (line: LogLine) => void;
  backpressure?: () => Promise<void> | undefined;
}

/** One attempt under a keeper; the same surface as AttemptProcess. */
export class KeptAttempt {
  /** The keeper's pid, which is also the attempt's process group id. */
  readonly pid: number | undefined;
  readonly exited: Promise<AttemptExit>;
  #opts: KeptAttemptOptions;
  #killGraceMs: number;
  #stopRequested = false;
  #timedOut = false;
  #memoryLimitExceeded = false;
  #done = false;
  #killTimer: NodeJS.Timeout | undefined;
  #stderrTail: string[] = [];
  /** The keeper's start time, so that a reused pid is never taken for it. */
  #startTicks: string | undefined;

  private constructor(pid: number | undefined, startTicks: string | undefined, opts: KeptAttemptOptions) {
    this.pid = pid;
    this.#startTicks = startTicks;
    this.#opts = opts;
    this.#killGraceMs = opts.killGraceMs ?? 5000;
    this.exited = this.#supervise();
  }

  /**
   * Starts `argv` under a keeper (detached, its own group). The keeper ends the attempt once
   * `heartbeatFile` has not been touched for `adoptGraceMs`.
   */
  static spawn(
    opts: KeptAttemptOptions & { argv: readonly string[]; cwd?: string; env: Readonly<Record<string, string>>; heartbeatFile: string; adoptGraceMs: number },
  ): KeptAttempt {
    const files = keeperFiles(opts.scratch);
    fs.writeFileSync(
      files.spec,
      JSON.stringify({
        argv: opts.argv,
        ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
        outputFile: files.output,
        exitFile: files.exit,
        heartbeatFile: opts.heartbeatFile,
        adoptGraceMs: opts.adoptGraceMs,
        killGraceMs: opts.killGraceMs ?? 5000,
        pollMs: 250,
      }),
    );
    fs.writeFileSync(files.output, "");
    const child = spawn(process.execPath, [ATTEMPT_KEEPER_PATH, files.spec], { env: opts.env, detached: true, stdio: "ignore" });
    child.on("error", () => undefined);
    child.unref();
    return new KeptAttempt(child.pid, child.pid === undefined ? undefined : readProcStat(child.pid)?.startTicks, opts);
  }

  /** Takes over an attempt a previous worker started under a keeper (alive or already ended). */
  static adopt(pid: number, startTicks: string | undefined, opts: KeptAttemptOptions): KeptAttempt {
    return new KeptAttempt(pid, startTicks, opts);
  }

  /** Whether the process has not ended yet. */
  get running(): boolean {
    return !this.#done;
  }

  /** SIGTERM to the attempt's group, SIGKILL after the grace; resolves with the outcome. */
  stop(graceMs = this.#killGraceMs): Promise<AttemptExit> {
    if (!this.#done && !this.#stopRequested) {
      this.#stopRequested = true;
      this.#terminate(graceMs);
    }
    return this.exited;
  }

  #terminate(graceMs: number): void {
    if (this.pid === undefined || !this.#keeperAlive()) return;
    signalGroup(this.pid, "SIGTERM");
    clearTimeout(this.#killTimer);
    this.#killTimer = setTimeout(() => {
      if (!this.#done && this.pid !== undefined) signalGroup(this.pid, "SIGKILL");
    }, graceMs);
  }

  #keeperAlive(): boolean {
    if (this.pid === undefined) return false;
    const st = readProcStat(this.pid);
    return st !== undefined && st.state !== "Z" && (this.#startTicks === undefined || st.startTicks === this.#startTicks);
  }

  async #supervise(): Promise<AttemptExit> {
    const opts = this.#opts;
    const files = keeperFiles(opts.scratch);
    if (this.pid === undefined) {
      this.#done = true;
      return { kind: "LAUNCH_FAILED", message: "could not start the attempt keeper" };
    }
    const timers: NodeJS.Timeout[] = [];
    if (opts.timeoutMs !== undefined && opts.timeoutMs > 0) {
      timers.push(
        setTimeout(
          () => {
            if (this.#done || this.#stopRequested) return;
            this.#timedOut = true;
            this.#stopRequested = true;
            this.#terminate(this.#killGraceMs);
          },
          Math.max(0, opts.startedAtMs + opts.timeoutMs - Date.now()),
        ),
      );
    }
    let unwatch: (() => void) | undefined;
    if (opts.memoryLimitBytes !== undefined && opts.memoryLimitBytes > 0) {
      const pgid = this.pid;
      const limit = opts.memoryLimitBytes;
      unwatch = watchGroupRss(pgid, 500, (bytes) => {
        if (this.#done || this.#memoryLimitExceeded || bytes <= limit) return;
        this.#memoryLimitExceeded = true;
        signalGroup(pgid, "SIGKILL");
      });
    }
    const tail = new OutputTail(files.output, (l) => {
      if (l.stream === "stderr") {
        this.#stderrTail.push(l.line);
        if (this.#stderrTail.length > STDERR_TAIL_LINES) this.#stderrTail.shift();
      }
      opts.onLine?.(l);
    });
    const gate = opts.backpressure ?? (() => undefined);
    for (;;) {
      const ended = fs.existsSync(files.exit) || !this.#keeperAlive();
      tail.read();
      if (ended) {
        tail.read();
        break;
      }
      const wait = gate();
      await (wait ?? new Promise((r) => setTimeout(r, TAIL_POLL_MS)));
    }
    tail.close();
    for (const t of timers) clearTimeout(t);
    unwatch?.();
    clearTimeout(this.#killTimer);
    signalGroup(this.pid, "SIGKILL");
    this.#done = true;
    let exit: { code: number | null; signal: string | null; launchError?: string } | undefined;
    try {
      exit = JSON.parse(fs.readFileSync(files.exit, "utf8")) as typeof exit;
    } catch {
      exit = undefined;
    }
    if (exit?.launchError !== undefined) return { kind: "LAUNCH_FAILED", message: `could not start the attempt: ${exit.launchError}` };
    return classifyExit({
      // A keeper killed outright (SIGKILL to the group) left no exit file.
      exitCode: exit ? exit.code : null,
      signal: exit ? exit.signal : "SIGKILL",
      stopRequested: this.#stopRequested,
      timedOut: this.#timedOut,
      memoryLimitExceeded: this.#memoryLimitExceeded,
      stderrTail: this.#stderrTail,
      kernelOomKill: false,
    });
  }
}

/** Reads the keeper's output file from the start, one JSON line per output line. */
class OutputTail {
  #fd: number | undefined;
  #offset = 0;
  #rest = "";
  #onLine: (l: LogLine) => void;

  constructor(file: string, onLine: (l: LogLine) => void) {
    this.#onLine = onLine;
    try {
      this.#fd = fs.openSync(file, "r");
    } catch {
      this.#fd = undefined;
    }
  }

  read(): void {
    if (this.#fd === undefined) return;
    const buf = Buffer.alloc(1024 * 1024);
    for (;;) {
      const n = fs.readSync(this.#fd, buf, 0, buf.length, this.#offset);
      if (n <= 0) return;
      this.#offset += n;
      const parts = (this.#rest + buf.toString("utf8", 0, n)).split("\n");
      this.#rest = parts.pop() ?? "";
      for (const p of parts) {
        if (p === "") continue;
        let rec: { s: string; t: number; l: string };
        try {
          rec = JSON.parse(p) as typeof rec;
        } catch {
          continue;
        }
        // The keeper writes pieces of at most MAX_LINE_BYTES of UTF-8.
        this.#onLine({ stream: rec.s === "e" ? "stderr" : "stdout", line: rec.l, timeMs: rec.t });
      }
      if (n < buf.length) return;
    }
  }

  close(): void {
    if (this.#fd !== undefined) fs.closeSync(this.#fd);
    this.#fd = undefined;
  }
}
