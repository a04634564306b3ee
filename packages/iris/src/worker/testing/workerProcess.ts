// Test fixture: a worker daemon as its own process, so that a test can SIGKILL it. Prints each
// WorkerEvent as one JSON line on stdout.
// Usage: node --import <SOURCE_LOADER> workerProcess.ts <controller> <stateDir | "-" for the default> [no-adopt]
import { Worker } from "../worker.ts";

const [controller, stateDir, adopt] = process.argv.slice(2);
await Worker.start({
  controller,
  ...(stateDir === "-" ? {} : { stateDir }),
  ...(adopt === "no-adopt" ? { adoptAttempts: false } : {}),
  tickMs: 200,
  killGraceMs: 500,
  onEvent: (event) => console.log(JSON.stringify(event)),
});
