// `pnpm bench [LAYER[/NAME]] [-- args]`: runs benchmark scripts under bench/, each in its own
// process (so one benchmark's heap and JIT state cannot colour another's), and lets them print
// their figures. `pnpm bench` alone lists what exists.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const all = readdirSync(here)
  .filter((d) => statSync(path.join(here, d)).isDirectory())
  .flatMap((d) =>
    readdirSync(path.join(here, d))
      .filter((f) => f.endsWith(".bench.ts"))
      .map((f) => `${d}/${f.replace(/\.bench\.ts$/, "")}`),
  )
  .sort();

const [selector, ...rest] = process.argv.slice(2).filter((a) => a !== "--");
if (!selector) {
  console.log("usage: pnpm bench LAYER[/NAME] [args]\n\navailable:\n" + all.map((b) => `  ${b}`).join("\n"));
  process.exit(all.length ? 0 : 1);
}
const chosen = all.filter((b) => b === selector || b.startsWith(`${selector}/`));
if (chosen.length === 0) {
  console.error(`no benchmark matches "${selector}"; available: ${all.join(", ") || "(none)"}`);
  process.exit(2);
}
let failed = 0;
for (const b of chosen) {
  console.log(`\n=== ${b} ===`);
  const r = spawnSync(process.execPath, ["--import", "tsx", path.join(here, `${b}.bench.ts`), ...rest], {
    stdio: "inherit",
  });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
