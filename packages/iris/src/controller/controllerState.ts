// The controller's state machine over its SQLite database: jobs → tasks → attempts, workers,
// endpoints, logs and metrics. Everything is synchronous (better-sqlite3), and every public
// transition runs in one transaction, so a snapshot read and the commit of its decisions can never
// interleave with another change. The gRPC layer (controller.ts) only translates and subscribes.
//
// One class in layers, one file each: stateCore.ts (database, statements, transactions,
// notifications) → stateQueries.ts (reads) → transitions.ts (job/task/attempt/worker changes) →
// recordTransitions.ts (logs, endpoints, metrics) → workerTransitions.ts (drain, deregister); rows and pure rules in stateRows.ts; wire
// encoding in ../internal/codec.ts.
import { StateWorkerTransitions } from "./workerTransitions.ts";

export { deriveJobState, isTerminalTaskState, parseAttemptId, parseTaskId, rootJobOf } from "./stateRows.ts";
export type { Clock, ControllerStateOptions, StateListener } from "./stateRows.ts";

/**
 * All controller state and its transitions. One instance per database; not thread-safe (Node
 * has one thread), and every public method is one transaction.
 */
export class ControllerState extends StateWorkerTransitions {}
