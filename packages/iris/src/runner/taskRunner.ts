// The iris task runner for module entrypoints: the process a worker starts for a
// `{ module, export, args }` attempt, as `node --import <iris's tsx> taskRunner.ts <spec.json>` in
// the attempt's own process group. (Command entrypoints run under commandSupervisor.mjs, which
// needs no TypeScript loader.)
//
// It checks the task environment (from which getIrisCtx() builds the context on first use),
// imports the module, awaits `module[export](args)`, leaves the return value (capped JSON) or a
// non-retryable error (APP_ERROR) in the report file the worker named, and exits 0 on a return; a
// throw prints the error with its stack on stderr and exits 1. It watches its worker: when the worker dies, the whole attempt ends
// within seconds (SIGTERM to the group, SIGKILL after a grace period).
import fs from "node:fs";
import { readProcStat } from "../process/processGroup.ts";
import { parseTaskEnv } from "../process/taskEnv.ts";
import { watchParent } from "./parentWatch.ts";
import { moduleUrl, parseRunnerSpec, type RunnerSpec } from "./runnerSpec.ts";
import { importModule } from "../moduleLoader.ts";
import { appErrorOf, encodeTaskResult, writeRunnerReport, type RunnerReport } from "../taskResult.ts";

function fail(message: string): never {
  process.stderr.write(`iris task runner: ${message}\n`);
  process.exit(1);
}

function readSpec(): Required<RunnerSpec> {
  const path = process.argv[2];
  if (path === undefined) fail("usage: taskRunner.ts <spec.json>");
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(path, "utf8"));
  } catch (e) {
    fail(`cannot read ${path}: ${(e as Error).message}`);
  }
  const parsed = parseRunnerSpec(raw);
  if ("problems" in parsed) fail(parsed.problems.join("; "));
  return parsed;
}

/**
 * The worker is gone: ends every process of this attempt. SIGTERM to the group first; SIGKILL
 * after `graceMs` when the task handles SIGTERM itself (a trainer saving a checkpoint), after a
 * moment otherwise. The runner ignores its own SIGTERM so that it lives to deliver the SIGKILL.
 */
function endAttempt(graceMs: number): void {
  const taskHandlesTerm = process.listenerCount("SIGTERM") > 0;
  process.on("SIGTERM", () => undefined);
  const pgid = readProcStat("self")?.pgrp;
  // Not a group leader (started by hand, not by a worker): only this process is ours to end.
  if (pgid !== process.pid) process.exit(1);
  const killGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-pgid, signal);
    } catch {
      // ESRCH: nothing of the group is left.
    }
  };
  killGroup("SIGTERM");
  setTimeout(() => killGroup("SIGKILL"), taskHandlesTerm ? graceMs : Math.min(graceMs, 200));
}

function report(resultPath: string, r: RunnerReport): void {
  if (resultPath === "") return;
  try {
    writeRunnerReport(resultPath, r);
  } catch (e) {
    // Without the report the worker sees a plain failure (APP_EXIT 1), which is retried.
    process.stderr.write(`iris task runner: cannot write ${resultPath}: ${(e as Error).message}\n`);
    process.exit(1);
  }
}

async function runModule(entry: { module: string; export: string; args?: unknown }, resultPath: string): Promise<never> {
  let value: unknown;
  try {
    // The context itself is built lazily from this environment by getIrisCtx(), in whichever copy
    // of @marin/iris the module imports; checking it here fails a broken environment early.
    parseTaskEnv(process.env);
    const mod = await importModule(moduleUrl(entry.module));
    const fn = mod[entry.export];
    if (typeof fn !== "function") {
      const names = Object.keys(mod).filter((k) => typeof mod[k] === "function");
      throw new Error(`${entry.module} has no exported function ${JSON.stringify(entry.export)} ` + `(exported functions: ${names.length > 0 ? names.join(", ") : "none"})`);
    }
    value = await (fn as (args: unknown) => unknown)(entry.args);
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? String(e)) : String(e)}\n`);
    const appError = appErrorOf(e);
    if (appError !== undefined) report(resultPath, { appError });
    process.exit(1);
  }
  const encoded = encodeTaskResult(value);
  if (encoded !== undefined) report(resultPath, encoded);
  if (encoded !== undefined && "appError" in encoded) {
    process.stderr.write(`iris task runner: ${encoded.appError.code}: ${encoded.appError.message}\n`);
    process.exit(1);
  }
  process.exit(0);
}

const spec = readSpec();
if (!("module" in spec.entrypoint)) fail("entrypoint: expected a module entrypoint (commands run under commandSupervisor.mjs)");
if (spec.parentPid > 0) watchParent({ parentPid: spec.parentPid, pollMs: spec.parentPollMs, onGone: () => endAttempt(spec.orphanGraceMs) });
await runModule(spec.entrypoint, spec.resultPath);
