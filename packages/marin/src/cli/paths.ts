// Where command-line paths resolve: the folder the user ran the command from (pnpm's INIT_CWD at the workspace root).
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The pnpm workspace root this package lives in (the folder holding `pnpm-workspace.yaml`), if any. */
function findWorkspaceRoot(): string | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, "pnpm-workspace.yaml"))) return dir;
    const up = path.dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

const workspaceRoot = findWorkspaceRoot();

/**
 * The folder relative command-line paths resolve against: where the user ran the command. `pnpm`
 * runs the workspace root's scripts (`pnpm marin …`) from the root and records the caller's folder
 * in INIT_CWD; only then is INIT_CWD used. Any other npm-script context (a script of some package
 * that runs marin from its own folder, say) keeps the process's cwd.
 */
export function invocationDir(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd(), root: string | undefined = workspaceRoot): string {
  const atRoot = root !== undefined && path.resolve(cwd) === path.resolve(root);
  if (env.npm_lifecycle_event && env.INIT_CWD && atRoot) return env.INIT_CWD;
  return cwd;
}

/** Resolves a command-line path against {@link invocationDir}. */
export function resolveCliPath(p: string): string {
  return path.resolve(invocationDir(), p);
}
