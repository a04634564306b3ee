// listPrefix: every step output under a prefix with its status (what `marin status` prints).
import { promises as fs } from "node:fs";
import path from "node:path";
import { readStatus } from "./stepFiles.ts";
import type { StepStatus } from "./stepFiles.ts";
import { currentLease, leaseIsStale } from "./lease.ts";
import { systemClock } from "./clock.ts";

/** One step output found under a prefix. */
export interface PrefixEntry {
  /** `<name>-<hash>`, relative to the prefix. */
  id: string;
  outputPath: string;
  status: StepStatus;
  /** For RUNNING: whether a live lease still backs it. */
  leaseLive: boolean;
}

/** Every step output under `prefix` (any depth up to 6 folders) that has a status, sorted by id. */
export async function listPrefix(prefix: string): Promise<PrefixEntry[]> {
  const found: PrefixEntry[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    let names: string[];
    try {
      names = await fs.readdir(dir);
    } catch {
      return;
    }
    if (names.includes(".marin") && dir !== prefix) {
      const status = await readStatus(dir).catch(() => undefined);
      if (status) {
        const lease = await currentLease(path.join(dir, ".marin")).catch(() => undefined);
        found.push({ id: path.relative(prefix, dir), outputPath: dir, status, leaseLive: !!lease && !leaseIsStale(lease, systemClock.now()) });
        return;
      }
    }
    if (depth >= 6) return;
    await Promise.all(
      names.filter((n) => n !== ".marin").map(async (n) => {
        const p = path.join(dir, n);
        const st = await fs.stat(p).catch(() => undefined);
        if (st?.isDirectory()) await walk(p, depth + 1);
      }),
    );
  };
  await walk(prefix, 0);
  return found.sort((a, b) => a.id.localeCompare(b.id));
}
