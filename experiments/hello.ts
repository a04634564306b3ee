// The tutorial experiment of packages/marin/README.md: two steps, the second reads the first's output.
//   pnpm marin run experiments/hello.ts          (or: pnpm exec tsx experiments/hello.ts)
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { defineStep, outputOf, runIfMain } from "@marin/marin";

export default function build() {
  const numbers = defineStep({
    name: "hello/numbers",
    config: { n: 100 },
    fn: async (ctx) => {
      const xs = Array.from({ length: ctx.config.n }, (_, i) => i);
      await writeFile(path.join(ctx.outputPath, "numbers.json"), JSON.stringify(xs));
    },
  });
  const stats = defineStep({
    name: "hello/stats",
    config: { numbers: outputOf(numbers, "numbers.json") },
    fn: async (ctx) => {
      const xs = JSON.parse(await readFile(ctx.config.numbers, "utf8")) as number[];
      const result = { count: xs.length, mean: xs.reduce((a, b) => a + b, 0) / xs.length };
      await writeFile(path.join(ctx.outputPath, "stats.json"), JSON.stringify(result));
      return result;
    },
  });
  return [stats];
}

await runIfMain(import.meta.url, build);
