// The Slurm provider: one worker is one Slurm batch job, driven through Slurm's own commands
// (`sbatch --parsable`, `squeue`, `scancel`), so it needs nothing but the client commands on the
// controller's host and a filesystem the compute nodes share with it.
//
// - The job is named `iris-<group>` and carries the comment `iris:<cluster id>:<worker id>`: the
//   cluster id is kept in the state directory (`slurm-cluster-id`), so a controller restarted on
//   the same state directory lists (adopts) the jobs it started, and never another cluster's.
// - Its batch script (under `<state>/slurm/`, 0700) runs the group's `setup` lines, then `exec`s
//   `iris worker` of this installation with `--preemptible`, the worker id and the credential
//   FILE the autoscaler wrote (0600): the credential itself is never in argv or the environment.
//   Output goes to `<state>/logs/slurm-<group>-<job id>.log`.
// - `--signal=B:USR1@<secs>` warns the worker before the time limit: it hands its attempts back
//   (PREEMPTED) and leaves, so the job ends before Slurm kills it.
// - The job's environment is a short list of variables (PATH, HOME, NODE_OPTIONS …): sbatch runs
//   with only those (and SLURM_*), and the batch script exports them again; never the
//   controller's whole environment (which may hold its own token).
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ProvidedWorker, ProviderStartRequest, WorkerProvider } from "./provider.ts";
import { workerCommandLine } from "./workerCommand.ts";

/** Options of {@link SlurmProvider}. */
export interface SlurmProviderOptions {
  /** The cluster's state directory: batch scripts and worker logs live under it. */
  stateDir: string;
  /** This cluster's id (in every job's comment); default: one kept in `<stateDir>/slurm-cluster-id`. */
  clusterId?: string;
  /** Environment for Slurm's commands (SLURM_CONF, PATH); default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** A Slurm command taking longer than this fails (default 30 s). */
  commandTimeoutMs?: number;
  /** The iris worker's argv (default: this installation's, from workerCommandLine). */
  workerCommand?: (req: ProviderStartRequest) => string[];
}

/** Variables a worker's job gets from the controller's environment (when set); nothing else. */
const EXPORTED_VARS = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "LANG",
  "LC_ALL",
  "TZ",
  "TMPDIR",
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_EXTRA_CA_CERTS",
  "IRIS_STATE_DIR",
  "IRIS_BUNDLE_CACHE",
  "IRIS_TLS_CA",
];

/** The environment sbatch runs with (and the job inherits): the listed variables and Slurm's own. */
export function sbatchEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    if (EXPORTED_VARS.includes(k) || k.startsWith("SLURM_") || k.startsWith("SBATCH_")) out[k] = v;
  }
  return out;
}

/** Slurm job states (squeue `%T`) in which the job still runs or will run. */
const PENDING_STATES = new Set(["PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT"]);
const RUNNING_STATES = new Set(["RUNNING", "CONFIGURING", "RESIZING", "SIGNALING", "STAGE_OUT", "SUSPENDED", "STOPPED"]);

/** What sbatch or squeue said when it failed (its stderr, trimmed), as an Error. */
export class SlurmCommandError extends Error {
  readonly command: string;
  readonly stderr: string;
  constructor(command: string, stderr: string) {
    super(stderr === "" ? `${command} failed` : `${command}: ${stderr}`);
    this.name = "SlurmCommandError";
    this.command = command;
    this.stderr = stderr;
  }
}

/** Single-quotes a word for bash. */
function shQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Seconds in a Slurm time limit ("MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS"); undefined if unparsable or unlimited. */
export function slurmTimeLimitSeconds(limit: string): number | undefined {
  const m = /^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$/.exec(limit.trim());
  if (m === null) return undefined;
  const [, d, a, b, c] = m;
  const days = Number(d ?? 0);
  // "D-H[:M[:S]]" and "H:M:S" start with hours; "M" and "M:S" with minutes.
  const [h, min, s] = d !== undefined || c !== undefined ? [Number(a), Number(b ?? 0), Number(c ?? 0)] : [0, Number(a), Number(b ?? 0)];
  return ((days * 24 + h) * 60 + min) * 60 + s;
}

/**
 * How long before the time limit Slurm warns the worker (`--signal=B:USR1@N`): a quarter of the
 * limit, between 30 s and 5 min (Slurm may send it up to a minute early).
 */
export function warningSeconds(timeLimit: string | undefined): number {
  const total = timeLimit === undefined ? undefined : slurmTimeLimitSeconds(timeLimit);
  if (total === undefined) return 300;
  return Math.max(30, Math.min(300, Math.floor(total / 4)));
}

