// The command line a provider runs for one worker: `iris worker` of THIS iris installation (the
// controller's; clusters share a filesystem), with the group's shape, the id it must register
// with and the file holding its credential. Nothing secret is in it.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sourceNode } from "../process/sourceLoader.ts";
import type { ProviderStartRequest } from "./provider.ts";

const HERE = path.dirname(fileURLToPath(import.meta.url));

/**
 * `[node, …args]` that runs the `iris` CLI of this installation: from source (`src/cli/main.ts`
 * under the source loader) when this module runs from source, else the built `bin/iris.mjs`.
 */
export function irisCommand(): string[] {
  if (import.meta.url.endsWith(".ts")) {
    return [...sourceNode(), path.join(HERE, "..", "cli", "main.ts")];
  }
  return [process.execPath, path.join(HERE, "..", "..", "bin", "iris.mjs")];
}

/** The argv of `iris worker` for one provided worker (see provider.ts for the contract). */
export function workerCommandLine(req: ProviderStartRequest, extra: { stateDir?: string } = {}): string[] {
  const w = req.group.worker;
  const args = [
    ...irisCommand(),
    "worker",
    "--controller",
    req.controllerAddress,
    "--worker-id",
    req.workerId,
    "--credential-file",
    req.credentialFile,
    "--cpu",
    `${w.cpuMillis}m`,
    "--memory",
    String(w.memoryBytes),
  ];
  for (const [k, v] of Object.entries(workerAttributes(req))) args.push("--attr", `${k}=${v}`);
  if (extra.stateDir !== undefined) args.push("--state-dir", extra.stateDir);
  return args;
}

/** The attributes a provided worker registers with: the group's, plus `iris.group`. */
export function workerAttributes(req: Pick<ProviderStartRequest, "group">): Record<string, string> {
  return { ...req.group.worker.attributes, "iris.group": req.group.name };
}
