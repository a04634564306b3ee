// A step's staging folders and its atomic, journaled publish into the output folder (and the recovery of an interrupted one).
import { promises as fs } from "node:fs";
import path from "node:path";
import type { Lease, LeaseRecord } from "./lease.ts";
import { leaseIsStale } from "./lease.ts";
import { metaDir, readJson, readStatus, stagingDir, stagingTokens, writeFileAtomic } from "./stepFiles.ts";

/** Removes everything in a step's output folder except its `.marin/` bookkeeping. */
async function clearOutputs(outputPath: string): Promise<void> {
  let names: string[] = [];
  try {
    names = await fs.readdir(outputPath);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  await Promise.all(names.filter((n) => n !== ".marin").map((n) => fs.rm(path.join(outputPath, n), { recursive: true, force: true })));
}

/**
 * Makes the staging folder for the holder of `lease`. Earlier holders' folders are all stale (the
 * lease was only taken because theirs was released, expired or its process died). A resumable step
 * takes over the newest one by renaming it to its own token's name, so it resumes from what that
 * holder left; every other one is removed.
 */
export async function prepareStaging(outputPath: string, lease: Lease, resumable: boolean, now: number): Promise<string> {
  const staging = stagingDir(outputPath, lease.token);
  const older = (await stagingTokens(outputPath)).filter((t) => t < lease.token);
  let takeOver = resumable ? older[0] : undefined;
  if (takeOver !== undefined) {
    // Only the folder of a holder that is gone: a live, unexpired lease on it would mean a writer.
    const rec = (await readJson(path.join(metaDir(outputPath), `lease-${takeOver}.json`))) as LeaseRecord | undefined;
    if (rec && !leaseIsStale(rec, now)) takeOver = undefined;
  }
  if (takeOver !== undefined) await fs.rename(stagingDir(outputPath, takeOver), staging);
  await Promise.all(older.filter((t) => t !== takeOver).map((t) => fs.rm(stagingDir(outputPath, t), { recursive: true, force: true })));
  await fs.mkdir(staging, { recursive: true });
  return staging;
}

/**
 * `<output>/.marin/publish.json`: written before the first entry moves, removed after SUCCESS. A
 * crash in between leaves it, and the next holder completes that publish instead of clearing the
 * half-moved outputs (a resumable step's checkpoints among them) and starting over.
 */
export interface PublishJournal {
  token: number;
  /** The staging folder's name inside `.marin/`. */
  staging: string;
  names: string[];
  result?: unknown;
}

export function journalFile(outputPath: string): string {
  return path.join(metaDir(outputPath), "publish.json");
}

/** Moves `names` from `staging` into the output folder; a name already moved (an earlier try) is skipped. */
async function moveEntries(outputPath: string, staging: string, names: string[]): Promise<void> {
  for (const n of names) {
    try {
      await fs.rename(path.join(staging, n), path.join(outputPath, n));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      await fs.stat(path.join(outputPath, n)); // neither here nor there: the journal cannot be completed
    }
  }
  await fs.rm(staging, { recursive: true, force: true });
}

/** Moves the staging folder's entries into the output folder (after the fencing check), under a journal. */
export async function publish(outputPath: string, staging: string, lease: Lease, result: unknown): Promise<void> {
  await lease.assertHeld();
  await clearOutputs(outputPath);
  const names = await fs.readdir(staging);
  const journal: PublishJournal = { token: lease.token, staging: path.basename(staging), names, ...(result === undefined ? {} : { result }) };
  await writeFileAtomic(journalFile(outputPath), JSON.stringify(journal));
  await moveEntries(outputPath, staging, names);
}

/**
 * Completes a publish an earlier holder started and did not finish (it crashed between moving its
 * first entry and writing SUCCESS). Returns its journal when completed; `undefined` when there was
 * none, it was a leftover of a finished publish, or it cannot be completed (then the step reruns).
 */
export async function recoverPublish(outputPath: string, log: (line: string) => void): Promise<PublishJournal | undefined> {
  const file = journalFile(outputPath);
  const journal = (await readJson(file)) as PublishJournal | undefined;
  if (!journal) return undefined;
  const status = await readStatus(outputPath);
  if (status?.state === "SUCCESS" && status.token === journal.token) {
    await fs.rm(file, { force: true });
    return undefined;
  }
  try {
    await moveEntries(outputPath, path.join(metaDir(outputPath), journal.staging), journal.names);
  } catch (e) {
    log(`could not complete the publish interrupted under token ${journal.token} (${e instanceof Error ? e.message : String(e)}); running the step again`);
    await fs.rm(file, { force: true });
    return undefined;
  }
  log(`completed the publish interrupted under token ${journal.token}`);
  return journal;
}
