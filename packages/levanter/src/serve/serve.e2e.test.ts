// `levanter serve` as a real process: newest complete checkpoint, /v1/models over HTTP, clean stop on SIGINT.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SOURCE_LOADER, waitFor } from "@marin/iris/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { ModelConfigSchema, resolveModelConfig } from "../models/modelConfig.ts";
import { TransformerLm, defaultDecayMask } from "../models/transformer.ts";
import { AdamW } from "../optim/adamw.ts";
import { Rng } from "../rng.ts";
import { saveTrainState } from "../checkpoint/trainState.ts";

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const main = path.join(pkgDir, "src/cli/main.ts");
const children = new Set<ChildProcess>();

describe("levanter serve (CLI)", () => {
  let dir: string;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    await selectBackend({ force: "wasm" });
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-serve-"));
    for (const step of [1, 3]) {
      const rng = new Rng(step);
      const model = TransformerLm.init(resolveModelConfig(ModelConfigSchema.parse({ nLayers: 2, dModel: 32, nHeads: 4, seqLen: 32 }), 257), rng);
      const optimizer = new AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 0, decayMask: defaultDecayMask });
      await saveTrainState(path.join(dir, `step-${step}`), false, { step, model, optimizer, rng, tokenizer: "byte", loader: { seed: 0, step, batchSize: 1, seqLen: 32 } });
      model.dispose();
      optimizer.dispose();
    }
    mkdirSync(path.join(dir, "step-9")); // an incomplete save (no metadata.json): ignored
  });
  afterAll(() => {
    for (const c of children) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves the newest complete checkpoint on 127.0.0.1 and stops cleanly on SIGINT", async () => {
    const child = spawn(process.execPath, ["--import", SOURCE_LOADER, main, "serve", "--checkpoint", dir, "--port", "0"], {
      cwd: pkgDir,
      env: { ...process.env, LEVANTER_LOG: "warn", LEVANTER_BACKEND: "wasm" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    const base = await waitFor(`"ready at" on stdout (stdout: ${stdout}, stderr: ${stderr})`, () => /ready at (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(stdout)?.[1], {
      timeoutMs: 60_000,
    });
    const models = (await (await fetch(`${base}/models`)).json()) as { data: { id: string; max_model_len: number }[] };
    expect(models.data).toHaveLength(1);
    expect(models.data[0]!.id).toBe(path.join(dir, "step-3"));
    expect(models.data[0]!.max_model_len).toBe(32);
    const r = await fetch(`${base}/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "hi", max_tokens: 3 }) });
    expect(r.status).toBe(200);
    child.kill("SIGINT");
    expect(await exit).toEqual({ code: 0, signal: null });
    expect(stdout).toContain("levanter serve: stopped (SIGINT)");
  });
});
