// No import circles inside any package, nor in the root's bench/ and experiments/: every relative
// import counts, static, dynamic (`import()`), type-only and re-exports alike, in .ts and .mjs
// files. The graph is read with TypeScript's own pre-processor (no type checking), and strongly
// connected components (Tarjan) name each circle's files.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SOURCE = /\.(ts|mts|mjs|js)$/;

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...filesUnder(full));
    else if (SOURCE.test(name) && !name.endsWith(".d.ts")) out.push(full);
  }
  return out;
}

/** Each file's relative imports, resolved to files of the same tree. */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const deps = new Set<string>();
    for (const ref of info.importedFiles) {
      if (!ref.fileName.startsWith(".")) continue;
      const target = path.resolve(path.dirname(file), ref.fileName);
      const candidates = [target, target.replace(/\.js$/, ".ts"), `${target}.ts`, path.join(target, "index.ts")];
      const hit = candidates.find((c) => known.has(c));
      if (hit && hit !== file) deps.add(hit);
    }
    graph.set(file, [...deps]);
  }
  return graph;
}

/** The graph's circles: strongly connected components of more than one file (or a self-import). */
export function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return found;
}

const trees = [...["iris", "levanter", "zephyr", "marin"].map((p) => `packages/${p}/src`), "bench", "experiments", "test"];

describe("import circles", () => {
  it("finds a planted circle (the check itself works)", () => {
    const g = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
    ]);
    expect(circles(g)).toEqual([["a", "b", "c"]]);
  });

  it.each(trees)("%s has none", (tree) => {
    const files = filesUnder(path.join(root, tree));
    expect(files.length).toBeGreaterThan(0);
    const found = circles(importGraph(files)).map((c) => c.map((f) => path.relative(root, f)));
    expect(found).toEqual([]);
  });
});
