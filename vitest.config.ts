import os from "node:os";
import path from "node:path";
import { defineConfig } from "vitest/config";
import WaitingFirstSequencer from "./test/setup/sequencer.ts";
import projects from "./vitest.workspace.ts";

// vitest.workspace.ts is the source of truth for the projects; this file hands it to Vitest 4 and
// adds what every project shares (`extends: true` there): tests run the packages' TypeScript
// source, never their built dist/, through the `@marin/source` export condition, both in the test
// process (Vite's resolver) and in every process a test starts (NODE_OPTIONS, inherited).
const CONDITION = "@marin/source";
// Vite's own server defaults (`defaultServerConditions`; vite is not a direct dependency here).
const SERVER_CONDITIONS = ["module", "node", "development|production"];
const nodeOptions = process.env.NODE_OPTIONS ?? "";
// Controllers that tests start without credentials mint a token and record it in the per-user
// credentials file: tests (and the processes they start) use a file of their own, never ~/.config.
process.env.IRIS_CREDENTIALS_FILE ??= path.join(os.tmpdir(), `iris-test-credentials-${process.pid}`, "credentials.json");
if (!nodeOptions.includes(`--conditions=${CONDITION}`)) process.env.NODE_OPTIONS = `--conditions=${CONDITION} ${nodeOptions}`.trim();

export default defineConfig({
  resolve: { conditions: [CONDITION, ...SERVER_CONDITIONS] },
  ssr: { resolve: { conditions: [CONDITION, ...SERVER_CONDITIONS], externalConditions: [CONDITION] } },
  test: {
    projects,
    passWithNoTests: true,
    // Vitest's order, with the end-to-end files that mostly wait first in the unit group (test/setup/sequencer.ts).
    sequence: { sequencer: WaitingFirstSequencer },
  },
});
