// `levanter serve`: runs the inference server for a checkpoint until SIGINT/SIGTERM.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { LevanterError } from "../errors.ts";
import { importHf } from "../checkpoint/hfCheckpoint.ts";
import { createInferenceServer } from "./server.ts";

/** Options of {@link serveCommand} (the CLI's flags). */
export interface ServeCommandOptions {
  checkpoint?: string;
  /** A Hugging Face folder to serve as it is (imported into a temporary checkpoint first). */
  hf?: string;
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
  if ((opts.checkpoint === undefined) === (opts.hf === undefined)) throw new LevanterError("INVALID_CONFIG", "serve: give exactly one of --checkpoint or --hf");
  let scratch: string | undefined;
  let checkpoint = opts.checkpoint!;
  if (opts.hf !== undefined) {
    // The folder as it is: imported into a scratch checkpoint that goes when the server stops.
    scratch = await mkdtemp(path.join(os.tmpdir(), "levanter-serve-hf-"));
    try {
      checkpoint = (await importHf(opts.hf, scratch)).checkpoint;
    } catch (e) {
      await rm(scratch, { recursive: true, force: true });
      throw e;
    }
  }
  try {
    await serveCheckpoint({ ...opts, checkpoint }, opts.hf ?? checkpoint);
  } finally {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
}

async function serveCheckpoint(opts: ServeCommandOptions & { checkpoint: string }, shownAs: string): Promise<void> {
  const server = await createInferenceServer({
    checkpoint: opts.checkpoint,
    ...(opts.hf ? { modelId: path.basename(path.resolve(opts.hf)) } : {}),
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
  process.stdout.write(`levanter serve: listening on ${server.url} (loading ${shownAs})\n`);
  try {
    await server.ready;
  } catch (e) {
    await server.close();
    throw e instanceof LevanterError ? e : new LevanterError("CHECKPOINT_CORRUPT", `${shownAs}: ${(e as Error).message}`, { cause: e });
  }
  const engine = server.engine()!;
  process.stdout.write(`levanter serve: ready at ${server.url}/v1 (model ${engine.modelId}, context ${engine.maxContext}, decode ${engine.decodePath})\n`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  await server.close();
  process.stdout.write(`levanter serve: stopped (${signal})\n`);
}
