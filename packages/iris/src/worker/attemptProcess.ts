// One attempt's process: spawned in its own process group, its output read line by line, stopped
// (SIGTERM then SIGKILL), limits enforced, its end classified once.
import { spawn, type ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import { classifyExit, type AttemptExit } from "./attemptOutcome.ts";
import { cgroupOomKills, signalGroup, watchGroupRss } from "../process/processGroup.ts";

/** One line an attempt wrote, stamped when the worker read it. */
export interface LogLine {
  stream: "stdout" | "stderr";
  line: string;
  timeMs: number;
}

/** How to run one attempt's process. */
export interface AttemptProcessOptions {
  /** `[program, ...args]`. */
  argv: readonly string[];
  cwd?: string;
  env: Readonly<Record<string, string>>;
  /** Stop the attempt (and classify it TIMEOUT) after this long. */
  timeoutMs?: number;
  /** Time between SIGTERM and SIGKILL when stopping. Default 5 s. */
  killGraceMs?: number;
  /** Kill the whole process group (and classify it OOM) when its RSS exceeds this. */
  memoryLimitBytes?: number;
  /** How often the memory limit is checked. Default 500 ms. */
  memoryPollMs?: number;
  /** Open an IPC channel (the iris task runner uses it to watch its worker and report launch errors). */
  ipc?: boolean;
  /**
   * Receives every stdout/stderr line, in order per stream (lines longer than
   * {@link MAX_LINE_BYTES} of UTF-8 arrive in pieces).
   */
  onLine?: (line: LogLine) => void;
  /**
   * Backpressure: asked after each chunk read; a promise pauses reading (so the attempt's writes
   * block once its pipe is full) until it resolves.
   */
  backpressure?: () => Promise<void> | undefined;
}

/** Message the task runner sends over IPC when the command it supervises could not be started. */
export interface LaunchFailedMessage {
  type: "iris.launchFailed";
  message: string;
}

/**
 * Longer lines are split into pieces of at most this many bytes (cut at a UTF-8 character
 * boundary), so that one runaway line can neither hold the log pipeline hostage nor be held
 * whole in the worker's memory.
 */
export const MAX_LINE_BYTES = 64 * 1024;
/** How many stderr lines are kept for classification and error messages. */
const STDERR_TAIL_LINES = 30;
/**
 * After the main process exits, how long its pipes may stay open and silent (held by an escaped
 * grandchild); time spent paused by backpressure does not count.
 */
const DRAIN_AFTER_EXIT_MS = 2000;

/**
 * One attempt's process: started in its own process group (so a stop reaches everything it
 * spawned), its output read line by line, and its end classified exactly once into
 * {@link AttemptExit}.
 */
export class AttemptProcess {
  /** The process id, which is also the process group id; undefined if the spawn failed. */
  readonly pid: number | undefined;
  readonly startedAtMs: number;
  /** Resolves once, when the process has ended and its output has been read. */
  readonly exited: Promise<AttemptExit>;

  #child: ChildProcess;
  #killGraceMs: number;
  #stopRequested = false;
  #timedOut = false;
  #memoryLimitExceeded = false;
  #launchError: Error | undefined;
  #stderrTail: string[] = [];
  #done = false;
  /** The main process has exited (its output may still be draining). */
  #ended = false;
  #killTimer: NodeJS.Timeout | undefined;

  private constructor(opts: AttemptProcessOptions) {
    this.startedAtMs = Date.now();
    this.#killGraceMs = opts.killGraceMs ?? 5000;
    const [program, ...args] = opts.argv;
    this.#child = spawn(program, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe", ...(opts.ipc === true ? (["ipc"] as const) : [])],
    });
    this.pid = this.#child.pid;
    this.exited = this.#supervise(opts);
  }

  /** Starts an attempt. Never throws: a spawn failure resolves `exited` as LAUNCH_FAILED. */
  static spawn(opts: AttemptProcessOptions): AttemptProcess {
    return new AttemptProcess(opts);
  }

  /** Whether the process has not ended yet. */
  get running(): boolean {
    return !this.#done;
  }

  /**
   * Stops the attempt: SIGTERM to its process group, SIGKILL after the grace period. Idempotent;
   * resolves with the outcome (KILLED unless it had already ended otherwise).
   */
  stop(graceMs = this.#killGraceMs): Promise<AttemptExit> {
    if (!this.#ended && !this.#stopRequested) {
      this.#stopRequested = true;
      this.#terminate(graceMs);
    }
    return this.exited;
  }

  #terminate(graceMs: number): void {
    if (this.pid === undefined) return;
    signalGroup(this.pid, "SIGTERM");
    clearTimeout(this.#killTimer);
    this.#killTimer = setTimeout(() => {
      if (!this.#ended && this.pid !== undefined) signalGroup(this.pid, "SIGKILL");
    }, graceMs);
  }

  async #supervise(opts: AttemptProcessOptions): Promise<AttemptExit> {
    const child = this.#child;
    const emit = (stream: LogLine["stream"], line: string): void => {
      if (stream === "stderr") {
        this.#stderrTail.push(line);
        if (this.#stderrTail.length > STDERR_TAIL_LINES) this.#stderrTail.shift();
      }
      opts.onLine?.({ stream, line, timeMs: Date.now() });
    };
    const oomKillsAtStart = cgroupOomKills();
    const reading: ReadState = { paused: 0, lastActivityMs: Date.now() };
    const gate = opts.backpressure ?? (() => undefined);
    const drained = [readLines(child.stdout, (l) => emit("stdout", l), gate, reading), readLines(child.stderr, (l) => emit("stderr", l), gate, reading)];

    child.on("message", (msg: unknown) => {
      if (isLaunchFailed(msg)) this.#launchError = new Error(msg.message);
    });

    const timers: NodeJS.Timeout[] = [];
    if (opts.timeoutMs !== undefined && opts.timeoutMs > 0) {
      timers.push(
        setTimeout(() => {
          if (this.#ended || this.#stopRequested) return;
          this.#timedOut = true;
          this.#stopRequested = true;
          this.#terminate(this.#killGraceMs);
        }, opts.timeoutMs),
      );
    }
    let unwatchMemory: (() => void) | undefined;
    if (opts.memoryLimitBytes !== undefined && opts.memoryLimitBytes > 0 && this.pid !== undefined) {
      const pgid = this.pid;
      const limit = opts.memoryLimitBytes;
      unwatchMemory = watchGroupRss(pgid, opts.memoryPollMs ?? 500, (bytes) => {
        if (this.#ended || this.#memoryLimitExceeded || bytes <= limit) return;
        this.#memoryLimitExceeded = true;
        signalGroup(pgid, "SIGKILL");
      });
    }

    const ended = await new Promise<{ code: number | null; signal: string | null; spawnError?: Error }>((resolve) => {
      child.once("error", (err) => {
        // 'error' also fires for a failed kill or IPC send; only a failed spawn leaves no pid.
        if (this.pid === undefined) resolve({ code: null, signal: null, spawnError: err });
      });
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    this.#ended = true;
    for (const t of timers) clearTimeout(t);
    unwatchMemory?.();
    clearTimeout(this.#killTimer);
    // Whatever the main process left behind in its group ends with it.
    if (this.pid !== undefined) signalGroup(this.pid, "SIGKILL");
    // Read to the end, unless the pipes stay open and silent (an escaped grandchild holds them).
    const allRead = Promise.all(drained).then(() => true);
    reading.lastActivityMs = Date.now();
    while (!(await Promise.race([allRead, new Promise<false>((resolve) => setTimeout(() => resolve(false), 100).unref())]))) {
      if (reading.paused === 0 && Date.now() - reading.lastActivityMs > DRAIN_AFTER_EXIT_MS) break;
    }
    child.stdout?.destroy();
    child.stderr?.destroy();
    if (child.connected) child.disconnect();
    this.#done = true;
    const spawnError = ended.spawnError ?? this.#launchError;
    const oomKillsNow = ended.signal === "SIGKILL" ? cgroupOomKills() : undefined;
    return classifyExit({
      exitCode: ended.code,
      signal: ended.signal,
      stopRequested: this.#stopRequested,
      timedOut: this.#timedOut,
      memoryLimitExceeded: this.#memoryLimitExceeded,
      stderrTail: this.#stderrTail,
      kernelOomKill: oomKillsAtStart !== undefined && oomKillsNow !== undefined && oomKillsNow > oomKillsAtStart,
      ...(spawnError === undefined ? {} : { spawnError }),
    });
  }
}

function isLaunchFailed(msg: unknown): msg is LaunchFailedMessage {
  return typeof msg === "object" && msg !== null && (msg as { type?: unknown }).type === "iris.launchFailed" && typeof (msg as { message?: unknown }).message === "string";
}

/** Shared by an attempt's two readers: how many are paused, and when either last moved. */
interface ReadState {
  paused: number;
  lastActivityMs: number;
}

/** The end of the longest prefix of `buf[0, limit)` that does not cut a UTF-8 character. */
function utf8Cut(buf: Buffer, limit: number): number {
  let cut = limit;
  // Back up over continuation bytes (10xxxxxx) to the start of the character that crosses `limit`.
  while (cut > limit - 3 && cut > 0 && cut < buf.length && (buf[cut]! & 0xc0) === 0x80) cut--;
  return cut > 0 ? cut : limit;
}

/**
 * Splits a stream into lines at "\n" (a trailing "\r" dropped), in linear time and bounded memory:
 * a line longer than {@link MAX_LINE_BYTES} is emitted in pieces as it arrives.
 */
function readLines(stream: Readable | null, onLine: (line: string) => void, gate: () => Promise<void> | undefined, state: ReadState): Promise<void> {
  if (stream === null) return Promise.resolve();
  return new Promise((resolve) => {
    let parts: Buffer[] = [];
    let partLen = 0;
    const emit = (buf: Buffer): void => {
      const end = buf.length > 0 && buf[buf.length - 1] === 13 ? buf.length - 1 : buf.length;
      onLine(buf.toString("utf8", 0, end));
    };
    const append = (b: Buffer): void => {
      if (b.length === 0) return;
      parts.push(b);
      partLen += b.length;
      if (partLen <= MAX_LINE_BYTES) return;
      let whole = Buffer.concat(parts, partLen);
      while (whole.length > MAX_LINE_BYTES) {
        const cut = utf8Cut(whole, MAX_LINE_BYTES);
        emit(whole.subarray(0, cut));
        whole = whole.subarray(cut);
      }
      parts = [whole];
      partLen = whole.length;
    };
    const endLine = (): void => {
      emit(parts.length === 1 ? parts[0]! : Buffer.concat(parts, partLen));
      parts = [];
      partLen = 0;
    };
    stream.on("data", (chunk: Buffer) => {
      state.lastActivityMs = Date.now();
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(10, start);
        if (nl === -1) {
          append(chunk.subarray(start));
          break;
        }
        append(chunk.subarray(start, nl));
        endLine();
        start = nl + 1;
      }
      const wait = gate();
      if (wait !== undefined) {
        stream.pause();
        state.paused++;
        void wait.then(() => {
          state.paused--;
          state.lastActivityMs = Date.now();
          stream.resume();
        });
      }
    });
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      if (partLen > 0) endLine();
      resolve();
    };
    stream.once("end", finish);
    stream.once("close", finish);
    stream.once("error", finish);
  });
}
