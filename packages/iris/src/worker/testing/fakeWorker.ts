// Test fixture: plays the part of a worker that starts one attempt through the task runner, then
// idles. It prints `{"runner": <pid>}` and then every line of the attempt as JSON, so that a test
// can SIGKILL this process and check that the attempt does not outlive it.
// Usage: node --import <SOURCE_LOADER> fakeWorker.ts '<entrypoint JSON>' <orphanGraceMs> <scratch dir>
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AttemptProcess } from "../attemptProcess.ts";
import { runnerArgv, type RunnerSpec } from "../../runner/runnerSpec.ts";

// The test owns (and removes) the scratch directory: this process is meant to be SIGKILLed.
const dir = fs.mkdtempSync(path.join(process.argv[4] ?? os.tmpdir(), "fake-worker-"));
const spec: RunnerSpec = {
  entrypoint: JSON.parse(process.argv[2]) as RunnerSpec["entrypoint"],
  parentPid: process.pid,
  orphanGraceMs: Number(process.argv[3] ?? 2000),
  parentPollMs: 200,
};
const specPath = path.join(dir, "runner.json");
fs.writeFileSync(specPath, JSON.stringify(spec));
const env: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
const proc = AttemptProcess.spawn({
  argv: runnerArgv(spec.entrypoint, specPath),
  env,
  ipc: true,
  onLine: (line) => console.log(JSON.stringify(line)),
});
console.log(JSON.stringify({ runner: proc.pid }));
void proc.exited.then((outcome) => {
  console.log(JSON.stringify({ outcome }));
  process.exit(0);
});
