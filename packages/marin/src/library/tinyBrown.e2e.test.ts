// A shortened tiny-brown experiment end to end: cached re-run, and resume after a killed runner.
import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOURCE_LOADER } from "@marin/iris/testing";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../../..");
const script = path.join(repoRoot, "experiments", "tiny-brown.ts");
const cli = path.resolve(here, "../cli/main.ts");

// A shortened tiny-brown: 8 of the 500 files, 4 training steps of a very small model.
const SHORT = { MARIN_TINY_BROWN_FILES: "8", MARIN_TINY_BROWN_STEPS: "4", MARIN_TINY_BROWN_DMODEL: "16" };

let tmp: string;
beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "marin-tiny-brown-"));
});
afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

function marin(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", SOURCE_LOADER, cli, ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...SHORT, npm_lifecycle_event: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const exists = (p: string) =>
  fs.stat(p).then(
    () => true,
    () => false,
  );

/** Every path under `root` outside `.marin` folders, with size and mtime. */
async function outsideMarin(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const n of await fs.readdir(d)) {
      if (n === ".marin") continue;
      const p = path.join(d, n);
      const st = await fs.stat(p);
      out.push(`${path.relative(root, p)} ${st.isDirectory() ? "dir" : st.size} ${st.mtimeMs}`);
      if (st.isDirectory()) await walk(p);
    }
  };
  await walk(root);
  return out.sort();
}

/** Every file and folder under `root`, `.marin` folders included (relative paths). */
async function everything(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const n of await fs.readdir(d)) {
      const p = path.join(d, n);
      out.push(path.relative(root, p));
      if ((await fs.stat(p)).isDirectory()) await walk(p);
    }
  };
  await walk(root);
  return out.sort();
}

