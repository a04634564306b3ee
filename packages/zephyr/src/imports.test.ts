// zephyr's own import graph (static, dynamic and type-only imports, .ts and .mjs): no circles, and
// the folder rules: exec/, plan/, shuffle/ and io/ never import the user surface (dataset.ts,
// pipeline.ts); plan/ never imports exec/.
import { readFileSync, readdirSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL(".", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.(ts|mjs)$/.test(e.name) ? [p] : [];
  });
}

/** file (relative to src/) → the zephyr files it imports, every kind of import counted. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = importedFiles
      .map((r) => r.fileName)
      .filter((f) => f.startsWith("."))
      .map((f) => path.resolve(path.dirname(file), f))
      .filter((f) => existsSync(f))
      .map((f) => path.relative(SRC, f));
    graph.set(path.relative(SRC, file), targets);
  }
  return graph;
}

/** The strongly connected components with more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
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
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe("zephyr's import graph", () => {
  const graph = importGraph();

  it("sees the imports it must (static, dynamic, type-only, from .mjs)", () => {
    expect(graph.get("dataset.ts")).toContain("exec/coordinator.ts"); // dynamic import()
    expect(graph.get("dataset.ts")).toContain("exec/contracts.ts"); // import type
    expect(graph.get("exec/threadWorker.mjs")).toContain("exec/remoteTask.ts");
    expect(circles(new Map([["a.ts", ["b.ts"]], ["b.ts", ["a.ts"]], ["c.ts", ["a.ts"]]]))).toEqual([["a.ts", "b.ts"]]);
  });

  it("has no circles", () => {
    expect(circles(graph)).toEqual([]);
  });

  it("keeps exec/, plan/, shuffle/ and io/ off the user surface, and plan/ off exec/", () => {
    const bad: string[] = [];
    for (const [from, targets] of graph) {
      for (const to of targets) {
        if (/^(exec|plan|shuffle|io)\//.test(from) && !from.includes(".test.") && (to === "dataset.ts" || to === "pipeline.ts")) bad.push(`${from} → ${to}`);
        if (from.startsWith("plan/") && to.startsWith("exec/")) bad.push(`${from} → ${to}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it("keeps the execution contracts free of code", () => {
    const text = readFileSync(path.join(SRC, "exec/contracts.ts"), "utf8");
    const sf = ts.createSourceFile("contracts.ts", text, ts.ScriptTarget.Latest);
    const code = sf.statements.filter((s) => !ts.isInterfaceDeclaration(s) && !ts.isTypeAliasDeclaration(s) && !(ts.isImportDeclaration(s) && s.importClause?.isTypeOnly));
    expect(code.map((s) => s.getText(sf).slice(0, 60))).toEqual([]);
  });
});
