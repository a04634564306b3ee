#!/usr/bin/env node
// The `iris` command of the installed package: its built JavaScript (dist/, made at install or pack).
import "../dist/cli/main.js";
