#!/usr/bin/env node
// pnpm levanter: train, evaluate, sample, serve, and make token caches from text files.
import { Command, InvalidArgumentError, Option } from "commander";
import { appendFileSync, mkdirSync, realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { integerArg } from "@marin/iris/toolkit";
import { LevanterError } from "../errors.ts";
import { setLogSink } from "../internal/log.ts";
import type { ServeCommandOptions } from "../serve/serveCommand.ts";
import type { ProgressMode } from "../trainer/progress.ts";
// Each command loads what it runs when it runs (tfjs, the trainer, the server…), so that
// `levanter --help` and a mistyped flag answer at once.

/** File under `trainer.runDir` that receives the JSON log lines in human output mode. */
export const LOG_FILE = "log.jsonl";

const int = integerArg();

function num(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n)) throw new InvalidArgumentError("expected a number");
  return n;
}

// eval and generate print their result; their structured log lines (backend choice, …) would be
// noise: warnings and errors are printed as text, the rest dropped (LEVANTER_LOG=silent: nothing).
async function withTextWarnings<T>(fn: () => Promise<T>): Promise<T> {
  const { TrainProgress } = await import("../trainer/progress.ts");
  const text = new TrainProgress(process.stderr, "none");
  const previous = setLogSink((record) => {
    if (record.level === "warn" || record.level === "error") text.logRecord(record);
  });
  try {
    return await fn();
  } finally {
    setLogSink(previous);
  }
}