/** The sbatch arguments for one worker of `req.group` (everything but the script path). */
export function sbatchArgs(req: ProviderStartRequest, o: { comment: string; logFile: string }): string[] {
  const g = req.group;
  const s = g.slurm;
  if (s === undefined) throw new Error(`scale group ${g.name} has no slurm section`);
  const args = [
    "--parsable",
    `--job-name=iris-${g.name}`,
    `--comment=${o.comment}`,
    `--output=${o.logFile}`,
    `--error=${o.logFile}`,
    "--open-mode=append",
    "--nodes=1",
    "--ntasks=1",
    `--cpus-per-task=${Math.max(1, Math.ceil(g.worker.cpuMillis / 1000))}`,
    `--mem=${Math.max(1, Math.ceil(g.worker.memoryBytes / (1024 * 1024)))}M`,
    `--partition=${s.partition}`,
    `--signal=B:USR1@${warningSeconds(s.timeLimit)}`,
    "--no-requeue",
    // sbatch itself runs with only the listed variables and SLURM_*/SBATCH_* (sbatchEnv), so ALL
    // exports exactly those. NONE, NIL or a list make slurmd build the environment through
    // --get-user-env, several seconds of every worker's start.
    "--export=ALL",
  ];
  if (s.account !== undefined) args.push(`--account=${s.account}`);
  if (s.qos !== undefined) args.push(`--qos=${s.qos}`);
  if (s.timeLimit !== undefined) args.push(`--time=${s.timeLimit}`);
  const gpus = g.worker.devices.gpu ?? 0;
  if (gpus > 0) args.push(`--gres=gpu:${gpus}`);
  args.push(...s.extraArgs);
  return args;
}

/** The batch script: the group's setup lines, then `exec` of the worker (so Slurm's signals reach it). */
export function batchScript(req: ProviderStartRequest, argv: readonly string[], env: NodeJS.ProcessEnv = {}): string {
  const exported = EXPORTED_VARS.filter((v) => env[v] !== undefined && env[v] !== "").map((v) => `export ${v}=${shQuote(env[v]!)}`);
  return [
    "#!/bin/bash",
    `# iris worker ${req.workerId} of scale group ${req.group.name}`,
    "set -e",
    ...exported,
    ...(req.group.slurm?.setup ?? []),
    `echo "iris: worker ${req.workerId} starting in slurm job $SLURM_JOB_ID on $(hostname) at $(date -u +%FT%T.%3NZ)"`,
    `exec ${argv.map(shQuote).join(" ")}`,
    "",
  ].join("\n");
}

interface QueueRow {
  id: string;
  name: string;
  state: string;
  reason: string;
  comment: string;
}

/** Parses `squeue -h -o '%i|%j|%T|%r|%k'` output (the comment last: it may hold anything). */
export function parseSqueue(text: string): QueueRow[] {
  const rows: QueueRow[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const parts = line.split("|");
    if (parts.length < 5) continue;
    const [id, name, state, reason] = parts as [string, string, string, string];
    rows.push({ id: id.trim(), name: name.trim(), state: state.trim(), reason: reason.trim(), comment: parts.slice(4).join("|").trim() });
  }
  return rows;
}

/** Starts, lists and stops iris workers as Slurm batch jobs (see the file comment). */
export class SlurmProvider implements WorkerProvider {
  readonly kind = "slurm";
  /** This cluster's id (kept in `<stateDir>/slurm-cluster-id`). */
  readonly clusterId: string;
  readonly #opts: SlurmProviderOptions;
  readonly #env: NodeJS.ProcessEnv;
  /** Jobs this provider knows (started or listed): kept so a job that left squeue is reported ended once. */
  readonly #known = new Map<string, ProvidedWorker>();

  constructor(opts: SlurmProviderOptions) {
    this.#opts = opts;
    this.#env = opts.env ?? process.env;
    fs.mkdirSync(opts.stateDir, { recursive: true });
    if (opts.clusterId !== undefined) {
      if (!/^[\w.-]+$/.test(opts.clusterId)) throw new Error(`cluster id ${JSON.stringify(opts.clusterId)} is not usable in a Slurm comment`);
      this.clusterId = opts.clusterId;
      return;
    }
    const idFile = path.join(opts.stateDir, "slurm-cluster-id");
    let id: string;
    try {
      id = fs.readFileSync(idFile, "utf8").trim();
    } catch {
      id = "";
    }
    if (!/^[0-9a-f]{16}$/.test(id)) {
      id = randomBytes(8).toString("hex");
      fs.writeFileSync(idFile, `${id}\n`, { mode: 0o600 });
    }
    this.clusterId = id;
  }

