// A step's staging folders and its atomic, journaled publish (one rename of the staging folder to the output folder), and the recovery of an interrupted one.
import { promises as fs } from "node:fs";
import path from "node:path";
import type { Lease, LeaseRecord } from "./lease.ts";
import { leaseIsStale } from "./lease.ts";
import { writeFileAtomic } from "@marin/iris/toolkit";
import { META_WRITE, metaDir, readJson, readStatus, stagingDir, stagingTokens } from "./stepFiles.ts";

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
 * `<meta>/publish.json`: written before the staging folder is renamed to the output folder, removed
 * after SUCCESS. A crash in between leaves it, and the next holder completes that publish (with
 * the recorded result) instead of running the step again.
 */
export interface PublishJournal {
  token: number;
  /** The staging folder's name inside the step's bookkeeping folder. */
  staging: string;
  result?: unknown;
}

/** Where a step's publish journal lives. */
export function journalFile(outputPath: string): string {
  return path.join(metaDir(outputPath), "publish.json");
}

const exists = (p: string) =>
  fs.stat(p).then(
    () => true,
    () => false,
  );

/**
 * Renames `staging` to the output folder: the output appears under its final name complete, in one
 * step. An output folder already there (a forced rerun's old output) is first renamed away into the
 * bookkeeping folder and removed after.
 */
async function renameInto(outputPath: string, staging: string, token: number): Promise<void> {
  const old = path.join(metaDir(outputPath), `replaced-${token}`);
  if (await exists(outputPath)) {
    await fs.rm(old, { recursive: true, force: true });
    await fs.rename(outputPath, old);
  }
  await fs.rename(staging, outputPath);
  await fs.rm(old, { recursive: true, force: true });
}

/** Publishes the staging folder as the output folder (after the fencing check), under a journal. */
export async function publish(outputPath: string, staging: string, lease: Lease, result: unknown): Promise<void> {
  await lease.assertHeld();
  const journal: PublishJournal = { token: lease.token, staging: path.basename(staging), ...(result === undefined ? {} : { result }) };
  await writeFileAtomic(journalFile(outputPath), JSON.stringify(journal), META_WRITE);
  await renameInto(outputPath, staging, lease.token);
}

/** The journal of a publish that was interrupted (written, and its step not SUCCESS under that token), if any. */
export async function pendingJournal(outputPath: string): Promise<PublishJournal | undefined> {
  const journal = (await readJson(journalFile(outputPath))) as PublishJournal | undefined;
  if (!journal) return undefined;
  const status = await readStatus(outputPath);
  return status?.state === "SUCCESS" && status.token === journal.token ? undefined : journal;
}

/**
 * Completes a publish an earlier holder started and did not finish (it crashed between writing the
 * journal and writing SUCCESS). Returns its journal when completed; `undefined` when there was
 * none, it was a leftover of a finished publish, or it cannot be completed (then the step reruns).
 */
export async function recoverPublish(outputPath: string, log: (line: string) => void): Promise<PublishJournal | undefined> {
  const file = journalFile(outputPath);
  const journal = await pendingJournal(outputPath);
  if (!journal) {
    await fs.rm(file, { force: true });
    return undefined;
  }
  const staging = path.join(metaDir(outputPath), journal.staging);
  if (await exists(staging)) {
    await renameInto(outputPath, staging, journal.token); // the crash came before the rename
  } else if (!(await exists(outputPath))) {
    log(`could not complete the publish interrupted under token ${journal.token} (neither its staging folder nor the output exists); running the step again`);
    await fs.rm(file, { force: true });
    return undefined;
  }
  log(`completed the publish interrupted under token ${journal.token}`);
  return journal;
}
