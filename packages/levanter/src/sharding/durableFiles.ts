// Crash-safe file writes shared by the token cache and checkpoints (kept on the sharding subpath,
// the only levanter code both may import, since sharding/ imports nothing else of levanter's).
import { randomBytes } from "node:crypto";
import { open, rename } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";

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

/**
 * Writes `data` to `file` atomically: a private temporary file in the same directory, fsynced,
 * then renamed over `file`. Readers see the old contents or the new, never a torn write.
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
  const fh = await open(tmp, "w");
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
}