  #run(program: string, args: readonly string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile(
        program,
        args as string[],
        { env: program === "sbatch" ? sbatchEnv(this.#env) : this.#env, timeout: this.#opts.commandTimeoutMs ?? 30_000, maxBuffer: 64 * 1024 * 1024 },
        (err, stdout, stderr) => {
          if (err === null) resolve(stdout);
          else {
            const why = stderr
              .trim()
              .split("\n")
              .filter((l) => l.trim() !== "")
              .join("; ");
            reject(new SlurmCommandError(program, why !== "" ? why : err.message));
          }
        },
      );
    });
  }

  #comment(workerId: string): string {
    return `iris:${this.clusterId}:${workerId}`;
  }

  async start(req: ProviderStartRequest): Promise<ProvidedWorker> {
    if (req.group.slurm === undefined) throw new Error(`scale group ${req.group.name} has no slurm section`);
    if (!/^[\w.-]+$/.test(req.workerId)) throw new Error(`worker id ${JSON.stringify(req.workerId)} is not usable in a Slurm comment`);
    const st = fs.statSync(req.credentialFile);
    if ((st.mode & 0o077) !== 0) throw new Error(`${req.credentialFile}: the credential file must be readable by its owner only (mode 0600)`);
    const scripts = path.join(req.stateDir, "slurm");
    const logs = path.join(req.stateDir, "logs");
    fs.mkdirSync(scripts, { recursive: true, mode: 0o700 });
    fs.mkdirSync(logs, { recursive: true });
    const script = path.join(scripts, `${req.workerId}.sh`);
    const argv = [...(this.#opts.workerCommand ?? workerCommandLine)(req), "--preemptible"];
    fs.writeFileSync(script, batchScript(req, argv, this.#env), { mode: 0o700 });
    const args = sbatchArgs(req, { comment: this.#comment(req.workerId), logFile: path.join(logs, `slurm-${req.group.name}-%j.log`) });
    const out = await this.#run("sbatch", [...args, script]);
    const jobId = out.trim().split("\n").pop()!.split(";")[0]!.trim();
    if (!/^\d+(_\d+)?$/.test(jobId)) throw new SlurmCommandError("sbatch", `unexpected output ${JSON.stringify(out.trim())}`);
    const w: ProvidedWorker = { providerId: jobId, group: req.group.name, workerId: req.workerId, state: "pending", detail: `slurm job ${jobId} PENDING`, startedAtMs: Date.now() };
    this.#known.set(jobId, w);
    return { ...w };
  }

  async list(): Promise<ProvidedWorker[]> {
    const user = os.userInfo().username;
    const out = await this.#run("squeue", ["--noheader", "--all", `--user=${user}`, "--states=all", "--format=%i|%j|%T|%r|%k"]);
    const prefix = `iris:${this.clusterId}:`;
    const seen = new Set<string>();
    const result: ProvidedWorker[] = [];
    for (const r of parseSqueue(out)) {
      if (!r.comment.startsWith(prefix) || !r.name.startsWith("iris-")) continue;
      const workerId = r.comment.slice(prefix.length);
      const group = r.name.slice("iris-".length);
      const state: ProvidedWorker["state"] = PENDING_STATES.has(r.state) ? "pending" : RUNNING_STATES.has(r.state) ? "running" : "ended";
      const reason = r.reason !== "" && r.reason !== "None" ? `: ${r.reason}` : "";
      const prev = this.#known.get(r.id);
      const w: ProvidedWorker = {
        providerId: r.id,
        group,
        workerId,
        state,
        detail: `slurm job ${r.id} ${r.state}${state === "pending" ? reason : ""}`,
        startedAtMs: prev?.startedAtMs ?? Date.now(),
      };
      seen.add(r.id);
      if (state === "ended") this.#known.delete(r.id);
      else this.#known.set(r.id, w);
      result.push(w);
    }
    // Jobs that left squeue altogether (past MinJobAge): ended, reported once.
    for (const [id, w] of [...this.#known]) {
      if (seen.has(id)) continue;
      this.#known.delete(id);
      result.push({ ...w, state: "ended", detail: `slurm job ${id} ended` });
    }
    return result;
  }

  async stop(providerId: string): Promise<void> {
    try {
      await this.#run("scancel", [providerId]);
    } catch (e) {
      // Already gone: not an error.
      if (e instanceof SlurmCommandError && /Invalid job id|already completing or completed|does not exist/i.test(e.stderr)) return;
      throw e;
    }
  }

  async close(): Promise<void> {
    // Nothing held: the jobs keep running (`--keep-workers` adopts them on the next `up`).
  }
}
