// The public status types of jobs, tasks, attempts, logs, metrics, endpoints and workers, as the
// client hands them out (converted from the wire in internal/codec.ts).

/** Job states; a job's state is derived from its tasks. */
export type JobState = "PENDING" | "RUNNING" | "SUCCEEDED" | "FAILED" | "KILLED" | "UNSCHEDULABLE";

/** Task states. */
export type TaskState = "PENDING" | "ASSIGNED" | "BUILDING" | "RUNNING" | "SUCCEEDED" | "FAILED" | "KILLED" | "WORKER_LOST" | "PREEMPTED" | "UNSCHEDULABLE";

/**
 * Why an attempt ended (set by the worker or, for WORKER_LOST/PEER_FAILED/KILLED, the controller).
 * `APP_ERROR`: the task threw a non-retryable error (or returned a value that is not JSON or too
 * large); no budget retries it.
 */
export type FailureKind =
  | "APP_EXIT"
  | "APP_ERROR"
  | "SIGNAL"
  | "OOM"
  | "TIMEOUT"
  | "WORKER_LOST"
  | "LAUNCH_FAILED"
  | "PEER_FAILED"
  | "KILLED"
  /** The job's code bundle could not be fetched, unpacked or installed on the worker (the error has the build log's tail). */
  | "BUILD_FAILED"
  /** Moved off a draining worker (`iris worker drain`); charged to the preemption budget. */
  | "PREEMPTED";

/** The state of one task and its latest attempt. */
export interface TaskStatus {
  taskId: string;
  index: number;
  state: string;
  attempt: number;
  exitCode?: number;
  failureKind?: string;
  pendingReason?: string;
  statusText?: string;
  error?: string;
  /** For a task that failed with APP_ERROR: the application's error code. */
  errorCode?: string;
  /** For a SUCCEEDED task: its module entrypoint's return value, parsed JSON (absent when none). */
  result?: unknown;
  workerId?: string;
  attempts: AttemptStatus[];
}

/** One attempt of a task. */
export interface AttemptStatus {
  attempt: number;
  workerId: string;
  state: string;
  exitCode?: number;
  failureKind?: string;
  error?: string;
  /** For an APP_ERROR attempt: the application's error code. */
  errorCode?: string;
  /** For a SUCCEEDED attempt: the return value, parsed JSON (absent when none). */
  result?: unknown;
  startedAtMs?: number;
  finishedAtMs?: number;
}

/** The state of one submission of a job. */
export interface JobStatus {
  name: string;
  instanceId: string;
  state: JobState;
  error?: string;
  /**
   * The tasks: all of them from `Job.status()`/`Job.wait()` (the client follows the pages), none
   * from `IrisClient.list()` (summaries: see `taskCounts`).
   */
  tasks: TaskStatus[];
  /** The job's tasks counted by state (always all of them; set on every status the client returns). */
  taskCounts?: Partial<Record<TaskState, number>>;
  /** Number of tasks of the job (set on every status the client returns). */
  numTasks?: number;
  submittedAtMs: number;
  finishedAtMs?: number;
}

/** One line of a task's output. */
export interface LogEntry {
  taskIndex: number;
  attempt: number;
  stream: "stdout" | "stderr";
  line: string;
  timeMs: number;
}

/** One point of a task's reported metrics. */
export interface MetricPoint {
  step: number;
  timeMs: number;
  metrics: Record<string, number>;
}

/** A registered endpoint. */
export interface Endpoint {
  name: string;
  address: string;
  metadata: Record<string, string>;
}

/** A capability URL for one endpoint (`IrisClient.mintEndpointToken`, the MintEndpointToken RPC). */
export interface EndpointCapability {
  /** The endpoint's full name the token is bound to. */
  name: string;
  token: string;
  /** `http://<controller http>/cap/<token>`: append the service's path (`/v1/models`). */
  url: string;
  /** `/cap/<token>`: the same, relative to the controller's HTTP address. */
  path: string;
  expiresAtMs: number;
}

/** A worker as `IrisClient.listWorkers()` shows it. */
export interface WorkerSummary {
  workerId: string;
  host: string;
  /** ALIVE | LOST */
  state: string;
  attributes: Record<string, string>;
  runningAttempts: number;
  lastSeenMs: number;
  /** What the worker offers: cpu in millicores, memory in bytes, devices by kind. */
  capacity: ResourceAmounts;
  /** What its unfinished attempts hold now. */
  used: ResourceAmounts;
}

/** An amount of worker resources: cpu in millicores, memory in bytes, devices by kind. */
export interface ResourceAmounts {
  cpuMillis: number;
  memoryBytes: number;
  devices: Record<string, number>;
}

/** The final job states. */
export const TERMINAL_JOB_STATES: readonly JobState[] = ["SUCCEEDED", "FAILED", "KILLED", "UNSCHEDULABLE"];

/** Whether a job state is final. */
export function isTerminalJobState(state: string): boolean {
  return (TERMINAL_JOB_STATES as readonly string[]).includes(state);
}