/** Builds the `levanter` command-line program (exported for tests). */
export function buildProgram(): Command {
  const program = new Command("levanter").description("Train, evaluate and sample decoder-only language models on TensorFlow.js").showHelpAfterError();

  program
    .command("train")
    .description("train a model from a YAML/JSON config; extra --a.b=c flags override config fields")
    .requiredOption("--config <file>", "YAML or JSON config with model, data, optimizer, trainer sections")
    .addOption(
      new Option(
        "--log-format <format>",
        `human: progress on stderr, a summary line on stdout, JSON log lines in <runDir>/${LOG_FILE}; json: JSON log lines on stderr, a JSON result on stdout`,
      )
        .choices(["human", "json"])
        .default("human"),
    )
    .addOption(
      new Option("--progress <mode>", "human output's progress: a bar on a TTY and a line per tenth of the run elsewhere (auto), or bar, lines, none")
        .choices(["auto", "bar", "lines", "none"])
        .default("auto"),
    )
    .option("--ranks <n>", "train data parallel on n ranks: an iris gang on an embedded local cluster (or on --cluster); same bits for any n", int)
    .option("--cluster <address>", "with --ranks: submit the gang to this iris controller (token from IRIS_AUTH_TOKEN) instead of an embedded local cluster")
    .option("--require-checkpoint", "fail unless the run resumes from a checkpoint, and on a checkpoint whose metadata.json is damaged (= --trainer.requireCheckpoint=true)")
    .argument("[overrides...]", "config overrides, e.g. --trainer.numTrainSteps=100")
    .allowUnknownOption()
    .action(
      async (
        overrides: string[],
        opts: { config: string; logFormat: "human" | "json"; progress: "auto" | ProgressMode; requireCheckpoint?: boolean; ranks?: number; cluster?: string },
      ) => {
        const { loadTrainLmConfig } = await import("../trainer/configFile.ts");
        const config = loadTrainLmConfig(opts.config, [...overrides, ...(opts.requireCheckpoint ? ["--trainer.requireCheckpoint=true"] : [])]);
        if (opts.ranks !== undefined || opts.cluster !== undefined) {
          const ranks = opts.ranks ?? 1;
          if (ranks < 1) throw new LevanterError("INVALID_CONFIG", `--ranks: expected a positive integer, got ${ranks}`);
          const token = process.env.IRIS_AUTH_TOKEN;
          const { runTrainGang } = await import("../trainer/gangJob.ts");
          // Rank 0's progress lines (as iris gets them) on stderr, beside every rank's log lines.
          const statusSink = async (text: string) => void process.stderr.write(`${text}\n`);
          const r = await runTrainGang(config, ranks, {
            logOut: process.stderr,
            statusSink,
            ...(opts.cluster !== undefined ? { cluster: opts.cluster } : {}),
            ...(token ? { token } : {}),
          });
          process.stdout.write(`${JSON.stringify(r)}\n`);
          if (r.state !== "SUCCEEDED") process.exitCode = 1;
          return;
        }
        const [{ trainLm }, { pauseAfterStepHook }, { TrainProgress }] = await Promise.all([
          import("../trainer/trainLm.ts"),
          import("../trainer/pauseAfterStep.ts"),
          import("../trainer/progress.ts"),
        ]);
        // Test-only fault injection (LEVANTER_PAUSE_AFTER_STEP): stop at an exact step.
        const pause = pauseAfterStepHook();
        if (opts.logFormat === "json") {
          const result = await trainLm(config, pause ? { hooks: [pause] } : {});
          process.stdout.write(
            `${JSON.stringify({ step: result.step, finalLoss: result.finalLoss, eval: result.eval, checkpoint: result.checkpoint, stoppedEarly: result.stoppedEarly })}\n`,
          );
          // Stopped by SIGTERM after saving: exit as a terminated process would.
          if (result.stoppedEarly) process.exitCode = 143;
          return;
        }
        // Human output: the CLI draws progress itself (the `console` tracker turns it on), warnings
        // are printed as text, and every JSON log line goes to <runDir>/log.jsonl.
        const { runDir, trackers } = config.trainer;
        const mode: ProgressMode = !trackers.includes("console") ? "none" : opts.progress === "auto" ? (process.stderr.isTTY ? "bar" : "lines") : opts.progress;
        config.trainer.trackers = trackers.filter((t) => t !== "console");
        const logFile = path.join(runDir, LOG_FILE);
        const progress = new TrainProgress(process.stderr, mode);
        let logDirMade = false;
        const previous = setLogSink((record, line) => {
          if (!logDirMade) mkdirSync(runDir, { recursive: true });
          logDirMade = true;
          appendFileSync(logFile, `${line}\n`);
          if (record.level === "warn" || record.level === "error") progress.logRecord(record);
        });
        try {
          if (mode !== "none") progress.line(`levanter: training in ${runDir} · log ${logFile}`);
          const result = await trainLm(config, { hooks: [...(pause ? [pause] : []), progress.hook] });
          progress.end();
          process.stdout.write(`${progress.summary(result, config.trainer.numTrainSteps, logFile)}\n`);
          if (result.stoppedEarly) process.exitCode = 143;
        } finally {
          progress.end();
          setLogSink(previous);
        }
      },
    );

  program
    .command("eval")
    .description("loss and bits per byte of a checkpoint on a token cache")
    .requiredOption("--checkpoint <dir>", "a step-N checkpoint, or a directory of them (newest is used)")
    .requiredOption("--data <cache>", "token cache directory")
    .option("--tokenizer <tokenizer.json>", "HF tokenizer for non-byte caches")
    .option("--batch-size <n>", "sequences per batch", int, 16)
    .option("--max-batches <n>", "evaluate at most this many batches", int)
    .action(async (opts: { checkpoint: string; data: string; tokenizer?: string; batchSize: number; maxBatches?: number }) => {
      const { evaluateCheckpoint } = await import("../trainer/evaluate.ts");
      const r = await withTextWarnings(() =>
        evaluateCheckpoint({
          checkpoint: opts.checkpoint,
          data: opts.data,
          batchSize: opts.batchSize,
          ...(opts.tokenizer ? { tokenizerJson: opts.tokenizer } : {}),
          ...(opts.maxBatches ? { maxBatches: opts.maxBatches } : {}),
        }),
      );
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
      const { generate } = await import("../generate.ts");
      const r = await withTextWarnings(() =>
        generate({
          checkpoint: opts.checkpoint,
          prompt: opts.prompt,
          maxTokens: opts.maxTokens,
          temperature: opts.temperature,
          seed: opts.seed,
          ...(opts.topK ? { topK: opts.topK } : {}),
          ...(opts.tokenizer ? { tokenizerJson: opts.tokenizer } : {}),
        }),
      );
      process.stdout.write(`${opts.prompt}${r.text}\n`);
    });

  program
    .command("serve")
    .description("serve a checkpoint over an OpenAI-compatible HTTP API until Ctrl-C")
    .option("--checkpoint <dir>", "a step-N checkpoint, or a directory of them (newest is used)")
    .option("--hf <dir>", "serve a Hugging Face folder (config.json, safetensors, tokenizer) as it is, instead of --checkpoint")
    .option("--host <host>", "address to bind", "127.0.0.1")
    .option("--port <port>", "port to bind (0: any free one)", int, 8000)
    .option("--tokenizer <tokenizer.json>", "HF tokenizer for non-byte checkpoints")
    .option("--max-batch <n>", "sequences decoded together", int, 32)
    .option("--max-queue <n>", "requests waiting for a slot before 429", int, 256)
    .option("--kv-budget-mb <n>", "KV cache memory budget (MiB)", int, 512)
    .option("--max-body-mb <n>", "largest request body (MiB); larger is 413", int, 16)
    .option("--max-prompt-bytes <n>", "largest prompt in UTF-8 bytes, checked before tokenizing (default: 32 per token of context, at least 64 KiB)", int)
    .option("--max-sequences-per-request <n>", "prompts × n of one request at most", int, 128)
    .option("--max-sequences-per-client <n>", "sequences one client address may have queued or running (default: half of --max-queue)", int)
    .action(async (opts: ServeCommandOptions) => (await import("../serve/serveCommand.ts")).serveCommand(opts));

  const importCmd = program.command("import").description("bring a model from another format in as a levanter checkpoint");
  importCmd
    .command("hf")
    .description("a Hugging Face folder (LlamaForCausalLM, GPT2LMHeadModel; safetensors; tokenizer.json) → a checkpoint that carries its tokenizer")
    .argument("<dir>", "folder with config.json, model.safetensors (or model.safetensors.index.json and its shards), tokenizer.json, tokenizer_config.json")
    .requiredOption("--out <dir>", "checkpoint directory to write (the model lands in <dir>/step-0)")
    .option("--seq-len <n>", "training window / longest context (default: the config's max_position_embeddings or n_positions)", int)
    .action(async (dir: string, opts: { out: string; seqLen?: number }) => {
      const { importHf } = await import("../checkpoint/hfCheckpoint.ts");
      const r = await importHf(dir, opts.out, opts.seqLen !== undefined ? { seqLen: opts.seqLen } : {});
      process.stdout.write(`${JSON.stringify(r)}\n`);
    });

  const exportCmd = program.command("export").description("write a checkpoint's model in another format");
  exportCmd
    .command("hf")
    .description("a checkpoint → a Hugging Face folder (config.json, safetensors, tokenizer.json, tokenizer_config.json, generation_config.json)")
    .requiredOption("--checkpoint <dir>", "a step-N checkpoint, or a directory of them (newest is used)")
    .requiredOption("--out <dir>", "folder to write")
    .addOption(new Option("--dtype <dtype>", "weights' dtype").choices(["float32", "bfloat16"]).default("float32"))
    .option("--max-shard-size <size>", "largest safetensors file before the weights are sharded with an index", "2GB")
    .option("--tokenizer <tokenizer.json>", "HF tokenizer for a checkpoint that names one it does not carry")
    .action(async (opts: { checkpoint: string; out: string; dtype: "float32" | "bfloat16"; maxShardSize: string; tokenizer?: string }) => {
      const { exportHf, parseByteSize } = await import("../checkpoint/hfCheckpoint.ts");
      const r = await exportHf(opts.checkpoint, opts.out, {
        dtype: opts.dtype,
        maxShardBytes: parseByteSize(opts.maxShardSize),
        ...(opts.tokenizer ? { tokenizerJson: opts.tokenizer } : {}),
      });
      process.stdout.write(`${JSON.stringify(r)}\n`);
    });

  exportCmd
    .command("gguf")
    .description("a Llama-shaped checkpoint → one GGUF v3 file (architecture llama, tokenizer in its metadata) for llama.cpp")
    .requiredOption("--checkpoint <dir>", "a step-N checkpoint, or a directory of them (newest is used)")
    .requiredOption("--out <file>", "the .gguf file to write")
    .addOption(new Option("--type <type>", "weights' type (norm scales stay f32)").choices(["f32", "f16", "q8_0"]).default("f32"))
    .option("--tokenizer <tokenizer.json>", "HF tokenizer for a checkpoint that names one it does not carry")
    .action(async (opts: { checkpoint: string; out: string; type: "f32" | "f16" | "q8_0"; tokenizer?: string }) => {
      const { exportGguf } = await import("../checkpoint/ggufExport.ts");
      const r = await exportGguf(opts.checkpoint, opts.out, { type: opts.type, ...(opts.tokenizer ? { tokenizerJson: opts.tokenizer } : {}) });
      process.stdout.write(`${JSON.stringify(r)}\n`);
    });

  program
    .command("tokenize")
    .description("write text files (one document each) as a token cache")
    .requiredOption("--out <dir>", "token cache directory to create")
    .option("--tokenizer <spec>", `"byte" or a HF tokenizer.json`, "byte")
    .option("--strip-word-tags", "the files are word/TAG tokens (the Brown Corpus): keep the words, as prose")
    .argument("<files...>", "text files, one document each")
    .action(async (files: string[], opts: { out: string; tokenizer: string; stripWordTags?: boolean }) => {
      const [{ tokenizerNamed }, { encodeDocument }, { finalizeTokenCache, writeTokenCacheShard }, { stripWordTags }] = await Promise.all([
        import("../data/tokenizerLookup.ts"),
        import("../data/tokenizer.ts"),
        import("../sharding/tokenCacheWriter.ts"),
        import("@marin/iris/toolkit"),
      ]);
      const tokenizer = await tokenizerNamed(opts.tokenizer === "byte" ? "byte" : "hf", opts.tokenizer === "byte" ? undefined : opts.tokenizer);
      const docs = async function* () {
        for (const f of files) {
          const text = await readFile(f, "utf8");
          yield encodeDocument(tokenizer, opts.stripWordTags ? stripWordTags(text) : text);
        }
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

// Run when this file is the program (from source; the installed bin, bin/levanter.mjs, calls main()).
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) await main();
