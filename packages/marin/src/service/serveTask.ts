// The iris task entry of one inference replica: binds the job's `http` port, registers the
// endpoint `serve/<name>` at once (status "loading"), loads the checkpoint with levanter's server,
// re-registers with the model's context (status "ready"), and serves until the task is killed.
import { irisCtx } from "@marin/iris/client";
import { formatZodIssues } from "@marin/iris/toolkit";
import { z } from "@marin/iris/toolkit";
import { MarinError } from "../errors.ts";

/** The port name remoteInference requests for each replica. */
export const SERVE_PORT = "http";

/** What remoteInference passes to each replica's task. */
export interface ServeReplicaArgs {
  checkpoint: string;
  /** The endpoint is `serve/<name>`; the model id `/v1/models` reports. */
  name: string;
  replicas: number;
  tokenizerJson?: string | undefined;
  maxBatch?: number | undefined;
  maxQueue?: number | undefined;
  kvBudgetMb?: number | undefined;
}

const argsSchema = z.object({
  checkpoint: z.string().min(1),
  name: z.string().min(1),
  replicas: z.number().int().positive(),
  tokenizerJson: z.string().optional(),
  maxBatch: z.number().int().positive().optional(),
  maxQueue: z.number().int().nonnegative().optional(),
  kvBudgetMb: z.number().positive().optional(),
});

/** The endpoint name of a served model (relative: under the root job). */
export function serveEndpointName(name: string): string {
  return `serve/${name}`;
}

/**
 * Runs one replica until SIGTERM (iris's kill), then closes the server and returns. A checkpoint
 * that cannot be loaded throws (the task fails and remoteInference reports its error).
 */
export async function serveReplica(rawArgs: unknown): Promise<{ stopped: string }> {
  const parsed = argsSchema.safeParse(rawArgs);
  if (!parsed.success) throw new MarinError("INVALID_CONFIG", `marin serve task: bad args: ${formatZodIssues(parsed.error)}`);
  const args = parsed.data;
  const ctx = irisCtx();
  const port = ctx.getPort(SERVE_PORT);
  const host = ctx.advertiseHost;
  const stopped = new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  const { createInferenceServer } = await import("@marin/levanter/serve");
  // Bound before the model loads: the endpoint is reachable (and `/health` says "loading") at once.
  const server = await createInferenceServer({
    checkpoint: args.checkpoint,
    host,
    port,
    modelId: args.name,
    ...(args.tokenizerJson ? { tokenizerJson: args.tokenizerJson } : {}),
    engineOptions: {
      ...(args.maxBatch ? { maxBatch: args.maxBatch } : {}),
      ...(args.maxQueue !== undefined ? { maxQueue: args.maxQueue } : {}),
      ...(args.kvBudgetMb ? { kvBudgetBytes: args.kvBudgetMb * 2 ** 20 } : {}),
    },
  });
  const address = `${host}:${server.port}`;
  const metadata = (extra: Record<string, string>): Record<string, string> => ({
    model: args.name,
    kind: "openai",
    checkpoint: args.checkpoint,
    replicas: String(args.replicas),
    replica: String(ctx.taskIndex),
    ...extra,
  });
  await ctx.registry.register(serveEndpointName(args.name), address, metadata({ status: "loading" }));
  console.log(`marin serve: ${args.name} replica ${ctx.taskIndex} listening on http://${address} (loading ${args.checkpoint})`);
  try {
    await server.ready;
  } catch (e) {
    await server.close();
    throw e;
  }
  const engine = server.engine()!;
  await ctx.registry.register(serveEndpointName(args.name), address, metadata({ status: "ready", max_context: String(engine.maxContext) }));
  console.log(`marin serve: ${args.name} replica ${ctx.taskIndex} ready (context ${engine.maxContext})`);
  const signal = await stopped;
  await server.close();
  return { stopped: signal };
}
