#!/usr/bin/env node
// pnpm levanter: train, evaluate, sample, serve, and make token caches from text files.
import { Command, InvalidArgumentError } from "commander";
import { realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { LevanterError } from "../errors.ts";
import { generate } from "../generate.ts";
import { serveCommand } from "../serve/serveCommand.ts";
import { evaluateCheckpoint, tokenizerNamed } from "../trainer/evaluate.ts";
import { loadTrainLmConfig } from "../trainer/configFile.ts";
import { pauseAfterStepHook } from "../trainer/pauseAfterStep.ts";
import { trainLm } from "../trainer/trainLm.ts";
import { encodeDocument } from "../data/tokenizer.ts";
import { finalizeTokenCache, writeTokenCacheShard } from "../sharding/tokenCacheWriter.ts";

function int(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError("expected an integer");
  return n;
}

function num(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n)) throw new InvalidArgumentError("expected a number");
  return n;
}

/** Builds the `levanter` command-line program (exported for tests). */
export function buildProgram(): Command {
  const program = new Command("levanter")
    .description("Train, evaluate and sample decoder-only language models on TensorFlow.js")
    .showHelpAfterError();

  program
    .command("train")
    .description("train a model from a YAML/JSON config; extra --a.b=c flags override config fields")
    .requiredOption("--config <file>", "YAML or JSON config with model, data, optimizer, trainer sections")
    .argument("[overrides...]", "config overrides, e.g. --trainer.numTrainSteps=100")
    .allowUnknownOption()
    .action(async (overrides: string[], opts: { config: string }) => {
      const config = loadTrainLmConfig(opts.config, overrides);
      // Test-only fault injection (LEVANTER_PAUSE_AFTER_STEP): stop at an exact step.
      const pause = pauseAfterStepHook();
      const result = await trainLm(config, pause ? { hooks: [pause] } : {});
      process.stdout.write(`${JSON.stringify({ step: result.step, finalLoss: result.finalLoss, eval: result.eval, checkpoint: result.checkpoint, stoppedEarly: result.stoppedEarly })}\n`);
      // Stopped by SIGTERM after saving: exit as a terminated process would.
      if (result.stoppedEarly) process.exitCode = 143;
    });

  program
    .command("eval")
    .description("loss and bits per byte of a checkpoint on a token cache")
    .requiredOption("--checkpoint <dir>", "a step-N checkpoint, or a directory of them (newest is used)")
    .requiredOption("--data <cache>", "token cache directory")
    .option("--tokenizer <tokenizer.json>", "HF tokenizer for non-byte caches")
    .option("--batch-size <n>", "sequences per batch", int, 16)
    .option("--max-batches <n>", "evaluate at most this many batches", int)
    .action(async (opts: { checkpoint: string; data: string; tokenizer?: string; batchSize: number; maxBatches?: number }) => {
      const r = await evaluateCheckpoint({
        checkpoint: opts.checkpoint,
        data: opts.data,
        batchSize: opts.batchSize,
        ...(opts.tokenizer ? { tokenizerJson: opts.tokenizer } : {}),
        ...(opts.maxBatches ? { maxBatches: opts.maxBatches } : {}),
      });
      process.stdout.write(`${JSON.stringify({ "eval/loss": r.loss, "eval/bpb": r.bpb, tokens: r.tokens, step: r.step, checkpoint: r.checkpoint })}\n`);
    });

  program
    .command("generate")
    .description("sample a continuation of a prompt from a checkpoint")
    .requiredOption("--checkpoint <dir>", "a step-N checkpoint, or a directory of them (newest is used)")
    .requiredOption("--prompt <text>", "text to continue")
    .option("--max-tokens <n>", "tokens to sample", int, 64)
    .option("--temperature <t>", "0 = greedy", num, 1)
    .option("--top-k <k>", "sample among the k likeliest tokens", int)
    .option("--seed <n>", "sampling seed", int, 0)
    .option("--tokenizer <tokenizer.json>", "HF tokenizer for non-byte checkpoints")
    .action(async (opts: { checkpoint: string; prompt: string; maxTokens: number; temperature: number; topK?: number; seed: number; tokenizer?: string }) => {
      const r = await generate({
        checkpoint: opts.checkpoint,
        prompt: opts.prompt,
        maxTokens: opts.maxTokens,
        temperature: opts.temperature,
        seed: opts.seed,
        ...(opts.topK ? { topK: opts.topK } : {}),
        ...(opts.tokenizer ? { tokenizerJson: opts.tokenizer } : {}),
      });
      process.stdout.write(`${opts.prompt}${r.text}\n`);
    });

  program
    .command("serve")
    .description("serve a checkpoint over an OpenAI-compatible HTTP API until Ctrl-C")
    .requiredOption("--checkpoint <dir>", "a step-N checkpoint, or a directory of them (newest is used)")
    .option("--host <host>", "address to bind", "127.0.0.1")
    .option("--port <port>", "port to bind (0: any free one)", int, 8000)
    .option("--tokenizer <tokenizer.json>", "HF tokenizer for non-byte checkpoints")
    .option("--max-batch <n>", "sequences decoded together", int, 32)
    .option("--max-queue <n>", "requests waiting for a slot before 429", int, 256)
    .option("--kv-budget-mb <n>", "KV cache memory budget (MiB)", int, 512)
    .action(serveCommand);

  program
    .command("tokenize")
    .description("write text files (one document each) as a token cache")
    .requiredOption("--out <dir>", "token cache directory to create")
    .option("--tokenizer <spec>", `"byte" or a HF tokenizer.json`, "byte")
    .argument("<files...>", "text files, one document each")
    .action(async (files: string[], opts: { out: string; tokenizer: string }) => {
      const tokenizer = await tokenizerNamed(opts.tokenizer === "byte" ? "byte" : "hf", opts.tokenizer === "byte" ? undefined : opts.tokenizer);
      const docs = async function* () {
        for (const f of files) yield encodeDocument(tokenizer, await readFile(f, "utf8"));
      };
      await writeTokenCacheShard(opts.out, 0, docs(), { tokenizer: tokenizer.name, vocabSize: tokenizer.vocabSize });
      const ledger = await finalizeTokenCache(opts.out);
      process.stdout.write(`${JSON.stringify({ cache: opts.out, tokens: ledger.totalTokens, documents: ledger.totalDocuments, tokenizer: ledger.tokenizer })}\n`);
    });

  return program;
}

/** Runs the CLI; expected failures print one line and exit 1 (2 for a bad config). */
export async function main(argv: string[] = process.argv): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (e) {
    if (e instanceof LevanterError) {
      process.stderr.write(`levanter: ${e.message}\n`);
      process.exit(e.code === "INVALID_CONFIG" ? 2 : 1);
    }
    throw e;
  }
}

// Run when this file is the program (also through a bin symlink: node_modules/.bin/levanter).
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await main();
