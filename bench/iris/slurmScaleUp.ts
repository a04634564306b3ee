// The autoscaler's scale-up latency on a real Slurm (the test harness's: munged, slurmctld and
// slurmd under a temporary directory, root and Debian's slurm-wlm needed), beside its floor in the
// same run:
//   ours:  submit a one-task job with zero workers → the task RUNNING on a fresh Slurm worker
//          (the autoscaler's round, sbatch, Slurm's scheduling, the worker's start and
//          registration, the controller's placement, the attempt's spawn)
//   floor: a bare `sbatch --wrap 'node -e 0'` from submit to the job's end
// Goal (issue 27): ours ≤ floor + 3 s. The autoscaler runs at its default round interval (2 s).
// Used by autoscaler.bench.ts (the "SCALE-UP LATENCY" section); runnable alone:
//   node --import tsx bench/iris/slurmScaleUp.ts [--runs N]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { IrisClient } from "../../packages/iris/src/client/irisClient.ts";
import { startCluster } from "../../packages/iris/src/autoscaler/clusterUp.ts";
import { validateClusterConfig } from "../../packages/iris/src/autoscaler/config.ts";
import { PROVIDER_FACTORIES } from "../../packages/iris/src/autoscaler/providers.ts";
import { SlurmProvider } from "../../packages/iris/src/autoscaler/slurmProvider.ts";
import { workerCommandLine } from "../../packages/iris/src/autoscaler/workerCommand.ts";
import { slurmAvailability, startSlurm, type TestSlurm } from "@marin/iris/testing";
import { integerFlag } from "@marin/iris/toolkit";

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function poll(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A bare sbatch of `node -e 0`, from the sbatch call to the job's end (squeue polled every 50 ms). */
async function bareSbatch(slurm: TestSlurm, out: string): Promise<number> {
  const t0 = performance.now();
  const id = slurm.cmd("sbatch", ["--parsable", "-J", "floor", "-o", out, "--wrap", `${process.execPath} -e 0`]).trim();
  await poll(
    `sbatch job ${id} to end`,
    () => {
      const row = slurm.jobs().find((j) => j.id === id);
      return row === undefined || /COMPLETED|FAILED|CANCELLED/.test(row.state);
    },
    120_000,
  );
  return performance.now() - t0;
}

/** Runs the measurement and prints it; returns the medians (ms), or undefined when no Slurm can run here. */
export async function scaleUpLatency(runs: number): Promise<{ oursMs: number; floorMs: number } | undefined> {
  const a = slurmAvailability();
  if (!a.ok) {
    console.log(`scale-up latency on Slurm: skipped (${a.why})`);
    return undefined;
  }
  const slurm = await startSlurm();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "iris-bench-slurm-"));
  // The provider runs Slurm's commands with this process's environment.
  const savedConf = process.env.SLURM_CONF;
  process.env.SLURM_CONF = slurm.conf;
  const config = validateClusterConfig({
    controller: { host: "127.0.0.1", port: 0, db: path.join(dir, "iris.sqlite") },
    scaleGroups: [{ name: "bench", provider: "slurm", maxWorkers: 2, idleTimeout: "2s", worker: { cpu: 1, memory: "1G" }, slurm: { partition: slurm.partition } }],
  });
  // The workers run the built iris (bin/iris.mjs → dist/), as an installed iris does, when it is
  // built; else from source under tsx (several seconds slower to start).
  const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../packages/iris/bin/iris.mjs");
  const built = fs.existsSync(path.join(path.dirname(bin), "..", "dist", "cli", "main.js"));
  if (built) {
    PROVIDER_FACTORIES.set(
      "slurm",
      (ctx) =>
        new SlurmProvider({
          stateDir: ctx.stateDir,
          clusterId: ctx.clusterId,
          workerCommand: (req) => {
            const argv = workerCommandLine(req);
            return [process.execPath, bin, ...argv.slice(argv.indexOf("worker"))];
          },
        }),
    );
  }
  console.log(`  workers run ${built ? "the built iris (bin/iris.mjs)" : "iris from source (tsx)"}`);
  const cluster = await startCluster(config, { log: () => undefined });
  const client = IrisClient.connect(cluster.controller.address, { user: "bench" });
  const ours: number[] = [];
  const floor: number[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      // Zero workers and no iris job in Slurm before each run.
      await poll(
        "zero workers",
        async () => (await client.listWorkers()).length === 0 && slurm.jobs().every((j) => !j.name.startsWith("iris-") || !/PENDING|RUNNING|COMPLETING/.test(j.state)),
        120_000,
        200,
      );
      floor.push(await bareSbatch(slurm, path.join(dir, `floor-${i}.out`)));
      const t0 = performance.now();
      const job = await client.submit({ name: `scale-up-${i}`, entrypoint: { command: [process.execPath, "-e", "setTimeout(() => {}, 500)"] }, resources: { cpuMillis: 500 } });
      await poll(
        "the task to run",
        async () => {
          const t = (await job.status()).tasks[0];
          return t !== undefined && (t.state === "RUNNING" || t.state === "SUCCEEDED");
        },
        180_000,
      );
      ours.push(performance.now() - t0);
      await job.wait({ timeoutMs: 60_000 });
      console.log(`  run ${i + 1}: submit → RUNNING on a fresh Slurm worker ${(ours[i]! / 1000).toFixed(2)} s; bare sbatch node -e 0 → end ${(floor[i]! / 1000).toFixed(2)} s`);
    }
  } finally {
    client.close();
    await cluster.stop();
    await slurm.stop();
    if (savedConf === undefined) delete process.env.SLURM_CONF;
    else process.env.SLURM_CONF = savedConf;
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const oursMs = median(ours);
  const floorMs = median(floor);
  console.log(
    `scale-up latency on Slurm (${runs} runs, medians): submit → task RUNNING on a fresh worker ${(oursMs / 1000).toFixed(2)} s ` +
      `| floor, bare sbatch of node -e 0 → end ${(floorMs / 1000).toFixed(2)} s | ours − floor ${((oursMs - floorMs) / 1000).toFixed(2)} s (goal ≤ 3 s)`,
  );
  return { oursMs, floorMs };
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await scaleUpLatency(integerFlag("runs", 3, { min: 1 }));
}
