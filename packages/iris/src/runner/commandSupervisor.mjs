// @ts-check
// The iris command supervisor: runs a command entrypoint for the worker, as
// `node commandSupervisor.mjs <spec.json>` in the attempt's own process group. Plain JavaScript on
// purpose: it starts every command attempt, and Node runs it without a TypeScript loader (the
// module entrypoints' runner, taskRunner.ts, needs tsx anyway). The spec is runnerSpec.ts's
// RunnerSpec with a `command` entrypoint.
//
// It runs the program as its child (same process group) and exits as the program did: the same
// code, or killed by the same signal. A program that cannot be started is reported to the worker
// over IPC (LAUNCH_FAILED) and the supervisor exits 127. It watches the worker: once the worker
// is gone, the whole attempt ends within seconds (SIGTERM to the group, SIGKILL after a grace).
import { spawn } from "node:child_process";
import fs from "node:fs";

const SIGNALS = /** @type {const} */ (["SIGTERM", "SIGINT", "SIGHUP"]);

/** @param {string} message @returns {never} */
function fail(message) {
  process.stderr.write(`iris command supervisor: ${message}\n`);
  process.exit(1);
}

/** @returns {{ argv: string[]; cwd: string | undefined; parentPid: number; graceMs: number; pollMs: number }} */
function readSpec() {
  const file = process.argv[2];
  if (file === undefined) fail("usage: commandSupervisor.mjs <spec.json>");
  /** @type {any} */
  let spec;
  try {
    spec = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    fail(`cannot read ${file}: ${/** @type {Error} */ (e).message}`);
  }
  const argv = spec?.entrypoint?.command;
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === "string")) {
    fail("entrypoint.command: expected a non-empty array of strings");
  }
  const cwd = spec.entrypoint.cwd;
  if (cwd !== undefined && typeof cwd !== "string") fail("entrypoint.cwd: expected a string");
  if (!Number.isInteger(spec.parentPid) || spec.parentPid <= 0) fail("parentPid: expected a positive integer");
  return {
    argv,
    cwd,
    parentPid: spec.parentPid,
    graceMs: Number.isInteger(spec.orphanGraceMs) ? spec.orphanGraceMs : 2000,
    pollMs: Number.isInteger(spec.parentPollMs) && spec.parentPollMs > 0 ? spec.parentPollMs : 500,
  };
}

/** This process's process group id, from /proc (Node has no getpgid). */
function ownPgid() {
  try {
    const stat = fs.readFileSync("/proc/self/stat", "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
  } catch {
    return undefined;
  }
}

const spec = readSpec();
let orphaned = false;

const child = spawn(spec.argv[0], spec.argv.slice(1), { stdio: "inherit", ...(spec.cwd ? { cwd: spec.cwd } : {}) });
// The worker signals the whole group, so the command receives these itself; the supervisor only
// waits for it, to exit the same way.
for (const sig of SIGNALS) process.on(sig, () => undefined);

child.once("error", (err) => {
  const message = `cannot run ${JSON.stringify(spec.argv[0])}: ${err.message}`;
  process.stderr.write(`iris command supervisor: ${message}\n`);
  const report = { type: "iris.launchFailed", message };
  if (process.send !== undefined && process.connected) process.send(report, () => process.exit(127));
  else process.exit(127);
});

child.once("exit", (code, signal) => {
  if (orphaned) return;
  if (signal !== null) {
    for (const sig of SIGNALS) process.removeAllListeners(sig);
    process.kill(process.pid, signal);
    // Signals whose default action does not terminate still end the supervisor.
    setTimeout(() => process.exit(128), 1000).unref();
    return;
  }
  process.exit(code ?? 1);
});

/** The worker is gone: end the command and everything in this group, SIGKILL after the grace. */
function endAttempt() {
  if (orphaned) return;
  orphaned = true;
  const pgid = ownPgid();
  if (pgid !== process.pid || pgid === undefined) {
    child.kill("SIGKILL");
    process.exit(1);
  }
  /** @param {NodeJS.Signals} signal */
  const killGroup = (signal) => {
    try {
      process.kill(-pgid, signal);
    } catch {
      // ESRCH: nothing of the group is left.
    }
  };
  killGroup("SIGTERM");
  setTimeout(() => killGroup("SIGKILL"), spec.graceMs);
  if (child.exitCode !== null || child.signalCode !== null) killGroup("SIGKILL");
  else child.once("exit", () => killGroup("SIGKILL"));
}

process.channel?.unref();
process.once("disconnect", endAttempt);
setInterval(() => {
  if (process.ppid !== spec.parentPid) endAttempt();
}, spec.pollMs).unref();
if (process.ppid !== spec.parentPid || (process.channel !== undefined && !process.connected)) endAttempt();
