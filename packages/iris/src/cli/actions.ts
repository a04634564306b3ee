// The real actions behind the `iris` commands: daemons (controller, worker, local cluster) that run
// until SIGINT/SIGTERM, and client commands over IrisClient.
//
// Components load on first use: every command pays for grpc-js and zod, but only `iris controller`
// and `iris cluster local` for SQLite and the controller, and `--help` for none of it.
import type { IrisClient, Job } from "../client/irisClient.ts";
import { isTerminalJobState } from "../jobSpec.ts";
import { clusterSummary, formatClusterSummary, formatEndpoints, formatWorkers, formatJobList, formatJobStatus, formatLogLine, jobExitCode } from "./output.ts";
import type { ClientArgs, CliActions, CliIo } from "./program.ts";

/** Resolves at the first SIGINT or SIGTERM; a second one exits at once (130). */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const first = (sig: NodeJS.Signals): void => {
      process.off("SIGINT", first);
      process.off("SIGTERM", first);
      process.once("SIGINT", () => process.exit(130));
      process.once("SIGTERM", () => process.exit(143));
      resolve(sig);
    };
    process.on("SIGINT", first);
    process.on("SIGTERM", first);
  });
}

async function withClient<T>(a: ClientArgs, fn: (client: IrisClient) => Promise<T>): Promise<T> {
  const { IrisClient } = await import("../client/irisClient.ts");
  const client = IrisClient.connect(a.controller, { token: a.token, tlsCa: a.tlsCa });
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

/**
 * While a submitted job has pending tasks, prints why (the scheduler's reason) on stderr each time
 * it changes, so that `iris job run` of a job that cannot be placed does not sit silent. Polls
 * GetJob once a second (a progress display) until no task is pending.
 */
function reportPending(job: Job, io: CliIo): { stop(): void } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let last = "";
  const poll = async (): Promise<void> => {
    const st = await job.status().catch(() => undefined);
    if (stopped) return;
    if (st) {
      const waiting = st.tasks.filter((t) => t.state === "PENDING" && t.pendingReason);
      const text = waiting.length > 0 ? `${waiting.length} of ${st.tasks.length} tasks pending: ${waiting[0].pendingReason}` : "";
      if (text !== "" && text !== last) io.err(`iris: ${text}\n`);
      last = text;
      if (!st.tasks.some((t) => t.state === "PENDING")) return;
    }
    timer = setTimeout(() => void poll(), 1000);
  };
  void poll();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** How many tasks of each live job `iris status` reads to list pending ones and their reasons. */
const STATUS_TASKS_PER_JOB = 100;
/** How long `iris cluster local` waits for its workers to register before giving up. */
const LOCAL_BOOT_TIMEOUT_MS = 2 * 60_000;

/** The actions that start real components; `io` receives everything printed. */
export function realActions(io: CliIo): CliActions {
  return {
    async controller(a) {
      const { Controller, bindRefusal } = await import("../controller/controller.ts");
      const given = Boolean(a.token) || Boolean(a.authFile);
      if (a.noAuth && given) {
        io.err("iris controller: --no-auth turns auth off: give it without --token or --auth-file\n");
        return 2;
      }
      // Safe by default: a non-loopback bind with auth off refuses to start (exit 2); a loopback
      // one without credentials mints its own admin token.
      const refusal = bindRefusal(a.host, given, a.insecure === true);
      if (refusal !== undefined) {
        io.err(`iris controller: ${refusal}\n`);
        return 2;
      }
      const fs = await import("node:fs");
      const controller = await Controller.start({
        port: a.port,
        host: a.host,
        dbPath: a.dbPath,
        token: a.token,
        ...(a.authFile ? { authFile: a.authFile } : {}),
        ...(a.insecure ? { insecure: true } : {}),
        ...(a.tlsCert && a.tlsKey ? { tls: { cert: fs.readFileSync(a.tlsCert), key: fs.readFileSync(a.tlsKey) } } : {}),
        log: (line) => io.err(`${line}\n`),
        ...(a.workerTimeoutMs !== undefined ? { workerTimeoutMs: a.workerTimeoutMs } : {}),
        ...(a.schedulingTimeoutMs !== undefined ? { schedulingTimeoutMs: a.schedulingTimeoutMs } : {}),
        ...(a.httpPort !== undefined ? { httpPort: a.httpPort } : {}),
        ...(a.bundleKeep !== undefined ? { bundleKeep: a.bundleKeep } : {}),
        ...(a.noAuth ? { noAuth: true } : {}),
        ...(a.proxyPort !== undefined ? { proxyPort: a.proxyPort } : {}),
      });
      const all = a.host === "0.0.0.0" || a.host === "::";
      io.out(
        `iris controller listening on ${all ? `${a.host}:${controller.port}` : controller.address}${all ? ` (all interfaces; dial ${controller.address} here)` : ""} ` +
          `(db ${a.dbPath}, auth ${controller.auth.enabled ? "on" : "off"}, tls ${a.tlsCert ? "on" : "off"})\n`,
      );
      io.out(`  ${controller.authNotice()}\n`);
      if (controller.httpAddress)
        io.out(
          `iris controller HTTP (API, /metrics, /proxy) on ${controller.httpOrigin}; endpoint proxy (/proxy, /cap) on ${controller.proxyOrigin}\n  dashboard: ${controller.loginUrl()}\n`,
        );
      await untilSignal();
      await controller.stop();
      return 0;
    },

    async dbBackup(a) {
      const { backupDb } = await import("../controller/db.ts");
      const { bytes } = await backupDb(a.dbPath, a.out);
      io.out(`iris: backed up ${a.dbPath} to ${a.out} (${bytes} bytes)\n`);
      return 0;
    },

    async worker(a) {
      const { Worker } = await import("../worker/worker.ts");
      let token = a.token;
      if (a.credentialFile !== undefined) {
        const fs = await import("node:fs");
        const st = fs.statSync(a.credentialFile);
        if ((st.mode & 0o077) !== 0) {
          io.err(`iris worker: ${a.credentialFile} is readable by others (mode ${(st.mode & 0o777).toString(8)}): chmod 600 it\n`);
          return 2;
        }
        token = fs.readFileSync(a.credentialFile, "utf8").trim() || undefined;
      }
      const worker = await Worker.start({
        controller: a.controller,
        ...(token ? { token } : {}),
        ...(a.workerId ? { workerId: a.workerId } : {}),
        ...(a.preemptible === true ? { preemptible: true } : {}),
        ...(a.tlsCa ? { tlsCa: a.tlsCa } : {}),
        ...(a.cpuMillis !== undefined ? { cpuMillis: a.cpuMillis } : {}),
        ...(a.memoryBytes !== undefined ? { memoryBytes: a.memoryBytes } : {}),
        attributes: a.attributes,
        ...(a.stateDir !== undefined ? { stateDir: a.stateDir } : {}),
        ...(a.advertiseHost !== undefined ? { advertiseHost: a.advertiseHost } : {}),
        ...(a.verbose ? { onEvent: (e) => io.err(`${JSON.stringify(e)}\n`) } : {}),
        ...(a.bundleCache !== undefined ? { bundleCacheDir: a.bundleCache } : {}),
        ...(a.bundleInstallFlags !== undefined ? { bundleInstallFlags: a.bundleInstallFlags } : {}),
        ...(a.bundleCacheKeep !== undefined ? { bundleCacheKeep: a.bundleCacheKeep } : {}),
        ...(a.adopt === false ? { adoptAttempts: false } : {}),
        ...(a.adoptGraceMs !== undefined ? { adoptGraceMs: a.adoptGraceMs } : {}),
      });
      io.out(`iris worker ${worker.id} started (controller ${a.controller}, state ${worker.stateDir})\n`);
      let stopping = false;
      void worker.registered.then(() => {
        if (!stopping) io.out(`iris worker ${worker.id} registered\n`);
      });
      // A refused token stops the worker by itself: `worker.done` rejects with the IrisError, which
      // `run` prints as `UNAUTHENTICATED: …` with exit code 1.
      // A preemptible worker (a Slurm job) hands its attempts back PREEMPTED when its host goes:
      // SIGUSR1 is Slurm's warning before the time limit (--signal), SIGTERM a cancel or the limit.
      let signalled: Promise<void>;
      if (a.preemptible === true) {
        signalled = new Promise<void>((resolve) => {
          const onSignal = (sig: NodeJS.Signals): void => {
            process.off("SIGUSR1", onSignal);
            process.off("SIGTERM", onSignal);
            process.off("SIGINT", onSignal);
            process.once("SIGINT", () => process.exit(130));
            const why = sig === "SIGUSR1" ? "the time limit is near (SIGUSR1)" : `its host is being taken back (${sig})`;
            io.err(`iris worker ${worker.id} draining: ${why}\n`);
            resolve(worker.stop(sig === "SIGINT" ? {} : { preempted: `${process.env.SLURM_JOB_ID ? `slurm job ${process.env.SLURM_JOB_ID}: ` : ""}${why}` }));
          };
          process.on("SIGUSR1", onSignal);
          process.on("SIGTERM", onSignal);
          process.on("SIGINT", onSignal);
        });
      } else signalled = untilSignal().then(() => worker.stop());
      await Promise.race([signalled, worker.done]);
      stopping = true;
      await worker.stop();
      await worker.done;
      return 0;
    },

    async clusterLocal(a) {
      // A local scale group with min = max = N under the autoscaler (as `iris cluster up` runs
      // one), so `iris cluster status` shows it; ready once all N workers have registered.
      const { startCluster } = await import("../autoscaler/clusterUp.ts");
      const { localWorkerCapacity } = await import("../localCluster.ts");
      const share = localWorkerCapacity(a.workers);
      const cluster = await startCluster(
        {
          controller: {
            host: "127.0.0.1",
            port: a.port,
            db: a.dbPath,
            token: a.token || undefined,
            insecure: false,
            noAuth: a.noAuth === true,
            httpPort: a.httpPort,
            proxyPort: a.proxyPort,
            schedulingTimeoutMs: a.schedulingTimeoutMs,
          },
          scaleGroups: [
            {
              name: "local",
              provider: "local",
              minWorkers: a.workers,
              maxWorkers: a.workers,
              idleTimeoutMs: 5 * 60_000,
              bootTimeoutMs: LOCAL_BOOT_TIMEOUT_MS,
              priority: 0,
              worker: { cpuMillis: a.workerCpuMillis ?? share.cpuMillis, memoryBytes: a.workerMemoryBytes ?? share.memoryBytes, devices: {}, attributes: {} },
            },
          ],
        },
        { log: (l) => io.err(`${l}\n`) },
      );
      const registered = (): number => cluster.controller.state.queries.listWorkers().length;
      // Registering is not one of the controller's change events (those follow assignments): poll.
      const deadline = Date.now() + LOCAL_BOOT_TIMEOUT_MS;
      while (registered() < a.workers && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const up = registered() >= a.workers;
      if (!up) {
        io.err(`iris cluster local: only ${registered()} of ${a.workers} workers registered within ${LOCAL_BOOT_TIMEOUT_MS / 1000} s\n`);
        await cluster.stop();
        return 1;
      }
      const address = cluster.controller.address;
      io.out(
        `iris local cluster listening on ${address} with ${a.workers} worker${a.workers === 1 ? "" : "s"}\n` +
          `  export IRIS_CONTROLLER_ADDRESS=${address}\n` +
          `  ${cluster.controller.authNotice()}\n` +
          (cluster.controller.httpAddress ? `  dashboard: ${cluster.controller.loginUrl()}\n  endpoint proxy: ${cluster.controller.proxyOrigin}\n` : ""),
      );
      await untilSignal();
      await cluster.stop();
      return 0;
    },

    async clusterUp(a) {
      const { runClusterUp } = await import("../autoscaler/clusterUp.ts");
      return runClusterUp(a, io, untilSignal);
    },

    clusterStatus: (a) =>
      withClient(a, async (client) => {
        const status = await client.clusterStatus();
        const { formatClusterStatus } = await import("../autoscaler/statusText.ts");
        io.out(a.json ? `${JSON.stringify(status, null, 2)}\n` : formatClusterStatus(status as Parameters<typeof formatClusterStatus>[0]));
        return 0;
      }),

    clusterDown: (a) =>
      withClient(a, async (client) => {
        const n = await client.clusterDown();
        io.out(`iris cluster down: drained and stopped ${n} worker${n === 1 ? "" : "s"}\n`);
        return 0;
      }),

    jobRun: (a) =>
      withClient(a, async (client) => {
        const job = await client.submit(a.spec, a.bundle === undefined ? {} : { bundle: a.bundle });
        io.out(`${job.name}\n`);
        if (a.detach) return 0;
        // Ctrl-C stops the job, like stopping a foreground command; the stream then ends with it.
        const onInterrupt = (): void => {
          io.err(`terminating ${job.name}\n`);
          process.once("SIGINT", () => process.exit(130));
          void job.terminate().catch((e: unknown) => io.err(`${String(e)}\n`));
        };
        process.once("SIGINT", onInterrupt);
        const pending = reportPending(job, io);
        try {
          const multi = (a.spec.replicas ?? 1) > 1;
          for await (const e of job.logs({ follow: true })) {
            (e.stream === "stderr" ? io.err : io.out)(formatLogLine(e, multi));
          }
          const st = await job.wait();
          if (st.state !== "SUCCEEDED") io.err(`${job.name} ${st.state}${st.error ? `: ${st.error}` : ""}\n`);
          return jobExitCode(st);
        } finally {
          pending.stop();
          process.off("SIGINT", onInterrupt);
        }
      }),

    jobList: (a) =>
      withClient(a, async (client) => {
        const all = await client.list(a.prefix !== undefined ? { prefix: a.prefix } : {});
        // Filtered here: ListJobs has no state filter on the wire (yet).
        const jobs = a.state !== undefined ? all.filter((j) => j.state === a.state) : all;
        io.out(a.json ? `${JSON.stringify(jobs, null, 2)}\n` : jobs.length === 0 && a.state !== undefined ? `no ${a.state} jobs\n` : formatJobList(jobs));
        return 0;
      }),

    jobStatus: (a) =>
      withClient(a, async (client) => {
        const st = await client.job(a.name).status();
        io.out(a.json ? `${JSON.stringify(st, null, 2)}\n` : formatJobStatus(st));
        return 0;
      }),

    jobLogs: (a) =>
      withClient(a, async (client) => {
        const job = client.job(a.name);
        const st = await job.status(); // NOT_FOUND before streaming, and the task count for prefixes
        const multi = st.tasks.length > 1;
        for await (const e of job.logs({ follow: a.follow })) {
          (e.stream === "stderr" ? io.err : io.out)(formatLogLine(e, multi));
        }
        return 0;
      }),

    jobKill: (a) =>
      withClient(a, async (client) => {
        const job = client.job(a.name);
        const before = await job.status();
        if (isTerminalJobState(before.state)) {
          io.out(`${job.name} had already ended (${before.state}); nothing to kill\n`);
          return 0;
        }
        await job.terminate();
        io.out(`terminated ${job.name}\n`);
        return 0;
      }),

    endpoints: (a) =>
      withClient(a, async (client) => {
        const endpoints = await client.listEndpoints(a.prefix ?? "");
        io.out(a.json ? `${JSON.stringify(endpoints, null, 2)}\n` : formatEndpoints(endpoints));
        return 0;
      }),

    endpointToken: (a) =>
      withClient(a, async (client) => {
        const cap = await client.mintEndpointToken(a.name, a.ttlSeconds !== undefined ? { ttlSeconds: a.ttlSeconds } : {});
        io.out(a.json ? `${JSON.stringify(cap, null, 2)}\n` : `${cap.url}\n(endpoint ${cap.name}, expires ${new Date(cap.expiresAtMs).toISOString()})\n`);
        return 0;
      }),

    workerDrain: (a) =>
      withClient(a, async (client) => {
        const preempted = await client.drainWorker(a.workerId);
        io.out(`worker ${a.workerId} is draining: ${preempted} attempt${preempted === 1 ? "" : "s"} preempted; it deregisters once idle\n`);
        return 0;
      }),

    workers: (a) =>
      withClient(a, async (client) => {
        const workers = await client.listWorkers();
        io.out(a.json ? `${JSON.stringify(workers, null, 2)}\n` : formatWorkers(workers));
        return 0;
      }),

    status: (a) =>
      withClient(a, async (client) => {
        const [workers, summaries] = await Promise.all([client.listWorkers(), client.list()]);
        // ListJobs gives counts, not tasks: read the first pending tasks of the live jobs that have some.
        const jobs = await Promise.all(
          summaries.map((j) =>
            (j.state === "PENDING" || j.state === "RUNNING") && (j.taskCounts?.PENDING ?? 0) > 0 ? client.job(j.name).status({ firstTasks: STATUS_TASKS_PER_JOB }) : j,
          ),
        );
        const summary = clusterSummary(workers, jobs);
        io.out(a.json ? `${JSON.stringify(summary, null, 2)}\n` : formatClusterSummary(summary));
        return 0;
      }),
  };
}
