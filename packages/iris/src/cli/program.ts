// The `iris` command tree: commander parses and validates, then hands one typed object to an
// action. Actions are injected so the parsing is unit-tested without starting anything
// (program.test.ts); main.ts wires the real ones (actions.ts).
import path from "node:path";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { IrisError } from "../errors.ts";
import type { Constraint, JobSpecInput, JobState } from "../jobSpec.ts";
import { integerArg } from "../toolkit/cliInteger.ts";
import { collect, collectKeyValue, parseConstraint, parseCpu, parseJson, parseSeconds, parseSize } from "./units.ts";

/** How a command reaches the controller. */
export interface ClientArgs {
  controller: string;
  token: string | undefined;
  /** TLS: the CA file the controller's certificate chains to (`--tls-ca`, `IRIS_TLS_CA`). */
  tlsCa?: string | undefined;
}

/** `iris controller`. */
export interface ControllerArgs {
  port: number;
  /** Interface to bind (default 127.0.0.1). */
  host: string;
  dbPath: string;
  token: string | undefined;
  /** `--auth-file`: YAML identities (see the iris README's security section). */
  authFile?: string | undefined;
  /** `--insecure`: allow a non-loopback bind with auth off (warns). */
  insecure?: boolean;
  /** `--tls-cert` / `--tls-key`: PEM files; TLS for gRPC and HTTP. */
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
  workerTimeoutMs: number | undefined;
  /** With no worker registered, a task waits this long before it is UNSCHEDULABLE (default 5 min). */
  schedulingTimeoutMs: number | undefined;
  /** Also serve HTTP (API, /metrics, the endpoint proxy) on this port; undefined = none. */
  httpPort?: number | undefined;
  /** `--bundle-keep`: uploaded bundles kept beyond those live jobs use (0 = all; default 32). */
  bundleKeep?: number | undefined;
  /** `--no-auth`: auth off (loudly); HTTP answers only the controller's own Host names. */
  noAuth?: boolean;
  /** `--proxy-port`: the endpoint proxy's own port (default: any free one, with --http-port). */
  proxyPort?: number | undefined;
}

/** `iris db backup`. */
export interface DbBackupArgs {
  dbPath: string;
  out: string;
}

/** `iris worker`. */
export interface WorkerArgs extends ClientArgs {
  cpuMillis: number | undefined;
  memoryBytes: number | undefined;
  attributes: Record<string, string>;
  stateDir: string | undefined;
  advertiseHost: string | undefined;
  verbose: boolean;
  /** Where bundles are cached (default `$IRIS_BUNDLE_CACHE`, else ~/.cache/iris/bundles). */
  bundleCache?: string | undefined;
  /** Extra flags of the bundles' `pnpm install`. */
  bundleInstallFlags?: string[] | undefined;
  /** `--bundle-cache-keep N`: built bundles the cache keeps (0 = all). */
  bundleCacheKeep?: number | undefined;
  /** `--no-adopt`: a restart ends the attempts instead of adopting them. */
  adopt?: boolean | undefined;
  /** How long attempts outlive a dead worker waiting to be adopted. */
  adoptGraceMs?: number | undefined;
  /** `--worker-id`: register under this id (what a provider that started the worker expects). */
  workerId?: string | undefined;
  /** `--credential-file`: read the registration credential from this file (instead of --token). */
  credentialFile?: string | undefined;
  /** `--preemptible`: SIGTERM and SIGUSR1 hand the attempts back PREEMPTED (a Slurm job ending). */
  preemptible?: boolean | undefined;
}

/** `iris cluster up`. */
export interface ClusterUpArgs {
  configFile: string;
  /** Leave the provided workers running at shutdown (the next `up` adopts them). */
  keepWorkers: boolean;
}

/** `iris cluster status`. */
export interface ClusterStatusArgs extends ClientArgs {
  json: boolean;
}

