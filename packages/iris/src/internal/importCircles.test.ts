// Keeps iris free of import circles: every relative import between its source files — static,
// dynamic (`import()`) and type-only alike — must form no cycle.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(import.meta.dirname, "..");
const IMPORT = /(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.(ts|mjs)$/.test(e.name) ? [p] : [];
  });
}

/** The import graph of the files: file → the files it imports by relative path. */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(
    files.map((f) => {
      const deps = [...fs.readFileSync(f, "utf8").matchAll(IMPORT)]
        .map((m) => m[1] ?? m[2]!)
        .filter((s) => s.startsWith("."))
        .map((s) => path.resolve(path.dirname(f), s))
        .filter((t) => known.has(t));
      return [f, deps];
    }),
  );
}

/** The strongly connected components with more than one file (or a file importing itself). */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
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
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(path.relative(SRC, w));
    } while (w !== v);
    if (scc.length > 1 || graph.get(v)!.includes(v)) out.push(scc.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe("iris's import graph", () => {
  it("finds a circle when there is one", () => {
    const graph = new Map([["/a", ["/b"]], ["/b", ["/c"]], ["/c", ["/a"]], ["/d", ["/a"]], ["/e", ["/e"]]]);
    const rel = (files: string[]) => files.map((f) => path.relative(SRC, f)).sort();
    expect(circles(graph)).toEqual([rel(["/a", "/b", "/c"]), rel(["/e"])]);
  });

  it("has no circles (static, dynamic and type-only imports alike)", () => {
    const files = sourceFiles(SRC);
    expect(files.length).toBeGreaterThan(50);
    expect(circles(importGraph(files))).toEqual([]);
  });
});
