#!/usr/bin/env node
// The `iris` command: `pnpm iris …` from the repository root, or the package's bin.
import { realActions } from "./actions.ts";
import { runCli, type CliIo } from "./program.ts";

const io: CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

const code = await runCli(process.argv.slice(2), realActions(io), io);
// Daemons have stopped their servers and workers by now; only flushing output remains.
process.exitCode = code;