/** `iris worker drain ID`. */
export interface WorkerDrainArgs extends ClientArgs {
  workerId: string;
}

/** `iris cluster local`. */
export interface ClusterLocalArgs {
  workers: number;
  port: number;
  token: string | undefined;
  dbPath: string | undefined;
  workerCpuMillis: number | undefined;
  workerMemoryBytes: number | undefined;
  schedulingTimeoutMs: number | undefined;
  /** Serve the controller's HTTP face (the dashboard, API, /metrics) on this port; undefined = none. */
  httpPort?: number | undefined;
  /** `--no-auth`: auth off (loudly). */
  noAuth?: boolean;
  /** `--proxy-port`: the endpoint proxy's own port. */
  proxyPort?: number | undefined;
}

/** `iris job run`. */
export interface JobRunArgs extends ClientArgs {
  /** The spec the flags build, handed to the client as it is (the controller validates it). */
  spec: JobSpecInput;
  /** Print the name and return without streaming or waiting. */
  detach: boolean;
  /** `--bundle [ROOT]`: ship the git work tree (of ROOT, else of the current directory). */
  bundle?: true | string | undefined;
}

/** `iris job status|kill NAME`. */
export interface JobNameArgs extends ClientArgs {
  name: string;
  json: boolean;
}

/** `iris job logs NAME`. */
export interface JobLogsArgs extends ClientArgs {
  name: string;
  follow: boolean;
}

/** `iris job list`. */
export interface JobListArgs extends ClientArgs {
  prefix: string | undefined;
  /** Only jobs in this state (upper-cased, checked against the job states). */
  state: JobState | undefined;
  json: boolean;
}

/** `iris status`. */
export interface StatusArgs extends ClientArgs {
  json: boolean;
}

/** `iris endpoints`. */
export interface EndpointsArgs extends ClientArgs {
  prefix: string | undefined;
  json: boolean;
}

/** `iris endpoint token`. */
export interface EndpointTokenArgs extends ClientArgs {
  name: string;
  ttlSeconds: number | undefined;
  json: boolean;
}

/** `iris workers`. */
export interface WorkersArgs extends ClientArgs {
  json: boolean;
}

/** What each command does once parsed; each resolves to the process exit code. */
export interface CliActions {
  controller(a: ControllerArgs): Promise<number>;
  worker(a: WorkerArgs): Promise<number>;
  workerDrain(a: WorkerDrainArgs): Promise<number>;
  clusterLocal(a: ClusterLocalArgs): Promise<number>;
  clusterUp(a: ClusterUpArgs): Promise<number>;
  clusterStatus(a: ClusterStatusArgs): Promise<number>;
  clusterDown(a: ClientArgs): Promise<number>;
  jobRun(a: JobRunArgs): Promise<number>;
  jobList(a: JobListArgs): Promise<number>;
  jobStatus(a: JobNameArgs): Promise<number>;
  jobLogs(a: JobLogsArgs): Promise<number>;
  jobKill(a: JobNameArgs): Promise<number>;
  endpoints(a: EndpointsArgs): Promise<number>;
  endpointToken(a: EndpointTokenArgs): Promise<number>;
  workers(a: WorkersArgs): Promise<number>;
  status(a: StatusArgs): Promise<number>;
  dbBackup(a: DbBackupArgs): Promise<number>;
}

/** Where the CLI writes (the process streams, or buffers in tests). */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

const tokenOption = (): Option => new Option("--token <token>", "bearer token for the controller").env("IRIS_AUTH_TOKEN");

const tlsCaOption = (): Option => new Option("--tls-ca <file>", "TLS: CA certificate (PEM) the controller's certificate must chain to").env("IRIS_TLS_CA");

const controllerOption = (): Option => new Option("--controller <address>", "controller address host:port").env("IRIS_CONTROLLER_ADDRESS");

