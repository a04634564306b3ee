// Long JSONL lines: seconds to read one line of 5/10/20/40/100 MB through readJsonl (inline), beside
// JSON.parse of the same text alone. Splitting is linear, so the seconds grow with the size; prints
// figures, no thresholds.
//
//   pnpm bench zephyr/longLines [-- --sizes 5,10,20,40,100]
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { readJsonl } from "@marin/zephyr";

const flag = process.argv.indexOf("--sizes");
const sizes = (flag >= 0 ? process.argv[flag + 1] : "5,10,20,40,100").split(",").map(Number);

const dir = await mkdtemp(path.join(os.tmpdir(), "zephyr-longlines-"));
try {
  // Warm-up: the first sink call loads the coordinator; keep that out of the first figure.
  await writeFile(path.join(dir, "warm.jsonl"), '{"id":0}\n');
  await readJsonl(path.join(dir, "warm.jsonl")).count({ backend: "inline" });
  console.log("| line MB | readJsonl s | JSON.parse alone s | MB/s |");
  console.log("| ---: | ---: | ---: | ---: |");
  for (const mb of sizes) {
    const text = JSON.stringify({ id: 1, text: "x".repeat(mb * 1024 * 1024) });
    const file = path.join(dir, `line-${mb}.jsonl`);
    await writeFile(file, `${text}\n{"id":2}\n`);
    const p0 = performance.now();
    JSON.parse(text);
    const parseS = (performance.now() - p0) / 1000;
    const t0 = performance.now();
    const n = await readJsonl(file).count({ backend: "inline" });
    const readS = (performance.now() - t0) / 1000;
    if (n !== 2) throw new Error(`expected 2 records, read ${n}`);
    console.log(`| ${mb} | ${readS.toFixed(2)} | ${parseS.toFixed(3)} | ${(mb / readS).toFixed(0)} |`);
    await rm(file);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
