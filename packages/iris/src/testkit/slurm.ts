// A real Slurm for tests: munged, slurmctld and slurmd (Debian's slurm-wlm and munge) configured
// and started under a temporary directory, with their own munge socket, ports, state and spool
// directories, so nothing on the machine is touched and several can run side by side. One node
// (this host) advertises more CPUs and memory than the machine has (`SlurmdParameters=
// config_overrides`) on one partition with `OverSubscribe=YES`; process tracking by
// `proctrack/linuxproc` and `task/none`, so no cgroups are needed. It needs root (SlurmUser=root,
// munged's key checks): {@link slurmAvailability} says whether it can run here and
// {@link skipUnlessSlurm} turns "cannot" into a skip with a notice — except under CI=true, where it
// is a failure.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { waitFor } from "../worker/testing/waitFor.ts";

/** The Slurm and munge programs the harness starts or tests call. */
const PROGRAMS = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "scontrol"] as const;

export type SlurmAvailability = { ok: true } | { ok: false; why: string };

function onPath(program: string): boolean {
  const dirs = (process.env.PATH ?? "").split(path.delimiter).concat(["/usr/sbin", "/sbin", "/usr/bin"]);
  return dirs.some((d) => {
    try {
      fs.accessSync(path.join(d, program), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Whether a test Slurm can be started on this machine (root, the programs installed). */
export function slurmAvailability(): SlurmAvailability {
  if (process.platform !== "linux") return { ok: false, why: `Slurm tests run on Linux (this is ${process.platform})` };
  if (typeof process.getuid === "function" && process.getuid() !== 0)
    return { ok: false, why: "the test Slurm runs as root (SlurmUser=root, munged key checks); this process is not root" };
  const missing = PROGRAMS.filter((p) => !onPath(p));
  if (missing.length > 0) return { ok: false, why: `not installed: ${missing.join(", ")} (Debian packages slurm-wlm and munge)` };
  return { ok: true };
}

/**
 * True when the Slurm tests of `suite` must be skipped here (a notice is printed); throws under
 * CI=true instead, where a missing Slurm is a failure.
 */
export function skipUnlessSlurm(suite: string): boolean {
  const a = slurmAvailability();
  if (a.ok) return false;
  if (process.env.CI === "true") throw new Error(`${suite}: a real Slurm is required under CI=true: ${a.why}`);
  console.warn(`NOTICE: skipping ${suite} (no test Slurm here): ${a.why}`);
  return true;
}

/** A running test Slurm. */
export interface TestSlurm {
  /** The temporary directory holding its configuration, state, spool and logs. */
  readonly dir: string;
  /** Path of its slurm.conf. */
  readonly conf: string;
  /** The one node's name (this host's short name). */
  readonly nodeName: string;
  /** The one partition's name. */
  readonly partition: string;
  /** The environment for Slurm's commands (`SLURM_CONF`, PATH with the sbin directories). */
  readonly env: NodeJS.ProcessEnv;
  /** Runs a Slurm command (`squeue`, `scontrol` …) against this cluster; returns stdout, throws on failure. */
  cmd(program: string, args: readonly string[]): string;
  /** The jobs in its queue (any state squeue still shows): id, name, state and comment. */
  jobs(): { id: string; name: string; state: string; comment: string }[];
  /** The daemons' logs so far (for failure messages). */
  logs(): string;
  /** Cancels every job, stops the daemons and removes the directory (once; later calls do nothing). */
  stop(): Promise<void>;
}

export interface StartSlurmOptions {
  /** CPUs the node advertises (default 64). */
  cpus?: number;
  /** Memory the node advertises, MB (default 65536). */
  realMemoryMb?: number;
  /** Partition name (default "main"). */
  partition?: string;
  /** Extra slurm.conf lines. */
  extraConf?: readonly string[];
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

interface Daemon {
  name: string;
  proc: ChildProcess;
  exited: Promise<void>;
  output(): string;
}

function startDaemon(name: string, program: string, args: string[], env: NodeJS.ProcessEnv): Daemon {
  const proc = spawn(program, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const keep = (d: Buffer): void => {
    out += d.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  proc.stdout!.on("data", keep);
  proc.stderr!.on("data", keep);
  const exited = new Promise<void>((resolve) => {
    proc.once("exit", () => resolve());
    proc.once("error", (e) => {
      out += `\n${name}: ${e.message}`;
      resolve();
    });
  });
  return { name, proc, exited, output: () => out };
}

async function stopDaemon(d: Daemon): Promise<void> {
  if (d.proc.exitCode !== null || d.proc.signalCode !== null) return;
  d.proc.kill("SIGTERM");
  const timer = setTimeout(() => d.proc.kill("SIGKILL"), 10_000);
  await d.exited;
  clearTimeout(timer);
}

/** Starts munged, slurmctld and slurmd under a fresh temporary directory and waits until the node is idle. */
export async function startSlurm(opts: StartSlurmOptions = {}): Promise<TestSlurm> {
  const a = slurmAvailability();
  if (!a.ok) throw new Error(`cannot start a test Slurm: ${a.why}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-slurm-"));
  fs.chmodSync(dir, 0o755);
  const nodeName = os.hostname().split(".")[0]!;
  const partition = opts.partition ?? "main";
  const tag = randomBytes(3).toString("hex");
  const keyDir = path.join(dir, "munge-key");
  const sockDir = path.join(dir, "munge");
  for (const d of ["state", "spool", "log", "munge"]) fs.mkdirSync(path.join(dir, d), { mode: 0o755 });
  fs.mkdirSync(keyDir, { mode: 0o700 });
  const key = path.join(keyDir, "munge.key");
  fs.writeFileSync(key, randomBytes(1024), { mode: 0o600 });
  const socket = path.join(sockDir, "munge.socket");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SLURM_CONF: path.join(dir, "slurm.conf"),
    PATH: [process.env.PATH ?? "", "/usr/sbin", "/sbin"].join(path.delimiter),
  };
  const daemons: Daemon[] = [];
  const logs = (): string =>
    daemons.map((d) => `--- ${d.name}\n${d.output().slice(-4000)}`).join("\n") +
    ["slurmctld.log", "slurmd.log"]
      .map((f) => {
        try {
          return `\n--- ${f}\n${fs.readFileSync(path.join(dir, "log", f), "utf8").slice(-4000)}`;
        } catch {
          return "";
        }
      })
      .join("");
  const teardown = async (): Promise<void> => {
    for (const d of [...daemons].reverse()) await stopDaemon(d);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const munged = startDaemon(
      "munged",
      "munged",
      [
        "--foreground",
        "--force",
        `--socket=${socket}`,
        `--key-file=${key}`,
        `--log-file=${path.join(dir, "log", "munged.log")}`,
        `--pid-file=${path.join(sockDir, "munged.pid")}`,
        `--seed-file=${path.join(keyDir, "munged.seed")}`,
      ],
      env,
    );
    daemons.push(munged);
    await waitFor("munged's socket", () => fs.existsSync(socket) || munged.proc.exitCode !== null, { timeoutMs: 20_000 });
    if (munged.proc.exitCode !== null) throw new Error(`munged exited: ${munged.output()}`);

    const [ctldPort, dPort] = [await freePort(), await freePort()];
    const conf = [
      `ClusterName=iristest${tag}`,
      "SlurmctldHost=localhost",
      `SlurmctldPort=${ctldPort}`,
      `SlurmdPort=${dPort}`,
      "SlurmUser=root",
      "SlurmdUser=root",
      "AuthType=auth/munge",
      "CredType=cred/munge",
      `AuthInfo=socket=${socket}`,
      `StateSaveLocation=${path.join(dir, "state")}`,
      `SlurmdSpoolDir=${path.join(dir, "spool")}`,
      `SlurmctldPidFile=${path.join(dir, "slurmctld.pid")}`,
      `SlurmdPidFile=${path.join(dir, "slurmd.pid")}`,
      `SlurmctldLogFile=${path.join(dir, "log", "slurmctld.log")}`,
      `SlurmdLogFile=${path.join(dir, "log", "slurmd.log")}`,
      "ProctrackType=proctrack/linuxproc",
      "TaskPlugin=task/none",
      "SlurmdParameters=config_overrides",
      "SchedulerType=sched/backfill",
      "SchedulerParameters=sched_interval=1",
      "SelectType=select/cons_tres",
      "SelectTypeParameters=CR_Core_Memory",
      "ReturnToService=2",
      "MpiDefault=none",
      "JobAcctGatherType=jobacct_gather/none",
      "AccountingStorageType=accounting_storage/none",
      "JobCompType=jobcomp/none",
      "SwitchType=switch/none",
      // The warning signal of --signal comes within a minute of the time limit's check; ending jobs go quickly.
      "KillWait=5",
      "MinJobAge=30",
      "InactiveLimit=0",
      ...(opts.extraConf ?? []),
      `NodeName=${nodeName} NodeAddr=127.0.0.1 CPUs=${opts.cpus ?? 64} RealMemory=${opts.realMemoryMb ?? 65536} State=UNKNOWN`,
      `PartitionName=${partition} Nodes=${nodeName} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES`,
      "",
    ].join("\n");
    fs.writeFileSync(env.SLURM_CONF!, conf);

    const ctld = startDaemon("slurmctld", "slurmctld", ["-D", "-i", "-f", env.SLURM_CONF!], env);
    daemons.push(ctld);
    const cmd = (program: string, args: readonly string[]): string => {
      const r = spawnSync(program, args as string[], { env, encoding: "utf8", timeout: 30_000 });
      if (r.error !== undefined) throw new Error(`${program} ${args.join(" ")}: ${r.error.message}`);
      if (r.status !== 0) throw new Error(`${program} ${args.join(" ")} exited ${r.status}: ${r.stderr.trim()}`);
      return r.stdout;
    };
    await waitFor(
      "slurmctld to answer",
      () => {
        if (ctld.proc.exitCode !== null) throw new Error(`slurmctld exited (${ctld.proc.exitCode}): ${logs()}`);
        return spawnSync("scontrol", ["ping"], { env, encoding: "utf8" }).stdout.includes("UP");
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    const slurmd = startDaemon("slurmd", "slurmd", ["-D", "-N", nodeName, "-f", env.SLURM_CONF!], env);
    daemons.push(slurmd);
    await waitFor(
      "the Slurm node to be idle",
      () => {
        if (slurmd.proc.exitCode !== null) throw new Error(`slurmd exited (${slurmd.proc.exitCode}): ${logs()}`);
        const state = spawnSync("sinfo", ["-h", "-N", "-n", nodeName, "-o", "%T"], { env, encoding: "utf8" }).stdout.trim();
        if (/down|drain|inval|fail/i.test(state)) spawnSync("scontrol", ["update", `nodename=${nodeName}`, "state=resume"], { env });
        return state === "idle";
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );

    let stopped = false;
    return {
      dir,
      conf: env.SLURM_CONF!,
      nodeName,
      partition,
      env,
      cmd,
      jobs: () =>
        cmd("squeue", ["-h", "-a", "-t", "all", "-o", "%i\x1f%j\x1f%T\x1f%k"])
          .split("\n")
          .filter((l) => l.trim() !== "")
          .map((l) => {
            const [id = "", name = "", state = "", comment = ""] = l.split("\x1f");
            return { id: id.trim(), name, state, comment };
          }),
      logs,
      stop: async () => {
        if (stopped) return;
        stopped = true;
        spawnSync("scancel", ["--full", "-u", os.userInfo().username], { env });
        await waitFor(
          "the test Slurm's jobs to end",
          () => {
            const out = spawnSync("squeue", ["-h", "-t", "PENDING,RUNNING,COMPLETING,SUSPENDED,CONFIGURING", "-o", "%i"], { env, encoding: "utf8" });
            return out.status !== 0 || out.stdout.trim() === "";
          },
          { timeoutMs: 30_000, intervalMs: 200 },
        ).catch(() => undefined);
        await teardown();
      },
    };
  } catch (e) {
    await teardown();
    throw e;
  }
}
