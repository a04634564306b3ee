#!/usr/bin/env node
// The `levanter` command of the installed package: its built JavaScript (dist/, made at install or pack).
import { main } from "../dist/cli/main.js";

await main();
