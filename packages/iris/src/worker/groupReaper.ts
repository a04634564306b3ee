// The worker's side of the group reaper: starting groupReaper.mjs and telling it which command
// attempts' process groups to end if the worker dies.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The reaper script (plain JavaScript: no loader to start). */
export const GROUP_REAPER_PATH = fileURLToPath(new URL("../runner/groupReaper.mjs", import.meta.url));

/** How long a worker waits for its reaper to start before running commands under supervisors. */
const READY_TIMEOUT_MS = 5000;

/**
 * The worker's side of its group reaper: one small process per worker, in its own process group,
 * that ends the process groups of the command attempts it was told about once the worker dies.
 * It lets commands run directly in their own group (no supervisor process per attempt) while
 * keeping the guarantee that an attempt ends within seconds of its worker's death.
 *
 * The process starts when a command attempt first asks for it (`started`), not with the worker:
 * module attempts run under a task runner that watches the worker itself, so a worker that only
 * runs those (most of them) never pays for the reaper's Node start.
 */
export class GroupReaper {
  #graceMs: number;
  #child: ChildProcess | undefined;
  #started: Promise<boolean> | undefined;
  #ready = false;
  #closed = false;

  private constructor(graceMs: number) {
    this.#graceMs = graceMs;
  }

  /** A reaper for this process with the given SIGTERM → SIGKILL grace, started on first use. */
  static start(graceMs: number): GroupReaper {
    return new GroupReaper(graceMs);
  }

  /**
   * Starts the reaper on first use. Resolves true once it has started, false if it could not (or
   * has exited, or the worker was closed first).
   */
  get started(): Promise<boolean> {
    this.#started ??= this.#closed ? Promise.resolve(false) : this.#spawn();
    return this.#started;
  }

  #spawn(): Promise<boolean> {
    const child = spawn(process.execPath, [GROUP_REAPER_PATH, String(process.pid), String(this.#graceMs)], {
      detached: true,
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    this.#child = child;
    const started = new Promise<boolean>((resolve) => {
      // Not the 'spawn' event: a message sent before the reaper listens would be lost. It says
      // "ready" once it listens; one that does not within the timeout is not used.
      const timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS);
      timer.unref();
      child.on("message", (msg: { ready?: unknown }) => {
        if (msg?.ready !== true) return;
        clearTimeout(timer);
        resolve((this.#ready = true));
      });
      child.once("error", () => resolve((this.#ready = false)));
      child.once("exit", () => resolve((this.#ready = false)));
    });
    child.on("error", () => undefined);
    // Neither the reaper nor its channel may keep the worker's process alive.
    child.unref();
    child.channel?.unref();
    return started;
  }

  /** Whether the reaper is up: only then may an attempt run without its own supervisor. */
  get ready(): boolean {
    return this.#ready && !this.#closed && this.#child?.connected === true;
  }

  /** Tracks a process group (sent before anything else can happen to it). */
  add(pgid: number): void {
    this.#send({ add: pgid });
  }

  /** Stops tracking a process group that has ended. */
  remove(pgid: number): void {
    this.#send({ remove: pgid });
  }

  /** Tells the reaper the worker is stopping cleanly (it kills nothing) and lets it exit. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const child = this.#child;
    if (child === undefined || !child.connected) return;
    const disconnect = (): void => {
      if (child.connected) child.disconnect();
    };
    try {
      child.send({ exit: true }, disconnect);
    } catch {
      disconnect();
    }
  }

  #send(msg: object): void {
    const child = this.#child;
    if (this.#closed || child === undefined || !child.connected) return;
    try {
      child.send(msg, () => undefined);
    } catch {
      // The reaper is gone; attempts spawned from now on get a supervisor of their own.
    }
  }
}
