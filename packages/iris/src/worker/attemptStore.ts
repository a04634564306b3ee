// The worker's on-disk records of its attempts (uid, pid, pgid, start time) and their scratch
// directories, written before each spawn.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { z } from "../toolkit/zod.ts";
import { groupAlive, readProcStat, signalGroup } from "../process/processGroup.ts";
import { writeFileAtomicSync } from "../toolkit/atomicWrite.ts";

const recordSchema = z.object({
  attemptUid: z.string().min(1),
  attemptId: z.string(),
  startedAtMs: z.number(),
  pid: z.number().int().positive().optional(),
  /** The process group id (the pid: every attempt leads its own group). */
  pgid: z.number().int().positive().optional(),
  /** The pid's start time in clock ticks: proof that a live pid is still this attempt's process. */
  startTicks: z.string().optional(),
  /** Run under an attempt keeper (adoptable by the next worker on this state directory). */
  kept: z.boolean().optional(),
  /** A module entrypoint (its runner leaves a report in the scratch directory). */
  module: z.boolean().optional(),
  timeoutMs: z.number().optional(),
  memoryBytes: z.number().optional(),
});

/** What the worker writes down about an attempt before and after spawning it. */
export type AttemptRecord = z.infer<typeof recordSchema>;

/**
 * The attempts a worker has started, one JSON file each under `<stateDir>/attempts/`, written
 * before the process is spawned and updated with its pid right after. A restarted worker reads
 * them to kill what its previous run left behind and to never start an attempt uid twice.
 */
export class AttemptStore {
  readonly dir: string;

  constructor(stateDir: string) {
    this.dir = path.join(stateDir, "attempts");
    fs.mkdirSync(this.dir, { recursive: true });
  }

  /** A directory of the attempt's own (its spec file, scratch space). */
  scratchDir(attemptUid: string): string {
    const dir = path.join(this.dir, fileKey(attemptUid));
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  write(record: AttemptRecord): void {
    const file = path.join(this.dir, `${fileKey(record.attemptUid)}.json`);
    // Write-then-rename: a crash mid-write must not leave a record that cannot be read back.
    writeFileAtomicSync(file, JSON.stringify(record), { durable: false });
  }

  /** Forgets an attempt: its record and its scratch directory. */
  remove(attemptUid: string): void {
    const key = fileKey(attemptUid);
    fs.rmSync(path.join(this.dir, `${key}.json`), { force: true });
    fs.rmSync(path.join(this.dir, key), { recursive: true, force: true });
  }

  /** Every readable record (unreadable ones are reported through `onBad` and removed). */
  list(onBad: (file: string, error: unknown) => void = () => undefined): AttemptRecord[] {
    const out: AttemptRecord[] = [];
    for (const name of fs.readdirSync(this.dir)) {
      if (!name.endsWith(".json")) continue;
      const file = path.join(this.dir, name);
      try {
        out.push(recordSchema.parse(JSON.parse(fs.readFileSync(file, "utf8"))));
      } catch (e) {
        onBad(file, e);
        fs.rmSync(file, { force: true });
      }
    }
    return out;
  }
}

/** File names from attempt uids, which are opaque and may hold any character. */
function fileKey(attemptUid: string): string {
  const readable = attemptUid.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 40);
  return `${readable}-${createHash("sha256").update(attemptUid).digest("hex").slice(0, 12)}`;
}

/** The record of a freshly spawned process: pid, pgid and start time. */
export function spawnedRecord(base: AttemptRecord, pid: number): AttemptRecord {
  const startTicks = readProcStat(pid)?.startTicks;
  return { ...base, pid, pgid: pid, ...(startTicks === undefined ? {} : { startTicks }) };
}

/**
 * Whether a recorded attempt's process group still has live members that belong to it. A group
 * whose leader is alive counts only if the leader's start time matches the record (the pid may
 * have been reused); a group whose leader is gone counts if anything is left in it.
 */
export function recordedGroupAlive(record: AttemptRecord): boolean {
  if (record.pgid === undefined || record.pid === undefined) return false;
  const leader = readProcStat(record.pid);
  if (leader !== undefined) {
    return leader.pgrp === record.pgid && (record.startTicks === undefined || leader.startTicks === record.startTicks);
  }
  return groupAlive(record.pgid);
}

/**
 * Ends a recorded attempt's process group: SIGTERM, then SIGKILL after `graceMs` if anything is
 * left. Resolves once the group is gone (or after the SIGKILL, which cannot be refused): true when
 * there was something of the attempt's left to kill.
 */
export async function killRecordedAttempt(record: AttemptRecord, graceMs: number): Promise<boolean> {
  if (!recordedGroupAlive(record) || record.pgid === undefined) return false;
  const pgid = record.pgid;
  signalGroup(pgid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && groupAlive(pgid)) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  signalGroup(pgid, "SIGKILL");
  return true;
}