/** The job states `iris job list --state` accepts. */
export const JOB_STATES: readonly JobState[] = ["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "KILLED", "UNSCHEDULABLE"];

function parseJobState(v: string): JobState {
  const s = v.toUpperCase();
  if (!(JOB_STATES as readonly string[]).includes(s)) {
    throw new InvalidArgumentError(`expected one of ${JOB_STATES.join(", ")}, got "${v}"`);
  }
  return s as JobState;
}

const schedulingTimeoutOption = (what: string): Option =>
  new Option("--scheduling-timeout <seconds>", `with no worker registered, ${what} waits this long before it is UNSCHEDULABLE (0: forever; default 300)`).argParser((v: string) =>
    Number(v.trim()) === 0 && v.trim() !== "" ? 0 : parseSeconds(v),
  );

function clientArgsOf(opts: { controller?: string; token?: string; tlsCa?: string }): ClientArgs {
  if (!opts.controller) {
    throw new CommanderError(1, "iris.missingController", "error: --controller <address> is required (or set IRIS_CONTROLLER_ADDRESS)");
  }
  return { controller: opts.controller, token: opts.token || undefined, ...(opts.tlsCa ? { tlsCa: opts.tlsCa } : {}) };
}

/**
 * Builds the `iris` command tree over the given actions. The returned program is configured for
 * embedding: it throws `CommanderError` instead of exiting, and writes through `io`.
 */
export function buildProgram(actions: CliActions, io: CliIo, setExitCode: (code: number) => void, onController: (address: string) => void = () => {}): Command {
  const clientArgs = (opts: { controller?: string; token?: string; tlsCa?: string }): ClientArgs => {
    const a = clientArgsOf(opts);
    onController(a.controller);
    return a;
  };
  const program = new Command("iris")
    .description("iris: the marin-ts job runtime (controller, workers, jobs, endpoints)")
    .enablePositionalOptions()
    .showHelpAfterError("(add --help for usage)")
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  // Subcommands inherit exitOverride/configureOutput/showHelpAfterError when added this way.
  const run = (fn: () => Promise<number>): Promise<void> => fn().then(setExitCode);

  program
    .command("controller")
    .description("run a controller: serves the job API and the worker API on one gRPC port")
    .addOption(new Option("--port <port>", "port to listen on (0: any free port)").argParser(integerArg({ min: 0, max: 65535 })).default(7070))
    .option("--host <host>", "interface to bind (a non-loopback one needs --token or --auth-file, or --insecure)", "127.0.0.1")
    .requiredOption("--db <file>", "SQLite database file (a new one is created only when FILE does not exist)")
    .addOption(new Option("--token <token>", "shorthand for one admin identity (user admin)").env("IRIS_AUTH_TOKEN"))
    .option("--auth-file <file>", "identities: YAML tokens: [{ user, role: admin|user|worker, sha256 }] (reloaded on change)")
    .option("--insecure", "allow listening on a non-loopback address with auth off (logs a warning)", false)
    .option("--tls-cert <file>", "TLS certificate chain (PEM) for gRPC and HTTP; needs --tls-key")
    .option("--tls-key <file>", "TLS private key (PEM)")
    .addOption(new Option("--worker-timeout <seconds>", "a worker silent this long is lost (default 30)").argParser(parseSeconds))
    .addOption(schedulingTimeoutOption("a job that sets none"))
    .addOption(
      new Option("--http-port <port>", "also serve HTTP (API, /metrics, the endpoint proxy /proxy and /cap) on this port (0: any free port)").argParser(
        integerArg({ min: 0, max: 65535 }),
      ),
    )
    .option("--no-auth", "turn auth off (a warning is printed): any local process or user could run commands as you")
    .addOption(
      new Option("--proxy-port <port>", "the endpoint proxy's own port (/proxy, /cap: its own origin, apart from the dashboard's; default: any free port)").argParser(
        integerArg({ min: 0, max: 65535 }),
      ),
    )
    .addOption(
      new Option(
        "--bundle-keep <n>",
        "uploaded code bundles kept beyond those unfinished jobs run from, the most recently used; older ones are removed (0 = keep all; default 32)",
      ).argParser(integerArg({ min: 0 })),
    )
    .action(
      (o: {
        port: number;
        host: string;
        db: string;
        token?: string;
        authFile?: string;
        insecure: boolean;
        tlsCert?: string;
        tlsKey?: string;
        workerTimeout?: number;
        schedulingTimeout?: number;
        httpPort?: number;
        bundleKeep?: number;
        auth: boolean;
        proxyPort?: number;
      }) => {
        if ((o.tlsCert === undefined) !== (o.tlsKey === undefined)) {
          throw new CommanderError(1, "iris.tls", "error: --tls-cert and --tls-key go together");
        }
        return run(() =>
          actions.controller({
            port: o.port,
            host: o.host,
            dbPath: o.db,
            token: o.token || undefined,
            ...(o.authFile ? { authFile: o.authFile } : {}),
            ...(o.insecure ? { insecure: true } : {}),
            ...(o.tlsCert ? { tlsCert: o.tlsCert, tlsKey: o.tlsKey } : {}),
            workerTimeoutMs: o.workerTimeout,
            schedulingTimeoutMs: o.schedulingTimeout,
            ...(o.httpPort !== undefined ? { httpPort: o.httpPort } : {}),
            ...(o.bundleKeep !== undefined ? { bundleKeep: o.bundleKeep } : {}),
            ...(o.auth === false ? { noAuth: true } : {}),
            ...(o.proxyPort !== undefined ? { proxyPort: o.proxyPort } : {}),
          }),
        );
      },
    );

  const workerCommand = program
    .command("worker")
    .description("run a worker: registers with the controller and runs the attempts it is assigned")
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .addOption(new Option("--cpu <cores>", "CPU offered, in cores (0.5) or millicores (500m); default: all").argParser(parseCpu))
    .addOption(new Option("--memory <size>", "memory offered (2G, 512M, bytes); default: all").argParser(parseSize))
    .addOption(new Option("--attr <key=value>", "attribute for constraints (repeatable)").argParser(collectKeyValue))
    .option("--state-dir <dir>", "keeps the worker id and attempt records across restarts (default: a fresh directory under $IRIS_STATE_DIR or ~/.cache/iris/workers)")
    .option("--advertise-host <host>", "host tasks advertise to others (IRIS_ADVERTISE_HOST)")
    .option("-v, --verbose", "print worker events as JSON lines on stderr", false)
    .option("--worker-id <id>", "register under this id (default: kept in the state directory, else <hostname>-<random>)")
    .option("--credential-file <file>", "read the registration credential from this file (mode 0600; instead of --token, which shows in ps)")
    .option("--bundle-cache <dir>", "where code bundles are unpacked and built (default: $IRIS_BUNDLE_CACHE or ~/.cache/iris/bundles)")
    .addOption(
      new Option("--bundle-cache-keep <n>", "built bundles the cache keeps, the most recently used; older unused ones are removed (0 = keep all; default 8)").argParser(
        integerArg({ min: 0 }),
      ),
    )
    .option("--no-adopt", "with --state-dir: a restarted worker ends its previous run's attempts instead of adopting them")
    .addOption(new Option("--adopt-grace <seconds>", "how long attempts outlive a dead worker, waiting for it to restart (default 10)").argParser(parseSeconds))
    .addOption(new Option("--bundle-install-flag <flag>", "extra flag of the bundles' pnpm install, e.g. --ignore-scripts (repeatable)").argParser(collect((s: string) => s)))
    .option(
      "--preemptible",
      "the host can be taken back (a Slurm job): on SIGTERM, or on SIGUSR1 (the warning before a time limit), the worker hands its attempts back PREEMPTED and leaves",
      false,
    )
    .action(
      (o: {
        controller?: string;
        token?: string;
        cpu?: number;
        memory?: number;
        attr?: Record<string, string>;
        stateDir?: string;
        advertiseHost?: string;
        verbose: boolean;
        bundleCache?: string;
        bundleInstallFlag?: string[];
        bundleCacheKeep?: number;
        adopt: boolean;
        adoptGrace?: number;
        workerId?: string;
        credentialFile?: string;
        preemptible: boolean;
      }) =>
        run(() =>
          actions.worker({
            workerId: o.workerId,
            credentialFile: o.credentialFile,
            ...clientArgs(o),
            cpuMillis: o.cpu,
            memoryBytes: o.memory,
            attributes: o.attr ?? {},
            stateDir: o.stateDir,
            advertiseHost: o.advertiseHost,
            verbose: o.verbose,
            bundleCache: o.bundleCache,
            bundleInstallFlags: o.bundleInstallFlag,
            bundleCacheKeep: o.bundleCacheKeep,
            adopt: o.adopt,
            adoptGraceMs: o.adoptGrace,
            preemptible: o.preemptible,
          }),
        ),
    );
  workerCommand
    .command("drain")
    .description("stop placing work on a worker and move its tasks elsewhere (PREEMPTED); it deregisters once idle")
    .argument("<id>", "worker id (see iris workers)")
    .addOption(controllerOption())
    .addOption(tokenOption())
    .action((id: string, o: { controller?: string; token?: string }) => run(() => actions.workerDrain({ ...clientArgs(o), workerId: id })));

  const cluster = program.command("cluster").description("clusters: in one process, or grown and shrunk by an autoscaler");
  cluster
    .command("up")
    .description(
      "run a controller with the autoscaler of a cluster config (scale groups on local or Slurm workers) in the foreground; SIGINT/SIGTERM drains and stops the workers it started",
    )
    .requiredOption("--config <file>", "the cluster config (YAML; see the iris README, Running on Slurm)")
    .option("--keep-workers", "at shutdown leave the provided workers running: the next up on the same db adopts them", false)
    .action((o: { config: string; keepWorkers: boolean }) => run(() => actions.clusterUp({ configFile: o.config, keepWorkers: o.keepWorkers })));
  cluster
    .command("status")
    .description("the autoscaler's scale groups (min, max, pending, booting, ready, idle, draining, demand) and its last decisions")
    .option("--json", "print JSON", false)
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .action((o: { controller?: string; token?: string; json: boolean }) => run(() => actions.clusterStatus({ ...clientArgs(o), json: o.json })));
  cluster
    .command("down")
    .description("drain and stop every worker the autoscaler's providers started (admin)")
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .action((o: { controller?: string; token?: string }) => run(() => actions.clusterDown(clientArgs(o))));
  cluster
    .command("local")
    .description("run a controller and N workers in this process (real gRPC on loopback)")
    .addOption(new Option("--workers <n>", "number of workers").argParser(integerArg({ min: 1 })).default(2))
    .addOption(new Option("--port <port>", "controller port (0: any free port)").argParser(integerArg({ min: 0, max: 65535 })).default(7070))
    .addOption(tokenOption())
    .option("--db <file>", "SQLite database file (default: a temporary directory)")
    .addOption(new Option("--worker-cpu <cores>", "CPU per worker (default: the machine's cores split between the workers)").argParser(parseCpu))
    .addOption(new Option("--worker-memory <size>", "memory per worker (default: the machine's memory split between the workers)").argParser(parseSize))
    .addOption(schedulingTimeoutOption("a job that sets none"))
    .addOption(
      new Option(
        "--http-port <port>",
        "serve the web dashboard (and the HTTP API, /metrics) on this port (0: any free port); the URL, with a one-time login code, is printed",
      ).argParser(integerArg({ min: 0, max: 65535 })),
    )
    .option("--no-auth", "turn auth off (a warning is printed): any local process or user could run commands as you")
    .addOption(
      new Option("--proxy-port <port>", "the endpoint proxy's own port (/proxy, /cap: its own origin, apart from the dashboard's; default: any free port)").argParser(
        integerArg({ min: 0, max: 65535 }),
      ),
    )
    .action(
      (o: {
        workers: number;
        port: number;
        token?: string;
        db?: string;
        workerCpu?: number;
        workerMemory?: number;
        schedulingTimeout?: number;
        httpPort?: number;
        auth: boolean;
        proxyPort?: number;
      }) =>
        run(() =>
          actions.clusterLocal({
            workers: o.workers,
            port: o.port,
            token: o.token || undefined,
            dbPath: o.db,
            workerCpuMillis: o.workerCpu,
            workerMemoryBytes: o.workerMemory,
            schedulingTimeoutMs: o.schedulingTimeout,
            ...(o.httpPort !== undefined ? { httpPort: o.httpPort } : {}),
            ...(o.auth === false ? { noAuth: true } : {}),
            ...(o.proxyPort !== undefined ? { proxyPort: o.proxyPort } : {}),
          }),
        ),
    );

  const job = program.command("job").description("submit and inspect jobs").enablePositionalOptions();

  job
    .command("run")
    .description("submit a command (or a module's exported function) as a job, stream its output and exit with its outcome")
    .usage("[options] -- <command...>  |  [options] --module <file> [--export <name>] [--args <json>]")
    .argument("[command...]", "the program and its arguments (after --)")
    .passThroughOptions()
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .option("--name <name>", "job name: NAME (→ /<user>/NAME) or /user/name; default: generated")
    .addOption(new Option("--replicas <n>", "number of tasks").argParser(integerArg({ min: 1 })))
    .addOption(new Option("--cpu <cores>", "CPU per task, cores (0.5) or millicores (500m)").argParser(parseCpu))
    .addOption(new Option("--memory <size>", "memory per task (2G, 512M, bytes)").argParser(parseSize))
    .addOption(new Option("--max-retries <n>", "retries after failures, per task (default 0)").argParser(integerArg({ min: 0 })))
    .addOption(new Option("--max-preemptions <n>", "retries after preemption or worker loss (default 10)").argParser(integerArg({ min: 0 })))
    .option("--gang", "place all tasks together or none; a member's failure reruns them all")
    .addOption(new Option("--constraint <expr>", "zone=a, zone!=a, gpu, 'zone in a,b', rank>3, rank<3 (repeatable)").argParser(collect(parseConstraint)))
    .addOption(new Option("--env <key=value>", "environment variable for the tasks (repeatable)").argParser(collectKeyValue))
    .addOption(new Option("--port <name>", "named port to allocate, IRIS_PORT_<NAME> (repeatable)").argParser(collect((s: string) => s)))
    .addOption(new Option("--timeout <seconds>", "per-attempt timeout").argParser(parseSeconds))
    .addOption(new Option("--priority <n>", "scheduling priority (higher first)").argParser(integerArg()))
    .addOption(schedulingTimeoutOption("a task"))
    .option("--cwd <dir>", "working directory of the command on the worker")
    .option("--module <file>", "run an exported function of this module (path on the workers) instead of a command")
    .option("--export <name>", "the module's exported function (with --module)", "main")
    .addOption(new Option("--args <json>", "the function's argument, as JSON (with --module)").argParser(parseJson))
    .option("-d, --detach", "print the job name and return without waiting", false)
    .option("--bundle [root]", "ship the git-tracked files (of ROOT, default: this work tree) and the lockfile as a code bundle; --module and --cwd under it run from the bundle")
    .action(
      (
        command: string[],
        o: {
          controller?: string;
          token?: string;
          name?: string;
          replicas?: number;
          cpu?: number;
          memory?: number;
          maxRetries?: number;
          maxPreemptions?: number;
          gang?: boolean;
          constraint?: Constraint[];
          env?: Record<string, string>;
          port?: string[];
          timeout?: number;
          priority?: number;
          schedulingTimeout?: number;
          cwd?: string;
          module?: string;
          export: string;
          args?: unknown;
          detach: boolean;
          bundle?: true | string;
        },
        cmd: Command,
      ) => {
        if (o.module !== undefined && command.length > 0) cmd.error("error: give either a command or --module, not both");
        if (o.module === undefined && command.length === 0) cmd.error("error: missing required argument 'command' (or --module <file>)");
        const entrypoint: JobSpecInput["entrypoint"] =
          o.module !== undefined
            ? { module: path.resolve(o.module), export: o.export, ...(o.args !== undefined ? { args: o.args } : {}) }
            : { command, ...(o.cwd !== undefined ? { cwd: o.cwd } : {}) };
        const spec: JobSpecInput = { entrypoint };
        if (o.name !== undefined) spec.name = o.name;
        if (o.replicas !== undefined) spec.replicas = o.replicas;
        if (o.gang) spec.gang = true;
        if (o.cpu !== undefined || o.memory !== undefined) {
          spec.resources = {
            ...(o.cpu !== undefined ? { cpuMillis: o.cpu } : {}),
            ...(o.memory !== undefined ? { memoryBytes: o.memory } : {}),
          };
        }
        if (o.maxRetries !== undefined) spec.maxRetriesFailure = o.maxRetries;
        if (o.maxPreemptions !== undefined) spec.maxRetriesPreemption = o.maxPreemptions;
        if (o.constraint) spec.constraints = o.constraint;
        if (o.env) spec.env = o.env;
        if (o.port) spec.ports = o.port;
        if (o.timeout !== undefined) spec.timeoutMs = o.timeout;
        if (o.priority !== undefined) spec.priority = o.priority;
        if (o.schedulingTimeout !== undefined) spec.schedulingTimeoutMs = o.schedulingTimeout;
        return run(() => actions.jobRun({ ...clientArgs(o), spec, detach: o.detach, bundle: o.bundle }));
      },
    );

  job
    .command("list")
    .description("list jobs (latest submission of each name)")
    .option("--prefix <prefix>", "only names starting with this")
    .addOption(new Option("--state <state>", `only jobs in this state (${JOB_STATES.join(", ")})`).argParser(parseJobState))
    .option("--json", "print JSON", false)
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .action((o: { controller?: string; token?: string; prefix?: string; state?: JobState; json: boolean }) =>
      run(() => actions.jobList({ ...clientArgs(o), prefix: o.prefix, state: o.state, json: o.json })),
    );

  job
    .command("status")
    .description("show a job: its state on the first line, then its tasks")
    .argument("<name>", "NAME or /user/name")
    .option("--json", "print JSON", false)
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .action((name: string, o: { controller?: string; token?: string; json: boolean }) => run(() => actions.jobStatus({ ...clientArgs(o), name, json: o.json })));

  job
    .command("logs")
    .description("print a job's output; with -f, keep streaming until the job finishes")
    .argument("<name>", "NAME or /user/name")
    .option("-f, --follow", "stream new lines until the job finishes", false)
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .action((name: string, o: { controller?: string; token?: string; follow: boolean }) => run(() => actions.jobLogs({ ...clientArgs(o), name, follow: o.follow })));

  job
    .command("kill")
    .description("terminate a job and, recursively, its child jobs")
    .argument("<name>", "NAME or /user/name")
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .action((name: string, o: { controller?: string; token?: string }) => run(() => actions.jobKill({ ...clientArgs(o), name, json: false })));

  program
    .command("endpoints")
    .description("list registered endpoints")
    .argument("[prefix]", "only names starting with this")
    .option("--json", "print JSON", false)
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .action((prefix: string | undefined, o: { controller?: string; token?: string; json: boolean }) => run(() => actions.endpoints({ ...clientArgs(o), prefix, json: o.json })));

  const endpoint = program.command("endpoint").description("one registered endpoint");
  endpoint
    .command("token")
    .description("mint a time-limited capability URL for an endpoint (only its owner may): reach the service through the controller's HTTP proxy without the cluster token")
    .argument("<name>", "endpoint name (full, /user/job/name)")
    .addOption(new Option("--ttl <seconds>", "lifetime in seconds (default 3600; clamped to 60..86400)").argParser(parseSeconds))
    .option("--json", "print JSON", false)
    .addOption(controllerOption())
    .addOption(tokenOption())
    .action((name: string, o: { controller?: string; token?: string; ttl?: number; json: boolean }) =>
      run(() => actions.endpointToken({ ...clientArgs(o), name, ttlSeconds: o.ttl === undefined ? undefined : o.ttl / 1000, json: o.json })),
    );

  program
    .command("workers")
    .description("list the workers registered with the controller")
    .option("--json", "print JSON", false)
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .action((o: { controller?: string; token?: string; json: boolean }) => run(() => actions.workers({ ...clientArgs(o), json: o.json })));

  program
    .command("status")
    .description("a summary of the cluster: workers, cores and memory used and free, jobs by state, pending tasks and why")
    .option("--json", "print JSON", false)
    .addOption(controllerOption())
    .addOption(tlsCaOption())
    .addOption(tokenOption())
    .action((o: { controller?: string; token?: string; json: boolean }) => run(() => actions.status({ ...clientArgs(o), json: o.json })));

  program
    .command("db")
    .description("controller databases")
    .command("backup")
    .description("copy a controller database with SQLite's online backup (safe while the controller runs)")
    .requiredOption("--db <file>", "the controller's SQLite database file (must exist)")
    .requiredOption("--out <file>", "where to write the copy (must not exist)")
    .action((o: { db: string; out: string }) => run(() => actions.dbBackup({ dbPath: o.db, out: o.out })));

  return program;
}

/**
 * Runs the CLI once over `argv` (user arguments only, without `node` and the script) and
 * resolves to the exit code. Usage errors exit 1 with commander's message; an `IrisError`
 * prints `CODE: message` (`UNAUTHENTICATED: …`) and exits 1.
 */
export async function runCli(argv: readonly string[], actions: CliActions, io: CliIo): Promise<number> {
  let exitCode = 0;
  let reached: string | undefined;
  const program = buildProgram(
    actions,
    io,
    (c) => (exitCode = c),
    (address) => (reached = address),
  );
  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (e) {
    if (e instanceof CommanderError) {
      // Help and version are "errors" with exit code 0; commander already printed them, except
      // our own missing-controller error, which it has not seen.
      if (e.code === "iris.missingController") io.err(`${e.message}\n`);
      return e.exitCode;
    }
    if (e instanceof IrisError) {
      const unreachable = unreachableMessage(e, reached);
      io.err(unreachable ?? `${e.code}: ${e.message}\n`);
      return 1;
    }
    io.err(`error: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}

/**
 * What to print when an RPC failed because nothing answers at the controller's address (refused,
 * unknown host, timed out connecting), instead of gRPC's text; undefined for any other error.
 */
export function unreachableMessage(e: IrisError, address: string | undefined): string | undefined {
  if (e.code !== "UNAVAILABLE" || address === undefined) return undefined;
  const m = e.message;
  // A TLS failure (untrusted certificate, TLS on one side only) is printed as it is: its message
  // says what to do (--tls-ca / IRIS_TLS_CA).
  if (/certificate|SSL|TLS|handshake/i.test(m)) return undefined;
  const why = /ECONNREFUSED/.test(m)
    ? "connection refused"
    : /ENOTFOUND|EAI_AGAIN|DNS resolution failed|Name resolution failed/i.test(m)
      ? "host not found"
      : /ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|No connection established/i.test(m)
        ? "no connection"
        : undefined;
  if (why === undefined) return undefined;
  return `cannot reach the iris controller at ${address} (${why}) — is it running? start one with: iris cluster local\n`;
}
