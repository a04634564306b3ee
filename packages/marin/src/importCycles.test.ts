// Guards marin's import graph: no circle among marin's source files, the root's experiments/ and
// bench/ (static, dynamic `import()`, type-only and re-export imports alike), and the folder rules.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const marinSrc = import.meta.dirname;
const repoRoot = path.resolve(marinSrc, "../../..");
const roots = [marinSrc, path.join(repoRoot, "experiments"), path.join(repoRoot, "bench")];

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    if (n === "node_modules" || n === "dist") return [];
    if (statSync(p).isDirectory()) return tsFiles(p);
    return n.endsWith(".ts") && !n.endsWith(".d.ts") ? [p] : [];
  });
}

/**
 * Every file `file` imports, by any kind of import, among the walked ones: relative specifiers,
 * and `@marin/marin` (its one entry). Other packages are leaves here (each guards its own graph).
 */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  return importedFiles.flatMap(({ fileName: spec }) => {
    if (spec === "@marin/marin") return [path.join(marinSrc, "index.ts")];
    if (spec.startsWith(".")) return [path.resolve(path.dirname(file), spec)];
    return [];
  });
}

/** The strongly connected components of more than one file (or a file importing itself): the circles. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      for (;;) {
        const w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
        if (w === v) break;
      }
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.map((f) => path.relative(repoRoot, f)).sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const graph = new Map(roots.flatMap(tsFiles).map((f) => [f, importsOf(f)]));
const rel = (f: string) => path.relative(marinSrc, f).split(path.sep).join("/");

describe("marin's import graph", () => {
  it("walks the files it should (a broken walk would find no circle anywhere)", () => {
    expect(graph.size).toBeGreaterThan(40);
    expect(graph.get(path.join(marinSrc, "cli", "program.ts"))).toContain(path.join(marinSrc, "experiment", "experiment.ts"));
    // A dynamic import() counts.
    expect(graph.get(path.join(marinSrc, "cli", "program.ts"))).toContain(path.join(marinSrc, "remote", "irisLauncher.ts"));
    expect(cycles(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]))).toHaveLength(1);
  });

  it("has no import circle in packages/marin/src, experiments/ or bench/", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("keeps the folder rules: executor/, experiment/, step/, steps/, remote/ never import cli/; step/ never imports executor/", () => {
    const broken: string[] = [];
    for (const [file, deps] of graph) {
      if (!file.startsWith(marinSrc + path.sep)) continue;
      const from = rel(file);
      for (const d of deps.map(rel)) {
        if (/^(executor|experiment|step|steps|remote)\//.test(from) && d.startsWith("cli/")) broken.push(`${from} → ${d}`);
        if (from.startsWith("step/") && d.startsWith("executor/")) broken.push(`${from} → ${d}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
