// A real `levanter train` SIGKILLed mid-run resumes to bitwise-identical parameters.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCheckpoint } from "../checkpoint/checkpointStore.ts";
import { Rng } from "../rng.ts";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";
import { loadNativeAddon } from "../kernels/native/addon.ts";
import { SOURCE_LOADER } from "@marin/iris/testing";

// The guarantee holds on every CPU backend: plain wasm, and the native kernels when they are built.
const BACKENDS = ["wasm", ...(loadNativeAddon().ok ? ["native"] : [])] as const;

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const main = path.join(pkgDir, "src/cli/main.ts");
const STEPS = 24;

// Every trainer this file starts, so none outlives a failed or timed-out test.
const children = new Set<ChildProcess>();

interface Trainer {
  child: ChildProcess;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

// `pauseAfter`: the trainer stops after that step and waits (LEVANTER_PAUSE_AFTER_STEP), so the
// test interrupts it at an exact step however fast or slow the machine is.
function train(configFile: string, runDir: string, pauseAfter?: number): Trainer {
  const child = spawn(process.execPath, ["--import", SOURCE_LOADER, main, "train", "--config", configFile, `--trainer.runDir=${runDir}`], {
    cwd: pkgDir,
    env: { ...process.env, LEVANTER_LOG: "warn", ...(pauseAfter !== undefined ? { LEVANTER_PAUSE_AFTER_STEP: String(pauseAfter) } : {}) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout!.resume();
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on("exit", (code, signal) => {
      children.delete(child);
      resolve({ code, signal, stderr });
    }),
  );
  return { child, stderr: () => stderr, exit };
}

// Resolves when the trainer prints its pause line; fails at once if it exits instead.
async function paused(t: Trainer, step: number, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void t.exit.then(() => (exited = true));
  while (!t.stderr().includes(`levanter: paused after step ${step}\n`)) {
    if (exited) throw new Error(`trainer exited before pausing after step ${step}: ${t.stderr()}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for the pause after step ${step}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function loggedSteps(runDir: string): number[] {
  const file = path.join(runDir, "metrics.jsonl");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { step: number }).step);
}

async function finalArrays(runDir: string): Promise<Map<string, Buffer>> {
  const ckpt = await loadCheckpoint(path.join(runDir, "checkpoints", `step-${STEPS}`));
  expect(ckpt.metadata.isTemporary).toBe(false);
  return new Map(ckpt.names.map((n) => [n, Buffer.from(ckpt.arrays[n]!.data.buffer, ckpt.arrays[n]!.data.byteOffset, ckpt.arrays[n]!.data.byteLength)]));
}

describe.each(BACKENDS)("levanter train (%s): interrupted runs resume bit-exactly", (backend) => {
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
          backend,
          checkpointer: { saveIntervalSeconds: null, keep: [{ every: 3 }] },
        },
      }),
    );
  });
  afterAll(() => {
    for (const c of children) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("SIGKILL at a seeded random step, then SIGTERM, then resume: parameters and optimizer state equal an uninterrupted run's", async () => {
    const reference = path.join(dir, "uninterrupted");
    const ref = await train(configFile, reference).exit;
    expect(ref.code, ref.stderr).toBe(0);

    const seed = Number(process.env.LEVANTER_KILL_SEED ?? Date.now() % 100_000);
    const rng = new Rng(seed);
    const killAt = 1 + rng.int(STEPS - 2); // 1 … STEPS-2
    const termAt = killAt + 1 + rng.int(STEPS - 1 - killAt); // killAt+1 … STEPS-1
    console.log(`SIGKILL after step ${killAt}, SIGTERM after step ${termAt} (seed ${seed}; rerun with LEVANTER_KILL_SEED=${seed})`);
    const run = path.join(dir, "interrupted");
    const killed = train(configFile, run, killAt);
    await paused(killed, killAt);
    killed.child.kill("SIGKILL");
    expect((await killed.exit).signal).toBe("SIGKILL");
    expect(Math.max(...loggedSteps(run))).toBe(killAt);
    expect(existsSync(path.join(run, "checkpoints", `step-${STEPS}`))).toBe(false);

    // Resume; SIGTERM it after a later step: it saves a permanent checkpoint there and exits 143.
    const resumed = train(configFile, run, termAt);
    await paused(resumed, termAt);
    resumed.child.kill("SIGTERM");
    const term = await resumed.exit;
    expect(term.code, term.stderr).toBe(143);
    const meta = JSON.parse(readFileSync(path.join(run, "checkpoints", `step-${termAt}`, "metadata.json"), "utf8")) as { isTemporary: boolean };
    expect(meta.isTemporary).toBe(false);

    const finished = await train(configFile, run).exit;
    expect(finished.code, finished.stderr).toBe(0);
    const [a, b] = await Promise.all([finalArrays(reference), finalArrays(run)]);
    expect([...b.keys()]).toEqual([...a.keys()]);
    for (const [name, bytes] of a) expect(b.get(name)!.equals(bytes), `${name} differs`).toBe(true);
    expect([...a.keys()].some((n) => n.startsWith("opt/"))).toBe(true);
  });
});
