#!/usr/bin/env node
// The `marin` command of the installed package: its built JavaScript (dist/, made at install or pack).
import "../dist/cli/main.js";
