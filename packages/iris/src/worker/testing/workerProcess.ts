// Test fixture: a worker daemon as its own process, so that a test can SIGKILL it. Prints each
// WorkerEvent as one JSON line on stdout.
// Usage: node --import tsx workerProcess.ts <controller> <stateDir | "-" for the default>
import { Worker } from "../worker.ts";

const [controller, stateDir] = process.argv.slice(2);
await Worker.start({
  controller,
  ...(stateDir === "-" ? {} : { stateDir }),
  tickMs: 200,
  killGraceMs: 500,
  onEvent: (event) => console.log(JSON.stringify(event)),
});
