// A controller in its own process, for tests that SIGKILL it: options as JSON in argv[2];
// prints "LISTENING <address>" once serving.
import { Controller } from "../controller/controller.ts";
import type { ControllerOptions } from "../controller/controller.ts";

const opts = JSON.parse(process.argv[2] ?? "{}") as ControllerOptions;
const c = await Controller.start(opts);
process.stdout.write(`LISTENING ${c.address}\n`);
process.on("SIGTERM", () => void c.stop().then(() => process.exit(0)));
