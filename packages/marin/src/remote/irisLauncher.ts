// The launcher that runs steps with resources as iris jobs and follows them to their end.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { IrisClient, IrisError } from "@marin/iris/client";
import type { Job, JobStatus, UploadedBundle } from "@marin/iris/client";
import type { LocalCluster } from "@marin/iris";
import { ownExtension } from "@marin/iris/loader";
import { MarinError } from "../errors.ts";
import type { LaunchArgs, StepLauncher } from "../executor/runner.ts";
import type { ResolvedStep } from "../step/graph.ts";
import { plannedIdentity } from "./stepIdentity.ts";
import type { StepTaskArgs } from "./stepTask.ts";

/** Where and how iris-run steps are launched. */
export interface IrisLauncherOptions {
  /** The experiment script (absolute): the task re-imports it to rebuild the step graph. */
  script: string;
  prefix: string;
  /** Controller address; none → an embedded LocalCluster for the run. */
  cluster: string | undefined;
  /** Folder for the embedded cluster's database (inside `<prefix>/.marin/`); none: a temporary one. */
  stateDir: string | undefined;
  /**
   * Ship the script's git work tree (tracked files and lockfile) as an iris code bundle, so that
   * workers on other machines run the same code. Default: on with `cluster` when the script is in
   * a git work tree (else a notice on stderr), off for the embedded local cluster (its worker
   * shares this checkout).
   */
  bundle?: boolean;
  /** The embedded cluster also serves its HTTP face (the dashboard) on this port (0: any free one). */
  httpPort?: number;
}

/** How long to keep draining an ended job's log stream before giving up on its last lines. */
const LOG_DRAIN_DEADLINE_MS = 15_000;

const STEP_TASK_MODULE = fileURLToPath(new URL(`./stepTask${ownExtension(import.meta.url)}`, import.meta.url));

function jobNameFor(step: ResolvedStep, token: number): string {
  return `marin-${step.id.replace(/\//g, ".")}-t${token}`;
}

/**
 * Runs steps as iris jobs: the task's entrypoint is marin's step task with the experiment script,
 * the step's name and identity as args; the task re-imports the script, rebuilds the graph,
 * checks the identity and runs that one step into the staging folder; the step's return value
 * comes back as the iris task's result. The lease, publish and status stay with this (parent) runner.
 */
export async function createIrisLauncher(opts: IrisLauncherOptions): Promise<StepLauncher & { dashboardUrl?: string; loginUrl?: string; token?: string }> {
  let cluster: LocalCluster | undefined;
  let client: IrisClient;
  if (opts.cluster) {
    client = IrisClient.connect(opts.cluster, { token: process.env.IRIS_AUTH_TOKEN });
  } else {
    if (opts.stateDir) await fs.mkdir(opts.stateDir, { recursive: true });
    // Imported here: the controller and worker cost a step task, which only reaches a cluster, 0.2 CPU-s at start.
    const { LocalCluster } = await import("@marin/iris");
    cluster = await LocalCluster.start({
      workers: 1,
      ...(opts.stateDir ? { dbPath: path.join(opts.stateDir, "iris.sqlite") } : {}),
      workerCpuMillis: os.cpus().length * 1000,
      workerMemoryBytes: os.totalmem(),
      ...(opts.httpPort !== undefined ? { httpPort: opts.httpPort } : {}),
    });
    client = cluster.client;
  }
  // In a bundle the script is named by its path inside it (the task runs at the bundle's root).
  let uploaded: UploadedBundle | undefined;
  if (opts.bundle === true || (opts.bundle === undefined && opts.cluster)) {
    try {
      uploaded = await client.uploadBundle(path.dirname(opts.script));
    } catch (e) {
      // On by default only where there is a work tree to ship.
      if (opts.bundle === true || !(e instanceof IrisError) || e.code !== "FAILED_PRECONDITION") throw e;
      process.stderr.write(`marin: ${e.message}; steps run without a code bundle (workers need the script at ${opts.script})\n`);
    }
  }
  const script = uploaded ? path.relative(uploaded.root, opts.script) : opts.script;
  const httpAddress = cluster?.controller.httpAddress;
  const loginUrl = cluster?.controller.loginUrl();
  return {
    ...(httpAddress ? { dashboardUrl: `http://${httpAddress}/` } : {}),
    // The embedded cluster's printed URL signs the browser in once (a one-time login code).
    ...(httpAddress && loginUrl ? { loginUrl } : {}),
    ...(cluster?.token ? { token: cluster.token } : {}),
    async run(step: ResolvedStep, args: LaunchArgs): Promise<unknown> {
      const taskArgs: StepTaskArgs = { script, step: step.name, planned: plannedIdentity(step), prefix: opts.prefix, staging: args.stagingPath };
      const res = step.step.resources ?? {};
      const job: Job = await client.submit(
        {
          name: jobNameFor(step, args.token),
          entrypoint: { module: STEP_TASK_MODULE, export: "runStepTask", args: taskArgs },
          resources: {
            ...(res.cpuMillis !== undefined ? { cpuMillis: res.cpuMillis } : {}),
            ...(res.memoryBytes !== undefined ? { memoryBytes: res.memoryBytes } : {}),
            ...(res.devices ? { devices: res.devices } : {}),
          },
          maxRetriesFailure: 0,
          // The task rebuilds the graph from the script: settings it reads from the environment must match.
          env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => /^(MARIN|LEVANTER|ZEPHYR)_/.test(e[0]) && e[1] !== undefined)),
        },
        uploaded ? { bundle: uploaded.root } : {},
      );
      args.log(`submitted iris job ${job.name}`);
      const onAbort = () => void job.terminate().catch(() => undefined);
      args.signal.addEventListener("abort", onAbort, { once: true });
      const tail: string[] = [];
      let stopFollowing = false;
      const follow = (async () => {
        try {
          for await (const e of job.logs({ follow: true })) {
            if (stopFollowing) break;
            const line = `[${e.stream}] ${e.line}`;
            args.log(line);
            tail.push(line);
            if (tail.length > 30) tail.shift();
          }
        } catch {
          // Logs are best effort; the job's state decides.
        }
      })();
      let status: JobStatus;
      try {
        // Each status the watch delivers carries the task's latest status report (training progress).
        let lastText = "";
        status = await job.wait({
          onStatus: (st) => {
            const text = st.tasks.map((t) => t.statusText).find(Boolean) ?? "";
            if (text && text !== lastText) args.progress((lastText = text));
          },
        });
      } finally {
        args.signal.removeEventListener("abort", onAbort);
      }
      // The follow stream ends once the controller has every line of the ended job: drain it, so the
      // failure message and the log file are complete, but never wait on it forever.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([follow, new Promise<void>((r) => (timer = setTimeout(r, LOG_DRAIN_DEADLINE_MS)))]);
      clearTimeout(timer);
      stopFollowing = true;
      if (status.state !== "SUCCEEDED") {
        // An APP_ERROR (a non-retryable MarinError in the task) reads `APP_ERROR(<code>): <message>`.
        const why = status.error ?? status.tasks.map((t) => t.error ?? t.pendingReason).find(Boolean) ?? "";
        throw new MarinError("STEP_FAILED", `iris job ${job.name} ended ${status.state}${why ? `: ${why}` : ""}${tail.length ? `\n${tail.join("\n")}` : ""}`);
      }
      // The step task's return value: iris recorded it with the attempt.
      const [result] = await job.results();
      return result;
    },
    async close(): Promise<void> {
      if (cluster) await cluster.stop();
      else client.close();
    },
  };
}
