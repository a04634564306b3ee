// Packing a workspace into a code bundle (the client side of requirement "code bundles"): the
// git-tracked files of a root plus its lockfile, as a deterministic gzipped tar whose SHA-256 is
// its id, and the rewriting of a spec's paths under that root into paths inside the bundle.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as tar from "tar";
import { IrisError } from "../errors.ts";
import type { Entrypoint } from "../jobSpec.ts";

/** A packed bundle, ready to upload. */
export interface PackedBundle {
  /** `sha256:<hex>` of `bytes`. */
  id: string;
  bytes: Buffer;
  /** The absolute root whose files it holds. */
  root: string;
  /** Number of files in it. */
  files: number;
}

/** The lockfile shipped with every bundle, tracked or not. */
const LOCKFILE = "pnpm-lock.yaml";

/** The top of the git work tree that holds `dir`; FAILED_PRECONDITION outside one. */
export function gitRoot(dir: string): string {
  try {
    return execFileSync("git", ["rev-parse", "--show-toplevel"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch (e) {
    throw new IrisError("FAILED_PRECONDITION", `cannot bundle ${dir}: not inside a git work tree (${(e as Error).message.split("\n")[0]})`, { cause: e });
  }
}

/**
 * The files a bundle of `root` holds, relative and sorted: what `git ls-files` lists under it
 * (tracked files, as they are on disk; tracked files deleted from disk are left out) and the
 * lockfile.
 */
export function bundleFiles(root: string): string[] {
  let listed: string;
  try {
    listed = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8", maxBuffer: 256 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    throw new IrisError("FAILED_PRECONDITION", `cannot bundle ${root}: git ls-files failed (${(e as Error).message.split("\n")[0]})`, { cause: e });
  }
  const files = new Set(listed.split("\0").filter((f) => f !== ""));
  if (fs.existsSync(path.join(root, LOCKFILE))) files.add(LOCKFILE);
  const present = [...files].filter((f) => {
    try {
      const st = fs.lstatSync(path.join(root, f));
      return st.isFile() || st.isSymbolicLink();
    } catch {
      return false;
    }
  });
  return present.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Packs the git work tree that holds `dir` (default: the current directory): the same files with
 * the same contents and modes give the same bytes and so the same id (no times, owners or order
 * of the file system in it).
 */
export async function packBundle(dir?: string): Promise<PackedBundle> {
  const top = path.resolve(gitRoot(path.resolve(dir ?? process.cwd())));
  const files = bundleFiles(top);
  if (files.length === 0) throw new IrisError("FAILED_PRECONDITION", `cannot bundle ${top}: git tracks no files there`);
  const chunks: Buffer[] = [];
  const stream = tar.create({ cwd: top, gzip: { level: 6 }, portable: true, mtime: new Date(0), noDirRecurse: true }, files);
  for await (const c of stream as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
  const bytes = Buffer.concat(chunks);
  return { id: `sha256:${createHash("sha256").update(bytes).digest("hex")}`, bytes, root: top, files: files.length };
}

/** `p` (absolute path or file: URL) relative to `root` when it lies inside it, else undefined. */
function inside(root: string, p: string): string | undefined {
  const abs = p.startsWith("file:") ? fileURLToPath(p) : p;
  if (!path.isAbsolute(abs)) return undefined;
  const rel = path.relative(root, abs);
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return rel === "" ? "." : undefined;
  return rel.split(path.sep).join("/");
}

/**
 * The entrypoint as it runs from a bundle of `root`: a module under the root becomes its path in
 * the bundle, a command's cwd under the root likewise (a command without cwd runs at the bundle's
 * root). Paths outside the root are left as they are. `changed` says whether anything under the
 * root was found (a task inherits its own bundle only then).
 */
export function rebaseEntrypoint(ep: Entrypoint, root: string): { entrypoint: Entrypoint; changed: boolean } {
  if ("module" in ep) {
    const rel = inside(root, ep.module);
    return rel === undefined || rel === "." ? { entrypoint: ep, changed: false } : { entrypoint: { ...ep, module: rel }, changed: true };
  }
  if (ep.cwd === undefined) return { entrypoint: ep, changed: false };
  const rel = inside(root, ep.cwd);
  return rel === undefined ? { entrypoint: ep, changed: false } : { entrypoint: { ...ep, cwd: rel }, changed: true };
}
