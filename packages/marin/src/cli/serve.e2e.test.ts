// `marin serve` as a real process: a step's checkpoint served on the embedded cluster, the printed
// curl example run as printed (through a capability URL), and a clean stop on Ctrl-C.
import { exec, spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { SOURCE_LOADER, waitFor } from "@marin/iris/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyCheckpoint } from "../internal/fixtures/tinyCheckpoint.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../../..");
const cli = path.join(here, "main.ts");
const marinIndex = path.resolve(here, "../index.ts");
const shardingIndex = path.resolve(repoRoot, "packages/levanter/src/sharding/index.ts");
const sh = promisify(exec);

// One "training" step whose output is a copy of a prepared checkpoint folder.
// With MARIN_TEST_EVAL, also a validation cache and evaluateViaService over both.
const fixture = `
import { cp } from "node:fs/promises";
import path from "node:path";
import { defineStep, evaluateViaService, outputOf, runIfMain } from ${JSON.stringify(marinIndex)};
import { finalizeTokenCache, writeTokenCacheShard } from ${JSON.stringify(shardingIndex)};
export default function build() {
  const train = defineStep({ name: "tiny/train", config: { model: "tiny" }, fn: async (ctx) => {
    await cp(process.env.CKPT_SRC, path.join(ctx.outputPath, "checkpoints"), { recursive: true });
    return {};
  } });
  if (!process.env.MARIN_TEST_EVAL) return [train];
  const data = defineStep({ name: "tiny/data", config: { docs: 12 }, fn: async (ctx) => {
    const docs = Array.from({ length: ctx.config.docs }, (_, d) => Array.from(Buffer.from("document " + d + " of the quick brown fox")));
    await writeTokenCacheShard(ctx.outputPath, 0, docs, { tokenizer: "byte", vocabSize: 257 });
    await finalizeTokenCache(ctx.outputPath);
    return {};
  } });
  return [evaluateViaService({ name: "tiny/eval", checkpoints: outputOf(train, "checkpoints"), data: outputOf(data), batchSize: 2, maxBatches: 2 })];
}
await runIfMain(import.meta.url, build);
`;

describe("marin serve", () => {
  let tmp: string;
  let script: string;
  const env = (): NodeJS.ProcessEnv => ({ ...process.env, CKPT_SRC: path.join(tmp, "src"), LEVANTER_BACKEND: "wasm", LEVANTER_LOG: "warn", npm_lifecycle_event: "" });
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), "marin-serve-cli-"));
    await fs.writeFile(path.join(tmp, "package.json"), JSON.stringify({ type: "module" }));
    script = path.join(tmp, "exp.mjs");
    await fs.writeFile(script, fixture);
    await tinyCheckpoint(path.join(tmp, "src"));
  }, 60_000);
  afterAll(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it("serves the step's checkpoint, prints URLs and a working curl example, and stops on SIGINT with exit 0", async () => {
    const prefix = path.join(tmp, "out");
    const missing = await sh(`node --import tsx ${cli} serve ${script} tiny/train --prefix ${prefix}`, { cwd: repoRoot, env: env() }).then(
      () => "",
      (e: { stderr: string }) => e.stderr,
    );
    expect(missing).toMatch(/step tiny\/train has no output at .*: run it first/);
    await sh(`node --import tsx ${cli} run ${script} --prefix ${prefix}`, { cwd: repoRoot, env: env() });

    const child = spawn(process.execPath, ["--import", SOURCE_LOADER, cli, "serve", script, "tiny/train", "--prefix", prefix, "--ttl", "120"], {
      cwd: repoRoot,
      env: env(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      const curl = await waitFor(`the curl example on stdout (stdout: ${stdout}; stderr: ${stderr})`, () => /^try: (curl .*)$/m.exec(stdout)?.[1], { timeoutMs: 60_000 });
      expect(stdout).toMatch(/^url: http:\/\/127\.0\.0\.1:\d+\/v1$/m);
      expect(stdout).toMatch(/^capability url: http:\/\/127\.0\.0\.1:\d+\/cap\/[\w-]+\.[\w-]+\/v1 \(expires /m);
      expect(stdout).toMatch(/^endpoint: \/[^/]+\/serve-tiny\.train\/serve\/tiny\.train$/m);
      // The example goes through the controller's proxy with the capability URL.
      expect(curl).toContain("/cap/");
      const { stdout: answer } = await sh(curl);
      const body = JSON.parse(answer) as { model: string; choices: { text: string }[] };
      expect(body.model).toBe("tiny.train");
      expect(body.choices).toHaveLength(1);
      child.kill("SIGINT");
      expect(await exit).toBe(0);
      expect(stdout).toContain("marin serve: stopping");
    } finally {
      child.kill("SIGKILL");
    }
  }, 120_000);

  it("evaluateViaService runs as a step: its own iris job, the server a child job of it", async () => {
    const prefix = path.join(tmp, "out");
    const r = await sh(`node --import tsx ${cli} run ${script} --prefix ${prefix}`, { cwd: repoRoot, env: { ...env(), MARIN_TEST_EVAL: "1" } });
    expect(r.stdout).toMatch(/tiny\/eval\s+ran\s/);
    const evalDir = (await fs.readdir(path.join(prefix, "tiny"))).find((d) => d.startsWith("eval-"))!;
    const result = JSON.parse(await fs.readFile(path.join(prefix, "tiny", evalDir, "eval.json"), "utf8")) as { loss: number; bpb: number; tokens: number; window: number };
    expect(result.window).toBe(32);
    expect(result.tokens).toBe(2 * 2 * 32);
    // A random model over 257 byte ids: about ln 257 = 5.55 nats per token.
    expect(result.loss).toBeGreaterThan(4.5);
    expect(result.loss).toBeLessThan(7);
    expect(result.bpb).toBeCloseTo(result.loss / Math.LN2, 6);
  }, 120_000);
});
