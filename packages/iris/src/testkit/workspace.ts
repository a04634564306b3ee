// Throwaway git work trees for bundle tests: files written and committed in a fresh repository.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/** A lockfile for a package.json without dependencies. */
export const EMPTY_LOCKFILE = "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n\nimporters:\n\n  .: {}\n";

/** Creates a git work tree at `dir` with `files` (relative path → text) committed; returns `dir`. */
export function makeWorkspace(dir: string, files: Record<string, string>): string {
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  const git = (...args: string[]): void => void execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q");
  git("add", "-A");
  git("-c", "user.name=iris-test", "-c", "user.email=iris-test@localhost", "commit", "-qm", "workspace");
  return dir;
}
