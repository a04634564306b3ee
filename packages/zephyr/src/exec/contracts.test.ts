// exec/contracts.ts stays a types-only module: the user surface and every backend import it, so any
// code in it would run (and load its imports) in every worker thread and task. (Import circles and
// the folder rules are checked repository-wide: test/importCycles.test.ts, .eslintrc.cjs.)
import { readFileSync } from "node:fs";
import ts from "typescript";
import { describe, expect, it } from "vitest";

describe("exec/contracts.ts", () => {
  it("holds only interfaces, type aliases and type-only imports", () => {
    const text = readFileSync(new URL("./contracts.ts", import.meta.url), "utf8");
    const sf = ts.createSourceFile("contracts.ts", text, ts.ScriptTarget.Latest);
    const code = sf.statements.filter((s) => !ts.isInterfaceDeclaration(s) && !ts.isTypeAliasDeclaration(s) && !(ts.isImportDeclaration(s) && s.importClause?.isTypeOnly));
    expect(sf.statements.length).toBeGreaterThan(10);
    expect(code.map((s) => s.getText(sf).slice(0, 60))).toEqual([]);
  });
});
