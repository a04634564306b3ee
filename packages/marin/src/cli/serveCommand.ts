// `marin serve <script> <step>`: serves a step's newest checkpoint (remoteInference) on the
// embedded cluster or `--cluster`, prints the URLs and a curl example, and stops on Ctrl-C.
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { IrisClient } from "@marin/iris/client";
import type { LocalCluster } from "@marin/iris";
import { MarinError } from "../errors.ts";
import { remoteInference } from "../service/remoteInference.ts";
import type { StepGraph } from "../step/graph.ts";

/** Options of {@link serveStep}. */
export interface ServeStepOptions {
  graph: StepGraph;
  step: string;
  /** Controller address; none → an embedded LocalCluster (with its HTTP face on `httpPort`). */
  cluster: string | undefined;
  replicas: number;
  /** The embedded controller's HTTP port (proxy and capability URLs; default any free port). */
  httpPort: number;
  /** Capability URL lifetime (seconds). */
  ttlSeconds: number | undefined;
  startupTimeoutMs: number | undefined;
  out: (line: string) => void;
  /** Resolves when the command should stop (default: the first SIGINT or SIGTERM). */
  until?: Promise<unknown>;
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const first = (sig: NodeJS.Signals): void => {
      process.off("SIGINT", first);
      process.off("SIGTERM", first);
      // A second Ctrl-C while stopping: leave at once.
      process.once("SIGINT", () => process.exit(130));
      resolve(sig);
    };
    process.on("SIGINT", first);
    process.on("SIGTERM", first);
  });
}

/** Where a step keeps its checkpoints: `<output>/checkpoints` (trainLmStep), else the output itself. */
export function checkpointsOf(graph: StepGraph, stepName: string): string {
  const step = graph.byName.get(stepName);
  if (!step) {
    const names = [...graph.byName.keys()].sort();
    throw new MarinError("NOT_FOUND", `no step named ${JSON.stringify(stepName)} in this experiment (steps: ${names.join(", ")})`);
  }
  const dir = path.join(step.outputPath, "checkpoints");
  if (existsSync(dir)) return dir;
  if (existsSync(step.outputPath)) return step.outputPath;
  throw new MarinError("NOT_FOUND", `step ${stepName} has no output at ${step.outputPath}: run it first (marin run <script> --only ${stepName})`);
}

/** Serves until stopped; resolves with the exit code (0 after a clean stop). */
export async function serveStep(opts: ServeStepOptions): Promise<number> {
  const checkpoint = checkpointsOf(opts.graph, opts.step);
  const { findLatestCheckpoint, readCheckpointMetadata } = await import("@marin/levanter");
  if ((await readCheckpointMetadata(checkpoint)) === undefined && !(await findLatestCheckpoint(checkpoint))) {
    throw new MarinError("NOT_FOUND", `${checkpoint}: no complete checkpoint (step-N folder with metadata.json) of step ${opts.step}`);
  }
  const until = opts.until ?? untilSignal();
  let cluster: LocalCluster | undefined;
  let client: IrisClient;
  if (opts.cluster) {
    client = IrisClient.connect(opts.cluster, { token: process.env.IRIS_AUTH_TOKEN });
  } else {
    const { LocalCluster } = await import("@marin/iris"); // only here: see remote/irisLauncher.ts
    cluster = await LocalCluster.start({ workers: 1, httpPort: opts.httpPort, workerCpuMillis: os.availableParallelism() * 1000, workerMemoryBytes: os.totalmem() });
    client = cluster.client;
  }
  try {
    const name = opts.step.replace(/[^A-Za-z0-9._-]+/g, ".").replace(/^[^A-Za-z0-9]+/, "") || "model";
    const session = await remoteInference({
      checkpoint,
      client,
      name,
      replicas: opts.replicas,
      ...(opts.startupTimeoutMs !== undefined ? { startupTimeoutMs: opts.startupTimeoutMs } : {}),
      log: (l) => opts.out(`marin serve: ${l}`),
    });
    try {
      opts.out(`serving ${opts.step} (${checkpoint}) as model "${session.model}"`);
      opts.out(`endpoint: ${session.endpoint}`);
      opts.out(`url: ${session.baseUrl}`);
      let base = session.baseUrl;
      try {
        const cap = await client.mintEndpointToken(session.endpoint, opts.ttlSeconds !== undefined ? { ttlSeconds: opts.ttlSeconds } : {});
        base = `${cap.url}/v1`;
        opts.out(`capability url: ${base} (expires ${new Date(cap.expiresAtMs).toISOString()})`);
      } catch (e) {
        opts.out(`capability url: none (${e instanceof Error ? e.message : String(e)})`);
      }
      const body = JSON.stringify({ model: session.model, prompt: "The jury said", max_tokens: 32, temperature: 0.8 });
      opts.out(`try: curl -s ${base}/completions -H 'content-type: application/json' -d '${body}'`);
      opts.out("Ctrl-C stops the server.");
      const ended = session.job.wait().then((st) => st);
      const first = await Promise.race([until.then(() => "stop" as const), ended]);
      if (first !== "stop") {
        opts.out(`marin serve: the server job ended ${first.state}${first.error ? `: ${first.error}` : ""}`);
        return 1;
      }
      opts.out("marin serve: stopping");
      return 0;
    } finally {
      await session.close();
    }
  } finally {
    if (cluster) await cluster.stop();
    else client.close();
  }
}
