// zephyr's standard pipeline (read JSONL.gz → normalize → drop short → exact dedup → write
// JSONL.gz) on the inline and threads backends, side by side with a hand-written single-pass Node
// loop doing the same work (run first and again last; ratios use the faster run). Prints records/s;
// no thresholds.
//
//   pnpm bench zephyr/pipeline [-- --records 1000000 --files 8 --threads 2]
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { createReadStream, createWriteStream, existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { finished } from "node:stream/promises";
import { StringDecoder } from "node:string_decoder";
import { fileURLToPath } from "node:url";
import { createGunzip, createGzip } from "node:zlib";
import { closeThreadPool } from "@marin/zephyr";
import { MIN_CHARS, cleanPipeline, normalizeText, textHash } from "./cleanPipeline.ts";
import type { Doc } from "./cleanPipeline.ts";
import { integerFlag } from "@marin/iris/toolkit";

function arg(name: string, fallback: number): number {
  return integerFlag(name, fallback, { min: 0 });
}

const RECORDS = arg("records", 1_000_000);
const FILES = arg("files", 8);
const THREADS = process.argv.includes("--threads-child") ? Number(process.argv[process.argv.indexOf("--threads-child") + 3]) : arg("threads", 2);
const inputFlag = process.argv.indexOf("--input");
/** `--input DIR`: reuse (or create and keep) the generated input there. */
const KEEP_INPUT = inputFlag >= 0 ? path.resolve(process.argv[inputFlag + 1]) : undefined;
const ONLY = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : undefined;

// A deterministic generator of text records: mixed case, runs of whitespace, NFKC-foldable
// characters (ligatures, full-width letters), ~15 % short texts and ~20 % duplicates.
const WORDS = "the of and to in is was for on that with as by at from his her data model token train shard ﬁle ＡＢＣ café naïve über Straße".split(" ");
function* generate(n: number, seed: number): Generator<Doc> {
  let s = seed >>> 0;
  const rnd = (): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const recent: string[] = [];
  for (let id = 0; id < n; id++) {
    let text: string;
    if (recent.length > 0 && rnd() < 0.2) {
      const base = recent[Math.floor(rnd() * recent.length)];
      text = rnd() < 0.5 ? base : `  ${base.toUpperCase()}\t`;
    } else {
      const words = rnd() < 0.15 ? 2 + Math.floor(rnd() * 4) : 8 + Math.floor(rnd() * 30);
      const parts: string[] = [];
      for (let w = 0; w < words; w++) {
        const word = WORDS[Math.floor(rnd() * WORDS.length)];
        parts.push(rnd() < 0.1 ? word.toUpperCase() : word, rnd() < 0.1 ? "  \n " : " ");
      }
      parts.push(String(id % 100_000));
      text = parts.join("");
      recent.push(text);
      if (recent.length > 1000) recent.shift();
    }
    yield { id, text };
  }
}

async function writeInput(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const per = Math.ceil(RECORDS / FILES);
  const gen = generate(RECORDS, 42);
  for (let f = 0; f < FILES; f++) {
    const gz = createGzip({ level: 1 });
    const out = createWriteStream(path.join(dir, `part-${String(f).padStart(3, "0")}.jsonl.gz`));
    gz.pipe(out);
    let buf = "";
    for (let i = 0; i < per; i++) {
      const r = gen.next();
      if (r.done) break;
      buf += JSON.stringify(r.value) + "\n";
      if (buf.length > 1 << 20) {
        if (!gz.write(buf)) await once(gz, "drain");
        buf = "";
      }
    }
    gz.end(buf);
    await finished(out);
  }
}

/** The baseline: one pass, one thread, no framework. */
async function handLoop(input: string, outFile: string, files: string[]): Promise<number> {
  const seen = new Set<string>();
  const gz = createGzip({ level: 1 });
  const out = createWriteStream(outFile);
  gz.pipe(out);
  let kept = 0;
  let buf = "";
  for (const f of files) {
    const decoder = new StringDecoder("utf8");
    let carry = "";
    for await (const chunk of createReadStream(path.join(input, f)).pipe(createGunzip()) as AsyncIterable<Buffer>) {
      const text = carry + decoder.write(chunk);
      const lines = text.split("\n");
      carry = lines.pop() ?? "";
      for (const line of lines) {
        if (line.length === 0) continue;
        const d = JSON.parse(line) as Doc;
        const t = normalizeText(d.text);
        if (t.length < MIN_CHARS) continue;
        const h = textHash(t);
        if (seen.has(h)) continue;
        seen.add(h);
        buf += JSON.stringify({ id: d.id, text: t }) + "\n";
        kept++;
      }
      if (buf.length > 1 << 20) {
        if (!gz.write(buf)) await once(gz, "drain");
        buf = "";
      }
    }
  }
  gz.end(buf);
  await finished(out);
  return kept;
}

/** One zephyr run of the benchmark's pipeline, timed (wall and CPU of the whole process). */
async function zephyrRun(input: string, root: string, backend: "inline" | "threads", label: string): Promise<Result> {
  const t = performance.now();
  const cpu0 = process.cpuUsage();
  const r = await cleanPipeline({ input }).writeJsonl(path.join(root, label.replace(/\W+/g, "-"), "part-{shard}.jsonl.gz"), { backend, threads: THREADS, progress: false });
  const u = process.cpuUsage(cpu0);
  return { name: label, seconds: (performance.now() - t) / 1000, cpu: (u.user + u.system) / 1e6, kept: r.counts.reduce((a, b) => a + b, 0) };
}

interface Result {
  name: string;
  seconds: number;
  cpu: number;
  kept: number;
}

/** `--threads-child INPUT ROOT THREADS`: the cold and warm threads runs, printed as JSON. */
async function threadsChild(input: string, root: string): Promise<void> {
  try {
    const cold = await zephyrRun(input, root, "threads", `zephyr threads (${THREADS}, cold pool)`);
    const warm = await zephyrRun(input, root, "threads", `zephyr threads (${THREADS}, warm pool)`);
    console.log(JSON.stringify([cold, warm]));
  } finally {
    await closeThreadPool();
  }
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), "zephyr-bench-"));
  try {
    const input = KEEP_INPUT ?? path.join(root, "input");
    let t = performance.now();
    if (!KEEP_INPUT || !existsSync(input)) await writeInput(input);
    console.log(
      `input: ${RECORDS} records in ${FILES} .jsonl.gz files (generated in ${((performance.now() - t) / 1000).toFixed(1)} s); ${os.availableParallelism()} cores, loadavg ${os.loadavg()[0].toFixed(2)}`,
    );
    const files = Array.from({ length: FILES }, (_, f) => `part-${String(f).padStart(3, "0")}.jsonl.gz`);

    // CPU seconds of the whole process (all threads, zlib's included): on a shared machine the
    // wall-clock figures depend on the load, CPU time much less.
    const results: Result[] = [];
    const cpuSeconds = (since: NodeJS.CpuUsage): number => {
      const u = process.cpuUsage(since);
      return (u.user + u.system) / 1e6;
    };
    t = performance.now();
    let cpu0 = process.cpuUsage();
    const kept = await handLoop(input, path.join(root, "loop.jsonl.gz"), files);
    results.push({ name: "hand-written loop", seconds: (performance.now() - t) / 1000, cpu: cpuSeconds(cpu0), kept });

    // threads runs twice in a fresh child process: cold (the pool starts, each worker loads
    // TypeScript through tsx and warms its JIT) and warm (the pool the cold run left, as for a
    // program running pipelines one after another). A child, because a real program starts
    // without this process's state: the loop's hundreds of MB of garbage in the main heap.
    if (!ONLY || ONLY === "threads") {
      const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--threads-child", input, root, String(THREADS)], {
        stdio: ["ignore", "pipe", "inherit"],
        encoding: "utf8",
      });
      if (child.status !== 0) throw new Error(`the threads child process failed (exit ${child.status})`);
      results.push(...(JSON.parse(child.stdout.trim().split("\n").pop() ?? "[]") as typeof results));
    }
    if (!ONLY || ONLY === "inline") results.push(await zephyrRun(input, root, "inline", "zephyr inline"));
    // The loop runs again last: this machine's speed drifts within a run, so the ratios use the
    // faster of the two loop runs (the conservative baseline for zephyr's figures).
    t = performance.now();
    cpu0 = process.cpuUsage();
    const kept2 = await handLoop(input, path.join(root, "loop2.jsonl.gz"), files);
    results.push({ name: "hand-written loop (again)", seconds: (performance.now() - t) / 1000, cpu: cpuSeconds(cpu0), kept: kept2 });
    const loops = results.filter((r) => r.name.startsWith("hand-written loop"));
    const base = Math.min(...loops.map((r) => r.seconds));
    const baseCpu = Math.min(...loops.map((r) => r.cpu));
    console.log("\n| run | seconds | records/s (input) | kept | × loop | CPU s | CPU × loop |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const r of results) {
      console.log(
        `| ${r.name} | ${r.seconds.toFixed(2)} | ${Math.round(RECORDS / r.seconds).toLocaleString("en-US")} | ${r.kept} | ${(base / r.seconds).toFixed(2)} | ${r.cpu.toFixed(1)} | ${(r.cpu / baseCpu).toFixed(2)} |`,
      );
    }
    console.log(`× loop and CPU × loop are against the faster loop run (${base.toFixed(2)} s, ${baseCpu.toFixed(1)} CPU s).`);
    console.log(`load average after the runs: ${os.loadavg()[0].toFixed(2)} (figures are wall-clock; on a shared machine compare the CPU columns too)`);
    if (new Set(results.map((r) => r.kept)).size !== 1) console.log("WARNING: the runs kept different record counts");
  } finally {
    await closeThreadPool();
    await rm(root, { recursive: true, force: true });
  }
}

const childAt = process.argv.indexOf("--threads-child");
if (childAt >= 0) await threadsChild(process.argv[childAt + 1], process.argv[childAt + 2]);
else await main();
