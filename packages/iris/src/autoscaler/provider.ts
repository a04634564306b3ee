// The provider seam: how the autoscaler gets workers from somewhere (processes on this machine,
// Slurm jobs, later Kubernetes pods or SSH hosts) without knowing how. A provider only starts,
// lists and stops; every decision (how many, which group, when to give one back, when a boot has
// failed) is the autoscaler's (policy.ts, autoscaler.ts).
//
// The contract, for whoever writes a provider:
// - `start(req)` asks for ONE worker of `req.group` and resolves once the request is accepted
//   (a Slurm job submitted, a process spawned, a pod created) — not once the worker registers.
//   The started worker must run `iris worker` (or `Worker.start`) with
//     --controller req.controllerAddress --worker-id req.workerId --credential-file req.credentialFile
//   and the group's shape (`workerCommandLine()` in workerCommand.ts builds exactly that argv), so
//   the worker registers under `req.workerId`: that id is how the autoscaler matches a provided
//   worker to a registered one. The credential is in a 0600 file; never copy it into argv or the
//   environment (`ps`, `scontrol show job`, `kubectl describe` show those to others).
//   A failure to start throws an Error whose message is the engine's own (sbatch's stderr): it
//   becomes a decision in the log.
// - `list()` returns the workers this provider started FOR THIS CLUSTER and that have not been
//   reaped: also those started by an earlier controller on the same state directory (a restart
//   adopts them; never list another cluster's). `state`: "pending" while the engine has not
//   started it (Slurm PENDING), "running" once it runs (registered or not: the autoscaler knows
//   which have registered), "ended" once it is gone (kept until the next list at most).
//   `detail` is shown to people in parentheses (`slurm job 812 PENDING: Resources`).
// - `stop(providerId)` ends one worker (scancel, SIGTERM, delete the pod); idempotent, and a worker
//   already gone is no error. The autoscaler drains a registered worker before it stops it.
// - `close()` releases the provider's own resources (timers, child handles) WITHOUT stopping the
//   workers (`iris cluster up --keep-workers` relies on that; `down`/shutdown call stop first).
//
// A Kubernetes provider would create one pod per `start` (labels: cluster id, group, worker id;
// the credential as a Secret mounted 0600), `list` by the cluster-id label selector, `stop` by
// deleting the pod; an SSH-hosts provider would keep a fixed host list per group (max = hosts),
// `start` = ssh HOST 'nohup iris worker … &' with the credential copied over scp to a 0600 file,
// `list` = its own record under the state directory plus a liveness check, `stop` = ssh kill.
// Either registers in `providers.ts` under a new `provider:` name; the autoscaler is untouched.

/** What a group's workers offer: cpu in millicores, memory in bytes, devices and attributes. */
export interface WorkerShape {
  cpuMillis: number;
  memoryBytes: number;
  devices: Record<string, number>;
  attributes: Record<string, string>;
}

/** Slurm options of a group (used by the slurm provider only). */
export interface SlurmGroupConfig {
  partition: string;
  account?: string | undefined;
  qos?: string | undefined;
  /** `sbatch --time`, e.g. "08:00:00"; undefined = the partition's default. */
  timeLimit?: string | undefined;
  /** Extra `sbatch` arguments, as given. */
  extraArgs: string[];
  /** Shell lines run in the job before the worker starts (`module load nodejs`). */
  setup: string[];
}

/** One scale group, validated (config.ts); durations in milliseconds. */
export interface ScaleGroupConfig {
  name: string;
  /** Which provider starts its workers: "slurm" | "local" (providers.ts). */
  provider: string;
  minWorkers: number;
  maxWorkers: number;
  /** A worker with no attempt for this long is drained and stopped (above minWorkers). */
  idleTimeoutMs: number;
  /** Started but not registered by then: cancelled, counted as a failed boot. */
  bootTimeoutMs: number;
  /** Higher first when several groups could hold the same work. */
  priority: number;
  worker: WorkerShape;
  slurm?: SlurmGroupConfig | undefined;
}

/** What `start` is given for one worker. */
export interface ProviderStartRequest {
  group: ScaleGroupConfig;
  /** The id the worker must register with (`iris worker --worker-id`). */
  workerId: string;
  /** "host:port" the worker dials (the config's `controller.advertise`, else the bound address). */
  controllerAddress: string;
  /** A 0600 file holding the worker's registration credential ("" inside = auth off); never argv/env. */
  credentialFile: string;
  /** The cluster's state directory (worker logs go under it). */
  stateDir: string;
}

/** A worker as its provider sees it. */
export interface ProvidedWorker {
  /** The engine's handle (slurm job id, pid, pod name). */
  providerId: string;
  /** Its scale group's name. */
  group: string;
  /** The id it registers (or registered) with. */
  workerId: string;
  state: "pending" | "running" | "ended";
  /** For people, shown in parentheses: "slurm job 812 PENDING: Resources". */
  detail?: string | undefined;
  /** When it was started (epoch ms): the boot timeout counts from here. */
  startedAtMs: number;
}

/** Starts, lists and stops workers on one engine. See the file comment for the contract. */
export interface WorkerProvider {
  /** "local", "slurm", … (the `provider:` value of its groups). */
  readonly kind: string;
  start(req: ProviderStartRequest): Promise<ProvidedWorker>;
  /** Only this cluster's workers, including those an earlier controller started (adoption). */
  list(): Promise<ProvidedWorker[]>;
  stop(providerId: string): Promise<void>;
  /** Releases the provider's resources; never stops workers. */
  close?(): Promise<void>;
}

/**
 * Mints and revokes per-worker registration credentials: one credential per worker id, valid
 * for that worker alone, revoked when the worker ends. Implemented by the controller.
 */
export interface WorkerCredentialIssuer {
  /** A credential the worker `workerId` (and only it) registers with; "" when auth is off. */
  mint(workerId: string): Promise<string>;
  revoke(workerId: string): Promise<void>;
}
