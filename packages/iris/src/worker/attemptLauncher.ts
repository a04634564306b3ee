// The worker's attempt launcher: starts each attempt the controller wants (record first, ports,
// environment, the runner spec, the process in its own group), stops attempts on request, and
// turns each classified end (and its task runner's report: result or APP_ERROR) into the
// attempt's final local state.
import fs from "node:fs";
import path from "node:path";
import { entrypointFromWire } from "../internal/codec.ts";
import { isBundlePath, type Entrypoint } from "../jobSpec.ts";
import type { RunAttempt__Output } from "../internal/generated/iris/v1/RunAttempt.ts";
import { runnerArgv, type RunnerSpec } from "../runner/runnerSpec.ts";
import { readRunnerReport } from "../taskResult.ts";
import { withRunnerReport, type AttemptExit } from "./attemptOutcome.ts";
import { AttemptProcess, type LogLine } from "./attemptProcess.ts";
import type { BundleHold } from "./bundleCache.ts";
import { KeptAttempt, keeperFiles } from "./keptAttempt.ts";
import { readProcStat } from "../process/processGroup.ts";
import { spawnedRecord, type AttemptRecord } from "./attemptStore.ts";
import type { GroupReaper } from "./groupReaper.ts";
import type { LogShipper } from "./logShipper.ts";
import { allocatePorts } from "./ports.ts";
import { buildTaskEnv, DEFAULT_ADVERTISE_HOST } from "../process/taskEnv.ts";
import { errorText, isTerminal, PREEMPT_WINDOW_MS, type LocalAttempt, type WorkerContext } from "./workerTypes.ts";

/** The entrypoint with its bundle-relative module path and command cwd resolved inside `dir`. */
function inBundle(ep: Entrypoint, dir: string): Entrypoint {
  if ("module" in ep) return isBundlePath(ep.module) ? { ...ep, module: path.join(dir, ep.module) } : ep;
  return { ...ep, cwd: path.resolve(dir, ep.cwd ?? ".") };
}

/** How long a kept attempt waits for a restarted worker before it ends by itself. */
export const DEFAULT_ADOPT_GRACE_MS = 10_000;

/** Grace of an orphaned attempt (its worker died) between SIGTERM and SIGKILL. */
export const ORPHAN_GRACE_MS = 2000;

/** Starts, stops and settles a worker's attempts. */
export class AttemptLauncher {
  #ctx: WorkerContext;
  #shipper: LogShipper;
  /** Ends the command attempts' groups if this process dies (see groupReaper.mjs). */
  #reaper: GroupReaper;
  #advertiseHost: string;
  #tlsCa: string | undefined;
  /** Each resolves once its attempt has ended and been classified. */
  #starting = new Set<Promise<void>>();

  constructor(ctx: WorkerContext, shipper: LogShipper, reaper: GroupReaper) {
    this.#ctx = ctx;
    this.#shipper = shipper;
    this.#reaper = reaper;
    this.#advertiseHost = ctx.opts.advertiseHost ?? DEFAULT_ADVERTISE_HOST;
    this.#tlsCa = ctx.opts.tlsCa ?? (process.env.IRIS_TLS_CA || undefined);
  }

