// Process-group plumbing on Linux: signalling groups, /proc/<pid>/stat, group RSS and cgroup OOM-
// kill counts.
import fs from "node:fs";

/**
 * Sends `signal` to every process of a process group. Returns false when it could not: the group
 * no longer exists (ESRCH), or its id now belongs to someone else's processes (EPERM).
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  if (!Number.isInteger(pgid) || pgid <= 1) throw new Error(`refusing to signal process group ${pgid}`);
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ESRCH" || code === "EPERM") return false;
    throw e;
  }
}

/** Whether any process of the group is still alive. */
export function groupAlive(pgid: number): boolean {
  return signalGroup(pgid, 0);
}

interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  /** The state letter: R, S, D, T, Z (a zombie: dead, awaiting its parent), … */
  state: string;
  /** Start time in clock ticks since boot: with the pid, it names one process for ever. */
  startTicks: string;
  rssPages: number;
}

/**
 * Whether process `pid` is running on this host: not a zombie and, given `startTicks` (from
 * {@link readProcStat}), the very process that had it (a reused pid is someone else). Without
 * /proc, the pid alone decides.
 */
export function processAlive(pid: number, startTicks?: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const stat = readProcStat(pid);
  if (stat === undefined) {
    if (fs.existsSync("/proc/self/stat")) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === "EPERM";
    }
  }
  return stat.state !== "Z" && (startTicks === undefined || stat.startTicks === startTicks);
}

/** Parses `/proc/<pid>/stat`; undefined when the process is gone or /proc is unavailable. */
export function readProcStat(pid: number | "self"): ProcStat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  return parseProcStat(text);
}

/** Parses the text of a `/proc/<pid>/stat` file. */
export function parseProcStat(text: string): ProcStat {
  // The command name (field 2) may contain spaces and parentheses: split after its last ")".
  const close = text.lastIndexOf(")");
  const head = text.slice(0, text.indexOf(" "));
  const rest = text.slice(close + 2).split(" ");
  // rest[0] is field 3 (state); field N is rest[N - 3].
  return {
    pid: Number(head),
    ppid: Number(rest[1]),
    pgrp: Number(rest[2]),
    state: rest[0],
    startTicks: rest[19],
    rssPages: Number(rest[21]),
  };
}

/** Linux's page size on every platform iris runs on; only used to turn RSS pages into bytes. */
const PAGE_BYTES = 4096;

/** The resident memory of every process group on the machine, in bytes (empty without /proc). */
export function rssByGroup(): Map<number, number> {
  const out = new Map<number, number>();
  let names: string[];
  try {
    names = fs.readdirSync("/proc");
  } catch {
    return out;
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const stat = readProcStat(pid);
    if (stat !== undefined) out.set(stat.pgrp, (out.get(stat.pgrp) ?? 0) + stat.rssPages * PAGE_BYTES);
  }
  return out;
}

/** The resident memory of all processes of a group, in bytes (0 when /proc is unavailable). */
export function groupRssBytes(pgid: number): number {
  return rssByGroup().get(pgid) ?? 0;
}

type RssListener = (bytes: number) => void;
/** One /proc scan per interval serves every watched group: a scan costs the same for one or many. */
const samplers = new Map<number, { timer: NodeJS.Timeout; listeners: Map<number, Set<RssListener>> }>();

/**
 * Calls `onSample` with the group's resident memory every `intervalMs`, sharing one scan of
 * /proc among all groups watched at the same interval. Returns the function that stops watching.
 */
export function watchGroupRss(pgid: number, intervalMs: number, onSample: RssListener): () => void {
  let sampler = samplers.get(intervalMs);
  if (sampler === undefined) {
    const listeners = new Map<number, Set<RssListener>>();
    const timer = setInterval(() => {
      const rss = rssByGroup();
      for (const [group, set] of listeners) for (const l of set) l(rss.get(group) ?? 0);
    }, intervalMs);
    timer.unref();
    sampler = { timer, listeners };
    samplers.set(intervalMs, sampler);
  }
  const { listeners } = sampler;
  const set = listeners.get(pgid) ?? new Set<RssListener>();
  set.add(onSample);
  listeners.set(pgid, set);
  return () => {
    set.delete(onSample);
    if (set.size === 0) listeners.delete(pgid);
    if (listeners.size === 0 && samplers.get(intervalMs) === sampler) {
      clearInterval(sampler.timer);
      samplers.delete(intervalMs);
    }
  };
}

/** Where the kernel counts OOM kills of this process's memory cgroup (v2, then v1). */
const OOM_COUNTERS = [
  { file: "/sys/fs/cgroup/memory.events", key: "oom_kill" },
  { file: "/sys/fs/cgroup/memory/memory.oom_control", key: "oom_kill" },
];

/**
 * How many processes the kernel's OOM killer has killed in this process's memory cgroup, or
 * undefined where the counter cannot be read. A SIGKILL the worker did not send, while this count
 * went up, was the OOM killer.
 */
export function cgroupOomKills(counters: readonly { file: string; key: string }[] = OOM_COUNTERS): number | undefined {
  for (const { file, key } of counters) {
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n")) {
      const [k, v] = line.trim().split(/\s+/);
      if (k === key && v !== undefined && /^\d+$/.test(v)) return Number(v);
    }
  }
  return undefined;
}
