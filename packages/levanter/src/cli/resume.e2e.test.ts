import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCheckpoint } from "../checkpoint/checkpointStore.ts";
import { Rng } from "../rng.ts";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const main = path.join(pkgDir, "src/cli/main.ts");
const STEPS = 24;

function train(configFile: string, runDir: string): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", main, "train", "--config", configFile, `--trainer.runDir=${runDir}`], {
    cwd: pkgDir,
    env: { ...process.env, LEVANTER_LOG: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, stderr })));
}

function lastLoggedStep(runDir: string): number {
  const file = path.join(runDir, "metrics.jsonl");
  if (!existsSync(file)) return 0;
  const lines = readFileSync(file, "utf8").trim().split("\n").filter(Boolean);
  return lines.length ? (JSON.parse(lines.at(-1)!) as { step: number }).step : 0;
}

async function until(cond: () => boolean, what: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function finalArrays(runDir: string): Promise<Map<string, Buffer>> {
  const ckpt = await loadCheckpoint(path.join(runDir, "checkpoints", `step-${STEPS}`));
  expect(ckpt.metadata.isTemporary).toBe(false);
  return new Map(ckpt.names.map((n) => [n, Buffer.from(ckpt.arrays[n]!.data.buffer, ckpt.arrays[n]!.data.byteOffset, ckpt.arrays[n]!.data.byteLength)]));
}

describe("levanter train: interrupted runs resume bit-exactly", () => {
  let dir: string;
  let configFile: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-resume-"));
    await writeByteCache(path.join(dir, "cache"), syntheticDocuments(120, 3));
    configFile = path.join(dir, "tiny.json");
    writeFileSync(
      configFile,
      JSON.stringify({
        model: { nLayers: 2, dModel: 32, nHeads: 4, seqLen: 16 },
        data: { trainCache: path.join(dir, "cache") },
        optimizer: { learningRate: 5e-3, warmup: 4 },
        trainer: {
          numTrainSteps: STEPS,
          batchSize: 4,
          microBatchSize: 2,
          trackers: ["jsonl"],
          backend: "wasm",
          checkpointer: { saveIntervalSeconds: null, keep: [{ every: 3 }] },
        },
      }),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("SIGKILL at a seeded random step, then SIGTERM, then resume: parameters and optimizer state equal an uninterrupted run's", async () => {
    const reference = path.join(dir, "uninterrupted");
    const ref = await exited(train(configFile, reference));
    expect(ref.code, ref.stderr).toBe(0);

    const seed = Number(process.env.LEVANTER_KILL_SEED ?? Date.now() % 100_000);
    const killAt = 4 + new Rng(seed).int(STEPS - 8);
    console.log(`SIGKILL after step ${killAt} (seed ${seed}; rerun with LEVANTER_KILL_SEED=${seed})`);
    const run = path.join(dir, "interrupted");
    const killed = train(configFile, run);
    const killedExit = exited(killed);
    await until(() => lastLoggedStep(run) >= killAt, `step ${killAt}`);
    killed.kill("SIGKILL");
    expect((await killedExit).signal).toBe("SIGKILL");
    expect(existsSync(path.join(run, "checkpoints", `step-${STEPS}`))).toBe(false);

    // Resume; stop it with SIGTERM a little later: it saves a permanent checkpoint and exits 143.
    const resumed = train(configFile, run);
    const resumedExit = exited(resumed);
    const termAt = Math.min(killAt + 3, STEPS - 2);
    await until(() => lastLoggedStep(run) >= termAt, `step ${termAt} after resume`);
    resumed.kill("SIGTERM");
    const term = await resumedExit;
    expect(term.code, term.stderr).toBe(143);

    const finished = await exited(train(configFile, run));
    expect(finished.code, finished.stderr).toBe(0);
    const [a, b] = await Promise.all([finalArrays(reference), finalArrays(run)]);
    expect([...b.keys()]).toEqual([...a.keys()]);
    for (const [name, bytes] of a) expect(b.get(name)!.equals(bytes), `${name} differs`).toBe(true);
    expect([...a.keys()].some((n) => n.startsWith("opt/"))).toBe(true);
  });
});
