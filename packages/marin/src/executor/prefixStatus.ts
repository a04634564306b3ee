// listPrefix: every step output under a prefix with its status (what `marin status` prints).
import { promises as fs } from "node:fs";
import path from "node:path";
import { readStatus } from "./stepFiles.ts";
import type { StepStatus } from "./stepFiles.ts";
import { currentLease, leaseIsStale } from "./lease.ts";
import { systemClock } from "./clock.ts";
import { pendingJournal } from "./publish.ts";

/** One step output found under a prefix. */
export interface PrefixEntry {
  /** `<name>-<hash>`, relative to the prefix. */
  id: string;
  outputPath: string;
  status: StepStatus;
  /** For RUNNING: whether a live lease still backs it. */
  leaseLive: boolean;
  /** Whether an interrupted publish's journal waits to be completed (by the next run). */
  publishPending: boolean;
}

const readdir = (dir: string) => fs.readdir(dir, { withFileTypes: true }).catch(() => []);

/**
 * Every step under `prefix` (names up to 6 folders deep) that has a status, sorted by id. A step's
 * bookkeeping is `<parent>/.marin/<name>-<hash>/`, beside its output folder `<parent>/<name>-<hash>/`.
 */
export async function listPrefix(prefix: string): Promise<PrefixEntry[]> {
  const found: PrefixEntry[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    const entries = await readdir(dir);
    const steps = new Set<string>();
    if (entries.some((e) => e.name === ".marin" && e.isDirectory())) {
      for (const m of await readdir(path.join(dir, ".marin"))) {
        if (!m.isDirectory()) continue;
        const outputPath = path.join(dir, m.name);
        const status = await readStatus(outputPath).catch(() => undefined);
        if (!status) continue;
        steps.add(m.name);
        const lease = await currentLease(path.join(dir, ".marin", m.name)).catch(() => undefined);
        const journal = await pendingJournal(outputPath).catch(() => undefined);
        found.push({
          id: path.relative(prefix, outputPath),
          outputPath,
          status,
          leaseLive: !!lease && !leaseIsStale(lease, systemClock.now()),
          publishPending: journal !== undefined,
        });
      }
    }
    if (depth >= 6) return;
    await Promise.all(entries.filter((e) => e.isDirectory() && e.name !== ".marin" && !steps.has(e.name)).map((e) => walk(path.join(dir, e.name), depth + 1)));
  };
  await walk(prefix, 0);
  return found.sort((a, b) => a.id.localeCompare(b.id));
}
