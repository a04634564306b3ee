// The check that a run's prefix can hold outputs, made before anything runs: a clear message instead of a stack trace or a spinning mkdir.
import { constants, promises as fs } from "node:fs";
import path from "node:path";
import { MarinError } from "../errors.ts";

/** Why a prefix cannot be used, in words, for a file-system error `code` met at `at`. */
export function prefixProblem(prefix: string, at: string, code: string | undefined): string {
  const where = at === prefix ? prefix : `${prefix} (at ${at})`;
  switch (code) {
    case "EROFS":
      return `--prefix ${where}: read-only file system; choose a writable folder`;
    case "EACCES":
    case "EPERM":
      return `--prefix ${where}: permission denied (${code}); choose a folder you can write to`;
    case "ENOTDIR":
    case "EEXIST":
      return `--prefix ${where}: not a directory (a file is in the way); choose another folder`;
    case "ENOSPC":
    case "EDQUOT":
      return `--prefix ${where}: no space left on the device (${code})`;
    case "ENOENT":
      return `--prefix ${where}: a directory cannot be created here (ENOENT: this file system does not allow it, e.g. /proc); choose another folder`;
    default:
      return `--prefix ${where}: cannot be used (${code ?? "unknown error"})`;
  }
}

function codeOf(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Makes sure `prefix` is a directory this process can write to, creating it (one level at a time:
 * Node's recursive mkdir loops for minutes under /proc) when it does not exist. Writes nothing when
 * it exists. Throws INVALID_CONFIG naming the path and the reason (read-only, permission denied,
 * not a directory, cannot be created).
 */
export async function ensurePrefix(prefix: string): Promise<void> {
  const abs = path.resolve(prefix);
  const chain: string[] = [];
  for (let p = abs; ; p = path.dirname(p)) {
    chain.unshift(p);
    if (path.dirname(p) === p) break;
  }
  for (const p of chain) {
    let st;
    try {
      st = await fs.stat(p);
    } catch (e) {
      if (codeOf(e) !== "ENOENT") throw new MarinError("INVALID_CONFIG", prefixProblem(abs, p, codeOf(e)), { cause: e });
    }
    if (st) {
      if (!st.isDirectory()) throw new MarinError("INVALID_CONFIG", prefixProblem(abs, p, "ENOTDIR"));
      continue;
    }
    try {
      await fs.mkdir(p);
    } catch (e) {
      if (codeOf(e) === "EEXIST" && (await fs.stat(p).catch(() => undefined))?.isDirectory()) continue; // made by a racing runner
      throw new MarinError("INVALID_CONFIG", prefixProblem(abs, p, codeOf(e)), { cause: e });
    }
  }
  // Under /proc an existing folder passes access(2) yet refuses new entries: make the bookkeeping
  // folder now (the first thing a run writes), one level, so that such a prefix fails here.
  const meta = path.join(abs, ".marin");
  if (!(await fs.stat(meta).catch(() => undefined))) {
    try {
      await fs.mkdir(meta);
    } catch (e) {
      if (codeOf(e) !== "EEXIST") throw new MarinError("INVALID_CONFIG", prefixProblem(abs, meta, codeOf(e)), { cause: e });
    }
  }
  try {
    await fs.access(abs, constants.W_OK | constants.X_OK);
  } catch (e) {
    throw new MarinError("INVALID_CONFIG", prefixProblem(abs, abs, codeOf(e)), { cause: e });
  }
}
