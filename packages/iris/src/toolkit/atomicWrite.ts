// Atomic file writes: a temporary file in the same directory renamed over the target, so that a
// reader sees the old contents or the new, never a torn write. Durability is the caller's choice:
// `durable: true` also fsyncs the file before the rename and the directory after it, so that the
// new contents survive a power loss or kernel crash (not only a crash of this process).
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import { mkdir, open, rename, rm } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";

export interface AtomicWriteOptions {
  /** fsync the file before the rename and its directory after (slower; survives a power loss). */
  durable: boolean;
  /** Create the parent directory first (with `recursive`). */
  mkdir?: boolean;
  /** The new file's mode (e.g. 0o600 for secrets); set on the temporary file before the rename. */
  mode?: number;
}

/** A private temporary name beside `file` (hidden, so directory listings skip it). */
export function tempPathBeside(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
}

/** fsync a directory so that a rename inside it survives a crash (best effort: not every FS allows it). */
export async function syncDir(dir: string): Promise<void> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(dir, "r");
    await fh.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic.
  } finally {
    await fh?.close();
  }
}

/** {@link syncDir}, synchronously. */
export function syncDirSync(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, "r");
    fs.fsyncSync(fd);
  } catch {
    // As syncDir.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Writes `data` to `file` atomically (see the module comment); the temporary file is removed on failure. */
export async function writeFileAtomic(file: string, data: string | Uint8Array, opts: AtomicWriteOptions): Promise<void> {
  const dir = path.dirname(file);
  if (opts.mkdir) await mkdir(dir, { recursive: true });
  const tmp = tempPathBeside(file);
  try {
    const fh = await open(tmp, "w", opts.mode);
    try {
      await fh.writeFile(data);
      if (opts.mode !== undefined) await fh.chmod(opts.mode);
      if (opts.durable) await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  if (opts.durable) await syncDir(dir);
}

/** {@link writeFileAtomic}, synchronously. */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, opts: AtomicWriteOptions): void {
  const dir = path.dirname(file);
  if (opts.mkdir) fs.mkdirSync(dir, { recursive: true });
  const tmp = tempPathBeside(file);
  try {
    const fd = fs.openSync(tmp, "w", opts.mode);
    try {
      fs.writeFileSync(fd, data);
      if (opts.mode !== undefined) fs.fchmodSync(fd, opts.mode);
      if (opts.durable) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  if (opts.durable) syncDirSync(dir);
}
