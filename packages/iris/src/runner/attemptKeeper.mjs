// @ts-check
// The iris attempt keeper: what makes an attempt adoptable by a restarted worker. A worker with a
// state directory of its own starts each attempt as `node attemptKeeper.mjs <keeper.json>`, in the
// attempt's own process group, with no pipe to the worker. The keeper runs the attempt's program
// (a command, or the module task runner) as its child, writes each line the child prints to an
// output file (one JSON object per line: stream, time, text), and when the child ends writes an
// exit file and exits. The worker — this one or the next one on the same state directory — reads
// those files, so a worker restart loses neither the output nor the exit.
//
// The keeper watches a heartbeat file the worker touches: when it has not been touched for
// `adoptGraceMs` (the worker died and no new one took over), the whole attempt ends (SIGTERM to
// the group, SIGKILL after `killGraceMs`). Plain JavaScript: no loader to start.
import { spawn } from "node:child_process";
import fs from "node:fs";

/** Lines longer than this many UTF-16 units (at most 3 bytes of UTF-8 each: 64 KiB) are written in pieces. */
const MAX_PIECE = Math.floor((64 * 1024) / 3);

/** @param {string} message @returns {never} */
function fail(message) {
  process.stderr.write(`iris attempt keeper: ${message}\n`);
  process.exit(1);
}

/**
 * @returns {{ argv: string[]; cwd?: string; outputFile: string; exitFile: string; heartbeatFile: string;
 *   adoptGraceMs: number; killGraceMs: number; pollMs: number }}
 */
function readSpec() {
  const file = process.argv[2];
  if (file === undefined) fail("usage: attemptKeeper.mjs <keeper.json>");
  /** @type {any} */
  let spec;
  try {
    spec = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    fail(`cannot read ${file}: ${/** @type {Error} */ (e).message}`);
  }
  if (!Array.isArray(spec.argv) || spec.argv.length === 0 || !spec.argv.every((/** @type {unknown} */ a) => typeof a === "string")) {
    fail("argv: expected a non-empty array of strings");
  }
  for (const k of ["outputFile", "exitFile", "heartbeatFile"]) if (typeof spec[k] !== "string") fail(`${k}: expected a string`);
  for (const k of ["adoptGraceMs", "killGraceMs", "pollMs"]) if (!Number.isInteger(spec[k]) || spec[k] < 1) fail(`${k}: expected a positive integer`);
  return spec;
}

const spec = readSpec();
const out = fs.openSync(spec.outputFile, "a");

/** @param {"o" | "e"} stream @param {string} line */
function writeLine(stream, line) {
  for (let i = 0; i === 0 || i < line.length; i += MAX_PIECE) {
    fs.writeSync(out, `${JSON.stringify({ s: stream, t: Date.now(), l: line.slice(i, i + MAX_PIECE) })}\n`);
  }
}

/** @param {import("node:stream").Readable | null} stream @param {"o" | "e"} name @returns {Promise<void>} */
function pump(stream, name) {
  if (stream === null) return Promise.resolve();
  return new Promise((resolve) => {
    let rest = "";
    stream.setEncoding("utf8");
    stream.on("data", (/** @type {string} */ chunk) => {
      const parts = (rest + chunk).split("\n");
      rest = parts.pop() ?? "";
      for (const p of parts) writeLine(name, p.endsWith("\r") ? p.slice(0, -1) : p);
      if (rest.length > MAX_PIECE) {
        writeLine(name, rest);
        rest = "";
      }
    });
    const end = () => {
      if (rest !== "") writeLine(name, rest);
      rest = "";
      resolve();
    };
    stream.once("end", end);
    stream.once("error", end);
  });
}

/** @param {object} exit */
function writeExit(exit) {
  fs.writeFileSync(`${spec.exitFile}.tmp`, JSON.stringify(exit));
  fs.renameSync(`${spec.exitFile}.tmp`, spec.exitFile);
}

// The worker signals the whole group: the program receives the signal itself; the keeper lives on
// to record how it ended.
for (const sig of /** @type {const} */ (["SIGTERM", "SIGINT", "SIGHUP"])) process.on(sig, () => undefined);

const child = spawn(spec.argv[0], spec.argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], ...(spec.cwd ? { cwd: spec.cwd } : {}) });
const drained = Promise.all([pump(child.stdout, "o"), pump(child.stderr, "e")]);

child.once("error", (err) => {
  if (child.pid !== undefined) return;
  writeExit({ code: null, signal: null, launchError: `cannot run ${JSON.stringify(spec.argv[0])}: ${err.message}` });
  process.exit(0);
});

child.once("exit", (code, signal) => {
  // Output written by escaped grandchildren after the exit is not waited for beyond a moment.
  const late = new Promise((r) => setTimeout(r, 2000).unref());
  void Promise.race([drained, late]).then(() => {
    fs.closeSync(out);
    writeExit({ code, signal });
    process.exit(0);
  });
});

/** No worker keeps the heartbeat: end the attempt and everything in this group. */
let orphaned = false;
setInterval(() => {
  if (orphaned) return;
  let age;
  try {
    age = Date.now() - fs.statSync(spec.heartbeatFile).mtimeMs;
  } catch {
    age = Infinity;
  }
  if (age <= spec.adoptGraceMs) return;
  orphaned = true;
  /** @param {NodeJS.Signals} signal */
  const killGroup = (signal) => {
    try {
      process.kill(-process.pid, signal);
    } catch {
      // ESRCH: nothing of the group is left.
    }
  };
  killGroup("SIGTERM");
  setTimeout(() => killGroup("SIGKILL"), spec.killGraceMs);
}, spec.pollMs);
