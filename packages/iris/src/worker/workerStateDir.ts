// Worker state directories: who owns one (the owner record), and the sweep that a starting worker
// runs over its siblings under the shared state root, so that a SIGKILLed worker's leftovers (its
// attempts' processes, its directory) are cleaned up by the next worker on the host, with no flags.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "../toolkit/zod.ts";
import { IrisError } from "../errors.ts";
import { AttemptStore, killRecordedAttempt } from "./attemptStore.ts";
import { processAlive, readProcStat } from "../process/processGroup.ts";

/** The file in a state directory that names the worker process holding it. */
export const OWNER_FILE = "worker.pid";

const ownerSchema = z.object({
  pid: z.number().int().positive(),
  /** The pid's start time in clock ticks since boot: pid + start time name one process. */
  startTicks: z.string().optional(),
  hostname: z.string().optional(),
  /** Linux's boot id: start ticks only mean something within one boot. */
  bootId: z.string().optional(),
});

/** Who holds a state directory. */
export type OwnerRecord = z.infer<typeof ownerSchema>;

/** A directory without an owner record younger than this may be one a worker is creating right now. */
const UNCLAIMED_GRACE_MS = 60_000;

/**
 * The root under which workers started without a state directory each get their own:
 * `$IRIS_STATE_DIR`, else `~/.cache/iris/workers`.
 */
export function defaultStateRoot(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.IRIS_STATE_DIR;
  return fromEnv !== undefined && fromEnv !== "" ? path.resolve(fromEnv) : path.join(os.homedir(), ".cache", "iris", "workers");
}

let bootIdCache: string | undefined | null = null;

/** This boot's id (`/proc/sys/kernel/random/boot_id`), undefined without /proc. */
export function bootId(): string | undefined {
  if (bootIdCache === null) {
    try {
      bootIdCache = fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    } catch {
      bootIdCache = undefined;
    }
  }
  return bootIdCache;
}

/** The owner record of this process. */
export function selfOwner(): OwnerRecord {
  const startTicks = readProcStat("self")?.startTicks;
  const boot = bootId();
  return {
    pid: process.pid,
    hostname: os.hostname(),
    ...(startTicks === undefined ? {} : { startTicks }),
    ...(boot === undefined ? {} : { bootId: boot }),
  };
}

/** The owner record of a state directory; undefined when there is none or it cannot be read. */
export function readOwner(stateDir: string): OwnerRecord | undefined {
  try {
    return ownerSchema.parse(JSON.parse(fs.readFileSync(path.join(stateDir, OWNER_FILE), "utf8")));
  } catch {
    return undefined;
  }
}

/**
 * Whether the owner's process is still running: another host's owner always counts as alive (a
 * shared root must not be swept from elsewhere); on this host, the pid must exist with the
 * recorded start time in this boot (a reused pid is someone else).
 */
export function ownerAlive(owner: OwnerRecord): boolean {
  if (owner.hostname !== undefined && owner.hostname !== os.hostname()) return true;
  const boot = bootId();
  if (owner.bootId !== undefined && boot !== undefined && owner.bootId !== boot) return false;
  return processAlive(owner.pid, owner.startTicks);
}

/** State directories claimed by workers of this process (several can run in one, as in LocalCluster). */
const claimedHere = new Set<string>();

/**
 * Refuses a state directory that a live worker is using (two workers on one directory would kill
 * each other's attempts), then claims it with this process's owner record.
 */
export function claimStateDir(stateDir: string): void {
  const key = fs.realpathSync(stateDir);
  if (claimedHere.has(key)) {
    throw new IrisError("FAILED_PRECONDITION", `the state directory ${stateDir} is in use by another worker of this process`);
  }
  const owner = readOwner(stateDir);
  if (owner !== undefined && owner.pid !== process.pid && ownerAlive(owner)) {
    throw new IrisError("FAILED_PRECONDITION", `the state directory ${stateDir} is in use by the worker with pid ${owner.pid}`);
  }
  fs.writeFileSync(path.join(stateDir, OWNER_FILE), JSON.stringify(selfOwner()));
  claimedHere.add(key);
}

/** Gives up this process's claim (the owner file is left to the caller). */
export function releaseStateDir(stateDir: string): void {
  try {
    claimedHere.delete(fs.realpathSync(stateDir));
  } catch {
    // Already removed.
  }
}

/** A sibling state directory the sweep cleaned up. */
export interface SweptStateDir {
  dir: string;
  /** The dead owner's pid (undefined when the directory had no owner record). */
  ownerPid: number | undefined;
  /** Recorded attempts whose processes were still alive and were killed. */
  killed: { attemptUid: string; pid: number }[];
}

/**
 * Cleans up the state directories under `root` whose owner is dead on this host: kills the attempts
 * they record (only a process whose pid and start time both match its record), then removes the
 * directory. Directories of live workers, of other hosts, and of workers of this process are left
 * alone. Concurrent sweeps are safe: a directory is first renamed away, and only the sweep whose
 * rename succeeded cleans it.
 */
export async function sweepDeadStateDirs(root: string, opts: { killGraceMs: number; nowMs?: number }): Promise<SweptStateDir[]> {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return [];
  }
  const now = opts.nowMs ?? Date.now();
  const swept: SweptStateDir[] = [];
  for (const name of names) {
    if (name.includes(".sweeping-")) continue;
    const dir = path.join(root, name);
    let stat: fs.Stats;
    try {
      stat = fs.statSync(dir);
      if (!stat.isDirectory() || claimedHere.has(fs.realpathSync(dir))) continue;
    } catch {
      continue;
    }
    const owner = readOwner(dir);
    if (owner === undefined ? now - stat.mtimeMs < UNCLAIMED_GRACE_MS : ownerAlive(owner)) continue;
    const moved = `${dir}.sweeping-${process.pid}`;
    try {
      fs.renameSync(dir, moved);
    } catch {
      continue; // Another sweep took it.
    }
    const killed: SweptStateDir["killed"] = [];
    // After a reboot every recorded process is gone, and start ticks no longer identify anything.
    const sameBoot = owner?.bootId === undefined || owner.bootId === bootId();
    if (sameBoot && fs.existsSync(path.join(moved, "attempts"))) {
      const records = new AttemptStore(moved).list();
      await Promise.all(
        records.map(async (record) => {
          if (record.pid === undefined) return;
          const pid = record.pid;
          if (await killRecordedAttempt(record, opts.killGraceMs)) killed.push({ attemptUid: record.attemptUid, pid });
        }),
      );
    }
    fs.rmSync(moved, { recursive: true, force: true });
    swept.push({ dir, ownerPid: owner?.pid, killed });
  }
  return swept;
}
