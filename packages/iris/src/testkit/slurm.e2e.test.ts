// The test Slurm harness itself: munged, slurmctld and slurmd start under a temporary directory, a
// bare `sbatch --wrap 'node -e 0'` runs through to the end, and stop() leaves no daemon behind.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipUnlessSlurm, startSlurm, type TestSlurm } from "./slurm.ts";
import { waitFor } from "../worker/testing/waitFor.ts";

const skip = skipUnlessSlurm("the Slurm harness test");

describe.skipIf(skip)("test Slurm", () => {
  let slurm: TestSlurm;
  beforeAll(async () => {
    slurm = await startSlurm();
  });
  afterAll(async () => {
    await slurm?.stop();
  });

  it("runs a batch job of node to completion on its one oversubscribed node", async () => {
    const out = `${slurm.dir}/hello.out`;
    const id = slurm
      .cmd("sbatch", ["--parsable", "-J", "harness", "-c", "32", "-o", out, "--wrap", `${process.execPath} -e "console.log('ran on', process.env.SLURM_JOB_ID)"`])
      .trim();
    expect(id).toMatch(/^\d+$/);
    await waitFor(
      "the batch job to finish",
      () => slurm.jobs().every((j) => j.id !== id || j.state === "COMPLETED") && fs.existsSync(out) && fs.readFileSync(out, "utf8").includes("ran on"),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    expect(fs.readFileSync(out, "utf8").trim()).toBe(`ran on ${id}`);
    // The node advertises more CPUs than this machine has.
    expect(Number(slurm.cmd("sinfo", ["-h", "-N", "-o", "%c"]).trim())).toBe(64);
  });

  it("stop() ends the daemons and removes its directory", async () => {
    const pidFile = `${slurm.dir}/slurmctld.pid`;
    const pid = Number(fs.readFileSync(pidFile, "utf8").trim());
    await slurm.stop();
    expect(fs.existsSync(slurm.dir)).toBe(false);
    expect(spawnSync("kill", ["-0", String(pid)]).status).not.toBe(0);
  });
});
