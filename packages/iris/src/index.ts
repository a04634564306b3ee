// @marin/iris — the distributed job runtime. The one public entry of the package: what users of
// iris need (clusters, the client, the context API inside tasks, the daemons, the public types),
// and nothing of its internals (the scheduler, the wire codec, assertions). The client side alone
// (no controller, worker or LocalCluster, so a lighter import) is also @marin/iris/client.
export * from "./clientEntry.ts";

export { LocalCluster, localWorkerCapacity } from "./localCluster.ts";
export type { LocalClusterOptions } from "./localCluster.ts";
export { Controller } from "./controller/controller.ts";
export type { ControllerOptions } from "./controller/controller.ts";
export { WorkerCredentials, DEFAULT_REGISTRATION_TTL_MS } from "./controller/workerCredentials.ts";
export { Worker } from "./worker/worker.ts";
export type { LocalAttemptInfo, WorkerEvent, WorkerOptions } from "./worker/worker.ts";
