// The TSDoc examples are not compiled, so a renamed or invented method in one goes unnoticed:
// every `client.<method>(` in a doc comment must be a method of IrisClient, and every
// `.job(…).<method>(` one of Job's.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { IrisClient } from "./client/irisClient.ts";

const SRC = import.meta.dirname;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "generated" ? [] : sourceFiles(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [p] : [];
  });
}

/** Lines of doc comments (` * …`) across the package's sources, with their file. */
const docLines = sourceFiles(SRC).flatMap((file) =>
  fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => /^\s*\*/.test(l))
    .map((line) => ({ file: path.relative(SRC, file), line })),
);

describe("TSDoc examples", () => {
  it("call only methods that IrisClient and Job have", async () => {
    const client = IrisClient.connect("127.0.0.1:1");
    try {
      const job = client.job("example");
      const calls = docLines.flatMap(({ file, line }) => [
        ...[...line.matchAll(/\bclient\.(\w+)\(/g)].map((m) => ({
          file,
          on: "IrisClient",
          method: m[1]!,
          ok: typeof (client as unknown as Record<string, unknown>)[m[1]!] === "function",
        })),
        ...[...line.matchAll(/\.job\([^)]*\)\.(\w+)\(/g)].map((m) => ({
          file,
          on: "Job",
          method: m[1]!,
          ok: typeof (job as unknown as Record<string, unknown>)[m[1]!] === "function",
        })),
      ]);
      expect(calls.length).toBeGreaterThan(0);
      expect(calls.filter((c) => !c.ok)).toEqual([]);
    } finally {
      client.close();
    }
  });
});