describe("tiny-brown, shortened, on an embedded LocalCluster", () => {
  it("runs every step; the second run executes none and changes no file outside .marin/", async () => {
    const prefix = path.join(tmp, "out");
    // Without the dashboard the embedded cluster starts when a step needs it, its database in the run folder.
    const first = await marin(["run", script, "--prefix", prefix, "--no-dashboard"]);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    for (const step of [
      "import",
      "clean",
      "dedup",
      "quality",
      "dedup-fuzzy",
      "held-out",
      "decontaminate",
      "tokenizer",
      "tokenize",
      "train",
      "evaluate",
      "generate",
      "export-hf",
      "export-gguf",
    ]) {
      expect(first.stdout).toMatch(new RegExp(`tiny-brown/${step}\\s+ran\\s`));
    }
    expect(first.stdout).toMatch(/loss: \d/);
    expect(first.stdout).toMatch(/bpb: \d/);
    expect(first.stdout).toMatch(/sample: "The jury said/);

    const dirs = await fs.readdir(path.join(prefix, "tiny-brown"));
    const dirOf = (name: string) =>
      path.join(
        prefix,
        "tiny-brown",
        dirs.find((d) => d.startsWith(`${name}-`))!,
      );
    const metaOf = (name: string) => path.join(prefix, "tiny-brown", ".marin", path.basename(dirOf(name)));
    // The training job's status reports reach the live view: step/total, loss, tokens/s, ETA.
    expect(first.stderr).toMatch(/tiny-brown\/train: step \d+\/4 \([\d.]+%\) · loss \d+\.\d+ · [\d,]+ tok\/s .*ETA \d/);
    expect(first.stdout).toMatch(/^logs: .*\.marin\/runs\/[^/]+\/logs$/m);
    expect(await fs.readdir(path.join(dirOf("train"), "checkpoints"))).toContain("step-4");
    // The token caches record the trained tokenizer they were made with (and so does the checkpoint).
    expect(await fs.readdir(path.join(dirOf("tokenize"), "train"))).toEqual(expect.arrayContaining(["ledger.json", "tokenizer.json", "tokenizer_config.json"]));
    expect(await fs.readdir(path.join(dirOf("train"), "checkpoints", "step-4"))).toContain("tokenizer.json");
    expect(first.stdout).toMatch(/vocabSize: \d+/);
    expect(first.stdout).toMatch(/contaminated: [1-9]/);
    const evalJson = JSON.parse(await fs.readFile(path.join(dirOf("evaluate"), "eval.json"), "utf8"));
    expect(evalJson.loss).toBeGreaterThan(0);
    expect(evalJson.bpb).toBeGreaterThan(0);
    const samples = (await fs.readFile(path.join(dirOf("generate"), "samples.jsonl"), "utf8")).trim().split("\n");
    expect(samples).toHaveLength(2);
    // The trained model exported in both formats; the summary says where each one is.
    expect(first.stdout).toContain(`tiny-brown/export-hf:\n    format: "hf"\n    family: "llama"\n    path: ${JSON.stringify(path.join(dirOf("export-hf"), "model"))}`);
    expect(first.stdout).toMatch(/tiny-brown\/export-gguf:\n {4}format: "gguf"\n {4}type: "f32"\n {4}bytes: \d+\n {4}path: /);
    expect(first.stdout).toContain(`path: ${JSON.stringify(path.join(dirOf("export-gguf"), "model.gguf"))}`);
    expect(await fs.readdir(path.join(dirOf("export-hf"), "model"))).toEqual(expect.arrayContaining(["config.json", "model.safetensors", "tokenizer.json"]));
    const gguf = await fs.readFile(path.join(dirOf("export-gguf"), "model.gguf"));
    expect([gguf.subarray(0, 4).toString("latin1"), gguf.readUInt32LE(4)]).toEqual(["GGUF", 3]);
    // The train step ran as an iris job on the embedded cluster, whose database lives in the run's folder.
    const runs = await fs.readdir(path.join(prefix, ".marin", "runs"));
    expect(runs).toHaveLength(1);
    expect(await fs.readdir(path.join(prefix, ".marin", "runs", runs[0]))).toContain("iris.sqlite");
    // The iris steps' results came back as task results: no result file in any step's .marin/ or elsewhere.
    expect((await everything(prefix)).filter((f) => /result/i.test(path.basename(f)))).toEqual([]);
    for (const step of ["train", "evaluate", "generate"]) {
      expect((await fs.readdir(metaOf(step))).sort()).toEqual(["info.json", "lease-1.json", "status.json"]);
    }

    const before = await outsideMarin(tmp);
    const second = await marin(["run", script, "--prefix", prefix]);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toMatch(/ok: 0 step\(s\) ran, 14 did not/);
    expect(second.stdout).toMatch(/path: ".*model\.gguf"/);
    expect(second.stdout).toMatch(/bpb: \d/);
    expect(await outsideMarin(tmp)).toEqual(before);
    // Nothing ran, so no cluster started and no run record was written either.
    expect(await fs.readdir(path.join(prefix, ".marin", "runs"))).toEqual(runs);
  });
});

describe("tiny-brown training after a crash", () => {
  it("a runner SIGKILLed mid-training leaves the step unfinished; the re-run resumes from its checkpoint", async () => {
    // The prefix of the run above, when it ran: its data steps are done (the same configs), so this
    // run goes straight to training (only the training's config differs). On its own, it runs them.
    const prefix = path.join(tmp, "out");
    // Enough steps that training outlasts several 1-second checkpoints even on the native kernels:
    // this tiny model's 2-rank gang runs about 57 steps/s on an idle 2-core machine (1,500 steps in
    // 26 s, `marin run … --only train`), so 600 steps last about 10 s and the kill comes after the
    // first checkpoint, about a second in, with most of the run left. 60 steps would finish before any checkpoint.
    const env = { ...process.env, ...SHORT, MARIN_TINY_BROWN_STEPS: "600", MARIN_TINY_BROWN_CHECKPOINT_SECONDS: "1", npm_lifecycle_event: "" };
    const child = spawn(process.execPath, ["--import", SOURCE_LOADER, cli, "run", script, "--prefix", prefix], { cwd: repoRoot, env, stdio: "ignore" });
    const exited = new Promise((r) => child.on("close", r));
    // Wait for a complete checkpoint (metadata.json is written last) in the train step's staging folder.
    const deadline = Date.now() + 300_000;
    let trainDir: string | undefined;
    try {
      for (;;) {
        if (Date.now() > deadline) throw new Error("no checkpoint appeared");
        const dirs = await fs.readdir(path.join(prefix, "tiny-brown", ".marin")).catch(() => [] as string[]);
        // The train step of this run: the one without a published output (the run above published its own).
        const unpublished = await Promise.all(dirs.filter((x) => x.startsWith("train-")).map(async (x) => ((await exists(path.join(prefix, "tiny-brown", x))) ? undefined : x)));
        const d = unpublished.find((x) => x !== undefined);
        if (d) {
          trainDir = path.join(prefix, "tiny-brown", d);
          // The staging folder is per lease token: staging-<token>, in the step's bookkeeping folder beside the output.
          const meta = path.join(prefix, "tiny-brown", ".marin", d);
          const stagings = (await fs.readdir(meta).catch(() => [] as string[])).filter((n) => n.startsWith("staging-"));
          const ckptDirs = stagings.map((st) => path.join(meta, st, "checkpoints"));
          const ckpts = (await Promise.all(ckptDirs.map(async (cd) => (await fs.readdir(cd).catch(() => [] as string[])).map((c) => path.join(cd, c))))).flat();
          const complete = await Promise.all(
            ckpts.map((c) =>
              fs.stat(path.join(c, "metadata.json")).then(
                () => true,
                () => false,
              ),
            ),
          );
          if (complete.some(Boolean)) break;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      child.kill("SIGKILL");
      await exited;
    }
    const trainMeta = path.join(path.dirname(trainDir!), ".marin", path.basename(trainDir!));
    const status = JSON.parse(await fs.readFile(path.join(trainMeta, "status.json"), "utf8"));
    expect(status.state).toBe("RUNNING");
    await expect(fs.stat(trainDir!)).rejects.toThrow(/ENOENT/); // nothing published
    // The plan says where training will resume.
    const plan = await new Promise<string>((resolve) => {
      const c = spawn(process.execPath, ["--import", SOURCE_LOADER, cli, "plan", script, "--prefix", prefix], { cwd: repoRoot, env, stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      c.stdout.on("data", (d) => (out += d));
      c.on("close", () => resolve(out));
    });
    expect(plan).toMatch(/run\s+tiny-brown\/train[^\n]*\n[^\n]*would resume from step-\d+/);

    const rerun = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const c = spawn(process.execPath, ["--import", SOURCE_LOADER, cli, "run", script, "--prefix", prefix, "--only", "train"], {
        cwd: repoRoot,
        env,
        stdio: ["ignore", "pipe", "inherit"],
      });
      let stdout = "";
      c.stdout.on("data", (d) => (stdout += d));
      c.on("close", (code) => resolve({ code, stdout }));
    });
    expect(rerun.code, rerun.stdout).toBe(0);
    expect(rerun.stdout).toMatch(/tiny-brown\/train\s+ran/);
    expect(rerun.stdout).toMatch(/resumedFrom: [1-9]/);
    expect(rerun.stdout).toMatch(/steps: 600/);
    expect(await fs.readdir(path.join(trainDir!, "checkpoints"))).toContain("step-600");
    // The pipeline before training has nine data steps (quality rules, fuzzy dedup, a tokenizer…): room on a loaded machine.
  }, 420_000);
});
