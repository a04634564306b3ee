// A worker in its own process, for tests that SIGKILL it: options as JSON in argv[2];
// prints "REGISTERED <id>" once registered.
import { Worker } from "../worker/worker.ts";
import type { WorkerOptions } from "../worker/worker.ts";

const opts = JSON.parse(process.argv[2] ?? "{}") as WorkerOptions;
const w = await Worker.start(opts);
await w.registered;
process.stdout.write(`REGISTERED ${w.id}\n`);
process.on("SIGTERM", () => void w.stop().then(() => process.exit(0)));
