import { describe, expect, it } from "vitest";
import { z } from "./zod.ts";
import { formatZodIssues, valueAtPath } from "./zodIssues.ts";

const schema = z.strictObject({ a: z.object({ n: z.number().int() }), list: z.array(z.string()).optional() });
const bad = { a: { n: 1.5 }, list: ["x", 3], extra: true };

describe("formatZodIssues", () => {
  it("names each issue's path, joined with '; ', from an error or its issues", () => {
    const r = schema.safeParse(bad);
    if (r.success) throw new Error("expected a failure");
    const text = formatZodIssues(r.error);
    expect(text).toBe(formatZodIssues(r.error.issues));
    expect(text.split("; ").map((l) => l.split(":")[0])).toEqual(["a.n", "list.1", "(root)"]);
  });

  it("adds a prefix, a root label, a separator, a limit, and custom paths", () => {
    const r = schema.safeParse({ list: [1] });
    if (r.success) throw new Error("expected a failure");
    expect(formatZodIssues(r.error, { prefix: "cfg", limit: 1 })).toMatch(/^cfg\.a: [^;]*$/);
    const bracket = (p: (string | number)[]) => p.map((s, i) => (typeof s === "number" ? `[${s}]` : i ? `.${s}` : s)).join("");
    expect(formatZodIssues(r.error, { path: bracket, separator: "\n" }).split("\n")[1]).toMatch(/^list\[0\]: /);
    const root = z.number().safeParse("x");
    if (root.success) throw new Error("expected a failure");
    expect(formatZodIssues(root.error, { root: "options" })).toMatch(/^options: /);
    expect(formatZodIssues(root.error, { trimInvalidInput: true })).not.toMatch(/Invalid input: /);
  });

  it("appends the offending value with `input`, 'missing' where named, none for unknown keys", () => {
    const r = schema.safeParse(bad);
    if (r.success) throw new Error("expected a failure");
    const lines = formatZodIssues(r.error, { input: bad }).split("; ");
    expect(lines[0]).toMatch(/^a\.n: .*, got 1\.5$/);
    expect(lines[1]).toMatch(/, got 3$/);
    expect(lines[2]).not.toMatch(/got/);
    const missing = schema.safeParse({});
    if (missing.success) throw new Error("expected a failure");
    expect(formatZodIssues(missing.error, { input: {} })).not.toMatch(/got/);
    expect(formatZodIssues(missing.error, { input: {}, missing: "missing" })).toMatch(/^a: .*, got missing$/);
    expect(formatZodIssues(r.error, { input: bad, line: (i, p) => (i.code === "unrecognized_keys" ? `${p.join(".") || "top"}: unknown ${i.keys.join(",")}` : undefined) })).toMatch(
      /; top: unknown extra$/,
    );
  });

  it("valueAtPath walks objects and arrays, undefined past a leaf", () => {
    expect(valueAtPath({ a: [{ b: 2 }] }, ["a", 0, "b"])).toBe(2);
    expect(valueAtPath({ a: 1 }, ["a", "b"])).toBeUndefined();
  });
});
