#!/usr/bin/env node
// `pnpm marin …`: the marin command line (see program.ts).
import { runCli } from "./program.ts";

process.exitCode = await runCli(process.argv.slice(2));