  /** Starts an attempt in the background; it is tracked until it has ended. */
  start(spec: RunAttempt__Output): void {
    const starting = this.#run(spec);
    this.#starting.add(starting);
    void starting.finally(() => this.#starting.delete(starting));
  }

  /** Asks an attempt to stop (once; the first reason wins). */
  stop(a: LocalAttempt, reason: string): void {
    if (a.stopReason !== undefined) return;
    a.stopReason = reason;
    void a.proc?.stop(this.#ctx.opts.killGraceMs);
  }

  /** Stops every running attempt because the worker is going away, and waits until all have ended. */
  async stopAll(reason: string): Promise<void> {
    for (const a of this.#ctx.attempts.values()) {
      if (isTerminal(a.state)) continue;
      a.stopReason = reason;
      void a.proc?.stop(this.#ctx.opts.killGraceMs);
    }
    await Promise.all(this.#starting);
  }

  async #run(spec: RunAttempt__Output): Promise<void> {
    const local: LocalAttempt = {
      uid: spec.attemptUid,
      taskId: spec.taskId,
      attempt: spec.attempt,
      state: "BUILDING",
      failureKind: "",
      error: "",
      errorCode: "",
      resultJson: "",
      pid: 0,
      startedAtMs: Date.now(),
      finishedAtMs: 0,
      logLines: 0,
      unackedLines: 0,
      nextLogIndex: 0,
      droppedLogLines: 0,
    };
    this.#ctx.attempts.set(local.uid, local);
    let outcome: AttemptExit;
    let resultPath: string | undefined;
    let hold: BundleHold | undefined;
    try {
      const record: AttemptRecord = {
        attemptUid: local.uid,
        attemptId: `${local.taskId}:${local.attempt}`,
        startedAtMs: local.startedAtMs,
      };
      // Written before the spawn: a crash right after it still leaves a trace to clean up.
      this.#ctx.store.write(record);
      const ports = await allocatePorts(spec.ports);
      if (local.stopReason !== undefined || this.#ctx.stopping) {
        this.#finish(local, { kind: "KILLED", message: "the attempt was stopped before it started" });
        return;
      }
      const env = buildTaskEnv(
        {
          controllerAddress: this.#ctx.opts.controller,
          // The attempt's own token from the controller, never the worker's.
          ...(spec.taskToken ? { authToken: spec.taskToken } : {}),
          ...(this.#tlsCa === undefined ? {} : { tlsCa: this.#tlsCa }),
          jobId: spec.jobId,
          taskId: spec.taskId,
          taskIndex: spec.taskIndex,
          numTasks: spec.numTasks,
          attempt: spec.attempt,
          workerId: this.#ctx.id,
          advertiseHost: this.#advertiseHost,
          ports,
        },
        spec.env,
      );
      const scratch = this.#ctx.store.scratchDir(local.uid);
      const specPath = path.join(scratch, "runner.json");
      let entrypoint = entrypointFromWire(spec.entrypoint);
      if (entrypoint === undefined) throw new Error("entrypoint: expected a command or a module");
      let bundleDir: string | undefined;
      if (spec.bundleId !== "") {
        // BUILDING (the attempt's initial state) is reported while the bundle is fetched and built.
        this.#ctx.kick();
        try {
          bundleDir = await this.#ctx.bundles.ensure(spec.bundleId, (line) => this.#shipper.queue(local, { stream: "stdout", line: `[iris build] ${line}`, timeMs: Date.now() }));
          // Held (first by this worker, then by the attempt's process) until the attempt ends.
          hold = this.#ctx.bundles.hold(bundleDir, local.uid);
        } catch (e) {
          this.#finish(local, { kind: "BUILD_FAILED", message: errorText(e) });
          return;
        }
        if (local.stopReason !== undefined || this.#ctx.stopping) {
          this.#finish(local, { kind: "KILLED", message: "the attempt was stopped before it started" });
          return;
        }
        entrypoint = inBundle(entrypoint, bundleDir);
        env.IRIS_BUNDLE_ID = spec.bundleId;
        env.IRIS_BUNDLE_DIR = bundleDir;
      }
      if ("module" in entrypoint) resultPath = path.join(scratch, "result.json");
      const heartbeatFile = this.#ctx.heartbeatFile;
      const runnerSpec: RunnerSpec = {
        entrypoint,
        // A kept attempt's runner does not watch the worker: its keeper outlives a restart.
        parentPid: heartbeatFile === undefined ? process.pid : 0,
        orphanGraceMs: ORPHAN_GRACE_MS,
        ...(resultPath === undefined ? {} : { resultPath }),
      };
      fs.writeFileSync(specPath, JSON.stringify(runnerSpec));
      const memoryBytes = spec.resources?.memoryBytes ?? 0;
      // A command runs directly in its own group when the reaper is up to end it if this worker
      // dies; otherwise (and for module entrypoints) under a runner that watches the worker itself.
      const direct = heartbeatFile === undefined && "command" in entrypoint && (await this.#reaper.started) && this.#reaper.ready;
      if (local.stopReason !== undefined || this.#ctx.stopping) {
        this.#finish(local, { kind: "KILLED", message: "the attempt was stopped before it started" });
        return;
      }
      const limits = {
        ...(this.#ctx.opts.killGraceMs === undefined ? {} : { killGraceMs: this.#ctx.opts.killGraceMs }),
        ...(memoryBytes > 0 && this.#ctx.opts.enforceMemoryLimits !== false ? { memoryLimitBytes: memoryBytes } : {}),
        onLine: (line: LogLine) => this.#shipper.queue(local, line),
        backpressure: () => this.#shipper.backpressure(),
      };
      const proc =
        heartbeatFile !== undefined
          ? KeptAttempt.spawn({
              ...("command" in entrypoint
                ? { argv: entrypoint.command, ...(entrypoint.cwd === undefined ? {} : { cwd: entrypoint.cwd }) }
                : { argv: runnerArgv(entrypoint, specPath), ...(bundleDir === undefined ? {} : { cwd: bundleDir }) }),
              env,
              scratch,
              startedAtMs: local.startedAtMs,
              ...(spec.timeoutMs > 0 ? { timeoutMs: spec.timeoutMs } : {}),
              heartbeatFile,
              adoptGraceMs: this.#ctx.opts.adoptGraceMs ?? DEFAULT_ADOPT_GRACE_MS,
              ...limits,
            })
          : AttemptProcess.spawn({
              ...("command" in entrypoint && direct
                ? { argv: entrypoint.command, ...(entrypoint.cwd === undefined ? {} : { cwd: entrypoint.cwd }) }
                : { argv: runnerArgv(entrypoint, specPath), ipc: true, ...(bundleDir === undefined ? {} : { cwd: bundleDir }) }),
              env,
              ...(spec.timeoutMs > 0 ? { timeoutMs: spec.timeoutMs } : {}),
              ...limits,
            });
      local.proc = proc;
      if (direct && proc.pid !== undefined) {
        const pgid = proc.pid;
        this.#reaper.add(pgid);
        void proc.exited.finally(() => this.#reaper.remove(pgid));
      }
      if (proc.pid !== undefined) {
        hold?.setPid(proc.pid);
        local.pid = proc.pid;
        local.state = "RUNNING";
        this.#ctx.store.write({
          ...spawnedRecord(record, proc.pid),
          ...(heartbeatFile === undefined
            ? {}
            : {
                kept: true,
                module: resultPath !== undefined,
                ...(spec.timeoutMs > 0 ? { timeoutMs: spec.timeoutMs } : {}),
                ...(limits.memoryLimitBytes === undefined ? {} : { memoryBytes: limits.memoryLimitBytes }),
              }),
        });
        this.#ctx.emit({ type: "attemptStarted", attemptUid: local.uid, taskId: local.taskId, attempt: local.attempt, pid: proc.pid });
        this.#ctx.kick();
      }
      outcome = await proc.exited;
      if (resultPath !== undefined) outcome = withRunnerReport(outcome, readRunnerReport(resultPath));
    } catch (e) {
      outcome = { kind: "LAUNCH_FAILED", message: `could not start the attempt: ${errorText(e)}` };
    } finally {
      hold?.release();
    }
    await this.#settle(local, outcome);
  }

  /**
   * {@link #finish}, except that on a preemptible worker an attempt killed by a signal nobody here
   * sent waits up to {@link PREEMPT_WINDOW_MS} for the worker's own stop: Slurm signals every
   * process of the job at once, and the attempt must then count as preempted, not failed.
   */
  async #settle(local: LocalAttempt, outcome: AttemptExit): Promise<void> {
    if (this.#ctx.opts.preemptible === true && outcome.kind === "SIGNAL" && local.stopReason === undefined) {
      const deadline = Date.now() + PREEMPT_WINDOW_MS;
      while (local.stopReason === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    }
    this.#finish(local, outcome);
  }

  /**
   * Takes over an attempt that a previous run of this worker started under a keeper and the
   * controller still wants: its output is read from the start (the controller drops lines it
   * has), its end is classified as if this worker had started it. False when the record is not
   * a kept attempt's, or its keeper is gone without a word (the caller reports it lost).
   */
  adopt(record: AttemptRecord, wanted: RunAttempt__Output): boolean {
    if (record.kept !== true || record.pid === undefined) return false;
    const scratch = this.#ctx.store.scratchDir(record.attemptUid);
    const files = keeperFiles(scratch);
    const st = readProcStat(record.pid);
    const keeperAlive = st !== undefined && st.state !== "Z" && (record.startTicks === undefined || st.startTicks === record.startTicks);
    if (!keeperAlive && !fs.existsSync(files.exit)) return false;
    const local: LocalAttempt = {
      uid: record.attemptUid,
      taskId: wanted.taskId,
      attempt: wanted.attempt,
      state: "RUNNING",
      failureKind: "",
      error: "",
      errorCode: "",
      resultJson: "",
      pid: record.pid,
      startedAtMs: record.startedAtMs,
      finishedAtMs: 0,
      logLines: 0,
      unackedLines: 0,
      nextLogIndex: 0,
      droppedLogLines: 0,
    };
    this.#ctx.attempts.set(local.uid, local);
    const proc = KeptAttempt.adopt(record.pid, record.startTicks, {
      scratch,
      startedAtMs: record.startedAtMs,
      ...(record.timeoutMs === undefined ? {} : { timeoutMs: record.timeoutMs }),
      ...(this.#ctx.opts.killGraceMs === undefined ? {} : { killGraceMs: this.#ctx.opts.killGraceMs }),
      ...(record.memoryBytes === undefined ? {} : { memoryLimitBytes: record.memoryBytes }),
      onLine: (line) => this.#shipper.queue(local, line),
      backpressure: () => this.#shipper.backpressure(),
    });
    local.proc = proc;
    this.#ctx.emit({ type: "attemptAdopted", attemptUid: local.uid, taskId: local.taskId, attempt: local.attempt, pid: record.pid });
    const resultPath = record.module === true ? path.join(scratch, "result.json") : undefined;
    const done = proc.exited.then((o) => this.#settle(local, resultPath === undefined ? o : withRunnerReport(o, readRunnerReport(resultPath))));
    this.#starting.add(done);
    void done.finally(() => this.#starting.delete(done));
    return true;
  }

  #finish(local: LocalAttempt, outcome: AttemptExit): void {
    local.proc = undefined;
    // The attempt's last lines go out now; its end is reported once they are in (#observation).
    this.#shipper.flush();
    local.finishedAtMs = Date.now();
    if (outcome.exitCode !== undefined) local.exitCode = outcome.exitCode;
    if (outcome.kind === "APP_EXIT" && outcome.exitCode === 0) {
      local.state = "SUCCEEDED";
      local.resultJson = outcome.resultJson ?? "";
    } else if (local.stopReason === "WORKER_PREEMPTED" && (outcome.kind === "KILLED" || outcome.kind === "SIGNAL")) {
      // Handed back: the worker's host is being taken away (Slurm's scancel, time limit,
      // preemption). The controller charges the preemption budget and runs it again elsewhere.
      local.state = "FAILED";
      local.failureKind = "PREEMPTED";
      local.error = `the worker was preempted${this.#ctx.preemptedWhy ? ` (${this.#ctx.preemptedWhy})` : ""}`;
    } else if (outcome.kind === "KILLED" && (local.stopReason === "WORKER_STOPPING" || local.stopReason === "CONTROLLER_SILENT")) {
      local.state = "FAILED";
      local.failureKind = "WORKER_LOST";
      local.error = local.stopReason === "WORKER_STOPPING" ? "the worker was stopped" : "the worker lost contact with the controller";
    } else if (outcome.kind === "KILLED") {
      local.state = "KILLED";
      local.failureKind = local.stopReason === "TIMEOUT" ? "TIMEOUT" : "KILLED";
      local.error = `stopped by the controller (${local.stopReason ?? "KILLED"})`;
    } else {
      local.state = "FAILED";
      local.failureKind = outcome.kind;
      local.error = outcome.message;
      local.errorCode = outcome.errorCode ?? "";
    }
    this.#ctx.emit({
      type: "attemptEnded",
      attemptUid: local.uid,
      taskId: local.taskId,
      attempt: local.attempt,
      state: local.state,
      failureKind: local.failureKind,
      error: local.error,
    });
    this.#ctx.kick();
  }
}
