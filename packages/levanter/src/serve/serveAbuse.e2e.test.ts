// `levanter serve` under abuse, as a real process: huge bodies (streamed and announced), a 10 MB
// prompt, 100,000 prompts in one request, text/plain, and 200 clients leaving mid-stream — each
// refused or cleaned up, no MaxListenersExceededWarning, and the process's memory (VmRSS) stays
// bounded and returns near its idle level. Prints the memory figures.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
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
const MiB = 2 ** 20;

const rssOf = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;

// Sends up to `total` bytes as the body (chunked, or announced with content-length), 1 MiB at a
// time, until the server answers or drops the connection; resolves with what happened.
function hugeBody(url: string, total: number, announce: boolean): Promise<{ status?: number; sent: number; error?: string }> {
  return new Promise((resolve) => {
    let sent = 0;
    let done = false;
    const finish = (r: { status?: number; error?: string }) => {
      if (done) return;
      done = true;
      req.destroy();
      resolve({ ...r, sent });
    };
    const req = http.request(url, { method: "POST", headers: { "content-type": "application/json", ...(announce ? { "content-length": String(total) } : {}) } }, (res) => {
      res.resume();
      finish({ status: res.statusCode! });
    });
    req.on("error", (e) => finish({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
    const chunk = Buffer.alloc(MiB, 32);
    const pump = () => {
      while (!done && sent < total) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once("drain", pump);
      }
      if (!done) req.end();
    };
    pump();
  });
}

// A streaming completion from `localAddress` that leaves after its first chunk.
function leaveMidStream(url: string, localAddress: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", localAddress, headers: { "content-type": "application/json" } }, (res) => {
      res.once("data", () => {
        req.destroy();
        resolve(res.statusCode!);
      });
    });
    req.on("error", (e) => ((e as NodeJS.ErrnoException).code === "ECONNRESET" ? undefined : reject(e)));
    req.end(JSON.stringify(body));
  });
}

const post = (url: string, body: string, type = "application/json") => fetch(url, { method: "POST", headers: { "content-type": type }, body });

describe("levanter serve under abuse (CLI)", () => {
  let dir: string;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    await selectBackend({ force: "wasm" });
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-serve-abuse-"));
    const rng = new Rng(1);
    const model = TransformerLm.init(resolveModelConfig(ModelConfigSchema.parse({ nLayers: 2, dModel: 32, nHeads: 4, seqLen: 128 }), 257), rng);
    const optimizer = new AdamW(model.params, { beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0, maxGradNorm: 0, decayMask: defaultDecayMask });
    await saveTrainState(path.join(dir, "step-1"), false, { step: 1, model, optimizer, rng, tokenizer: "byte", loader: { seed: 0, step: 1, batchSize: 1, seqLen: 128 } });
    model.dispose();
    optimizer.dispose();
  });
  afterAll(() => {
    for (const c of children) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses or cleans up every abuse, without warnings, and its memory returns near idle", async () => {
    const child = spawn(process.execPath, ["--import", SOURCE_LOADER, main, "serve", "--checkpoint", dir, "--port", "0", "--max-queue", "1024"], {
      cwd: pkgDir,
      env: { ...process.env, LEVANTER_LOG: "warn", LEVANTER_BACKEND: "wasm" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const base = await waitFor(`"ready at" on stdout (stdout: ${stdout}, stderr: ${stderr})`, () => /ready at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(stdout)?.[1], {
      timeoutMs: 60_000,
    });
    const pid = child.pid!;
    // Warm up (the JIT, the decoder's buffers), then take the idle figure.
    for (let i = 0; i < 3; i++) expect((await post(`${base}/v1/completions`, JSON.stringify({ prompt: "hello", max_tokens: 8 }))).status).toBe(200);
    const idle = rssOf(pid);
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
    try {
      // 6 concurrent 300 MB bodies, streamed (chunked), then 6 announced with content-length.
      const streamed = await Promise.all(Array.from({ length: 6 }, () => hugeBody(`${base}/v1/completions`, 300 * MiB, false)));
      const announced = await Promise.all(Array.from({ length: 6 }, () => hugeBody(`${base}/v1/completions`, 300 * MiB, true)));
      for (const r of [...streamed, ...announced]) {
        // Refused with 413, or cut off before the client could read it: either way far from 300 MB read.
        expect(r.status === 413 || r.error !== undefined, JSON.stringify(r)).toBe(true);
        expect(r.sent).toBeLessThan(300 * MiB);
      }
      expect(streamed.some((r) => r.status === 413) || announced.some((r) => r.status === 413)).toBe(true);
      // A 10 MB prompt, 100,000 prompts, text/plain.
      const prompt = await post(`${base}/v1/completions`, JSON.stringify({ prompt: "a".repeat(10 * 1000 * 1000), max_tokens: 1 }));
      expect(prompt.status).toBe(400);
      expect(((await prompt.json()) as { error: { code: string } }).error.code).toBe("prompt_too_large");
      const many = await post(`${base}/v1/completions`, JSON.stringify({ prompt: Array.from({ length: 100_000 }, () => "x"), max_tokens: 1 }));
      expect(many.status).toBe(400);
      expect(((await many.json()) as { error: { code: string } }).error.code).toBe("too_many_sequences");
      expect((await post(`${base}/v1/completions`, JSON.stringify({ prompt: "x" }), "text/plain")).status).toBe(415);
      // 200 clients from 50 loopback addresses leave mid-stream; every 10th asks for 12 prompts
      // (420 sequences: the queue is raised to 1024 so that all are admitted).
      const statuses = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          leaveMidStream(`${base}/v1/completions`, `127.0.0.${2 + (i % 50)}`, {
            prompt: i % 10 === 0 ? Array.from({ length: 12 }, () => "hi") : "hello",
            max_tokens: 100,
            stream: true,
            seed: i,
          }),
        ),
      );
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      await waitFor(
        "the engine idle again",
        async () => {
          const m = await (await fetch(`${base}/metrics`)).text();
          return /^levanter_serve_active_sequences 0$/m.test(m) && /^levanter_serve_queue_depth 0$/m.test(m) && /^levanter_serve_kv_cache_reserved_bytes 0$/m.test(m);
        },
        { timeoutMs: 60_000 },
      );
    } finally {
      clearInterval(sampler);
    }
    // Back near idle (V8 gives its heap back some seconds after the load; wait for it rather than
    // guess). What stays is the allocator's arenas from the 16 MiB bodies read before their 413, not
    // live objects: 74–124 MiB over idle in seven runs (idle 118–147 MiB, after 214–245 MiB; idle
    // was ~30 MiB higher while levanter still loaded TensorFlow.js by an ES import, whose export
    // scan left garbage behind). The twelve bodies themselves, if kept, would be 192 MiB more.
    const near = idle + 160 * MiB;
    let after = rssOf(pid);
    try {
      await waitFor("the server's memory back near its idle level", () => (after = rssOf(pid)) <= near, { timeoutMs: 60_000 });
    } finally {
      console.log(`levanter serve memory (VmRSS): idle ${(idle / MiB).toFixed(0)} MiB · peak under abuse ${(peak / MiB).toFixed(0)} MiB · after ${(after / MiB).toFixed(0)} MiB`);
    }
    expect(peak).toBeLessThan(idle + 512 * MiB);
    expect(stderr).not.toMatch(/MaxListenersExceededWarning|memory leak/);
    // Still serving.
    expect((await post(`${base}/v1/completions`, JSON.stringify({ prompt: "hi", max_tokens: 2 }))).status).toBe(200);
    child.kill("SIGINT");
    expect(await exit).toBe(0);
  }, 300_000);
});
