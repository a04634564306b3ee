// `levanter serve`: runs the inference server for a checkpoint until SIGINT/SIGTERM.
import { LevanterError } from "../errors.ts";
import { createInferenceServer } from "./server.ts";

/** Options of {@link serveCommand} (the CLI's flags). */
export interface ServeCommandOptions {
  checkpoint: string;
  host: string;
  port: number;
  tokenizer?: string;
  maxBatch?: number;
  maxQueue?: number;
  kvBudgetMb?: number;
  maxBodyMb?: number;
  maxPromptBytes?: number;
  maxSequencesPerRequest?: number;
  maxSequencesPerClient?: number;
}

/**
 * Binds the port, prints `levanter serve: listening on URL`, loads the checkpoint, prints
 * `levanter serve: ready …` and serves until SIGINT or SIGTERM, then closes cleanly (exit 0).
 * A checkpoint that fails to load throws its {@link LevanterError}.
 */
export async function serveCommand(opts: ServeCommandOptions): Promise<void> {
  const server = await createInferenceServer({
    checkpoint: opts.checkpoint,
    host: opts.host,
    port: opts.port,
    ...(opts.tokenizer ? { tokenizerJson: opts.tokenizer } : {}),
    ...(opts.maxBodyMb !== undefined ? { maxBodyBytes: opts.maxBodyMb * 2 ** 20 } : {}),
    ...(opts.maxPromptBytes !== undefined ? { maxPromptBytes: opts.maxPromptBytes } : {}),
    ...(opts.maxSequencesPerRequest !== undefined ? { maxSequencesPerRequest: opts.maxSequencesPerRequest } : {}),
    ...(opts.maxSequencesPerClient !== undefined ? { maxSequencesPerClient: opts.maxSequencesPerClient } : {}),
    engineOptions: {
      ...(opts.maxBatch ? { maxBatch: opts.maxBatch } : {}),
      ...(opts.maxQueue !== undefined ? { maxQueue: opts.maxQueue } : {}),
      ...(opts.kvBudgetMb ? { kvBudgetBytes: opts.kvBudgetMb * 2 ** 20 } : {}),
    },
  });
  process.stdout.write(`levanter serve: listening on ${server.url} (loading ${opts.checkpoint})\n`);
  try {
    await server.ready;
  } catch (e) {
    await server.close();
    throw e instanceof LevanterError ? e : new LevanterError("CHECKPOINT_CORRUPT", `${opts.checkpoint}: ${(e as Error).message}`, { cause: e });
  }
  const engine = server.engine()!;
  process.stdout.write(`levanter serve: ready at ${server.url}/v1 (model ${engine.modelId}, context ${engine.maxContext})\n`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  await server.close();
  process.stdout.write(`levanter serve: stopped (${signal})\n`);
}
