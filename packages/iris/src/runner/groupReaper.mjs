// @ts-check
// The iris group reaper: one per worker, started with the worker's first command attempt as
// `node groupReaper.mjs <workerPid> <graceMs>` in its own process group, with an IPC channel to the worker. The worker tells it the process
// groups of the command attempts it spawns directly (`{ add: pgid }`, `{ remove: pgid }`); when
// the worker dies (the channel disconnects, or this process is re-parented), the reaper ends
// every group it still tracks (SIGTERM, SIGKILL after the grace) and exits. A worker that stops
// cleanly sends `{ exit: true }` first. This replaces a supervisor process per attempt (one Node
// start each) with one per worker. Plain JavaScript: no loader to start.

const workerPid = Number(process.argv[2]);
const graceMs = Number(process.argv[3] ?? 2000);
const pollMs = 500;
if (!Number.isInteger(workerPid) || workerPid <= 1) {
  process.stderr.write("usage: groupReaper.mjs <workerPid> <graceMs>\n");
  process.exit(2);
}

/** @type {Set<number>} */
const groups = new Set();
let cleanExit = false;
let reaping = false;

/** @param {number} pgid @param {NodeJS.Signals} signal */
function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing of the group is left.
  }
}

function reap() {
  if (reaping) return;
  reaping = true;
  if (cleanExit || groups.size === 0) process.exit(0);
  for (const g of groups) signalGroup(g, "SIGTERM");
  setTimeout(() => {
    for (const g of groups) signalGroup(g, "SIGKILL");
    process.exit(0);
  }, graceMs);
}

// Signals meant for the worker's terminal must not take the reaper down before the worker.
for (const sig of /** @type {const} */ (["SIGINT", "SIGHUP"])) process.on(sig, () => undefined);

process.on("message", (/** @type {any} */ msg) => {
  if (Number.isInteger(msg?.add) && msg.add > 1) groups.add(msg.add);
  else if (Number.isInteger(msg?.remove)) groups.delete(msg.remove);
  else if (msg?.exit === true) cleanExit = true;
});
process.once("disconnect", reap);
setInterval(() => {
  if (process.ppid !== workerPid) reap();
}, pollMs);
if (process.ppid !== workerPid || !process.connected) reap();
// Only now: messages sent before the listener above was attached would have been lost. The worker
// may die between the check above and this write (EPIPE): with a callback the error comes here
// instead of as an unhandled 'error' event (a stack trace on the worker's inherited stderr).
else process.send?.({ ready: true }, (/** @type {Error | null} */ err) => err && reap());
