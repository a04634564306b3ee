// Step identity and graph resolution: truth tables and a fast-check property.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "@marin/iris/toolkit";
import { MarinError } from "../errors.ts";
import { canonicalJson } from "./canonical.ts";
import { resolveGraph } from "./graph.ts";
import { defineStep, ignore, outputOf } from "./step.ts";
import type { Step } from "./step.ts";

const noop = () => undefined;

interface Knobs {
  aN: number;
  aIgnored: string;
  aVersion: string;
  bLr: number;
  bSub: string;
  cTags: string[];
  eSeed: number;
}

const base: Knobs = { aN: 10, aIgnored: "info", aVersion: "1", bLr: 0.1, bSub: "data.json", cTags: ["x", "y"], eSeed: 7 };

/** A diamond (a → b, a → c, b + c → d) plus an unrelated e. */
function build(k: Knobs): Step<any>[] {
  const a = defineStep({ name: "a", version: k.aVersion, config: { n: k.aN, logLevel: ignore(k.aIgnored) }, fn: noop });
  const b = defineStep({ name: "b", config: { input: outputOf(a, k.bSub), opt: { lr: k.bLr } }, fn: noop });
  const c = defineStep({ name: "c", config: { input: outputOf(a), tags: k.cTags }, fn: noop });
  const d = defineStep({ name: "d", config: { left: outputOf(b), right: outputOf(c) }, fn: noop });
  const e = defineStep({ name: "e", config: { seed: k.eSeed }, fn: noop });
  return [d, e];
}

function paths(k: Knobs, prefix = "/p"): Record<string, string> {
  const g = resolveGraph(build(k), prefix);
  return Object.fromEntries(g.steps.map((s) => [s.name, s.outputPath]));
}

describe("identity", () => {
  const truthTable: [string, Partial<Knobs>, string[]][] = [
    ["a's field", { aN: 11 }, ["a", "b", "c", "d"]],
    ["a's version", { aVersion: "2" }, ["a", "b", "c", "d"]],
    ["a's ignored field", { aIgnored: "debug" }, []],
    ["b's nested field", { bLr: 0.2 }, ["b", "d"]],
    ["b's sub-path into a", { bSub: "other.json" }, ["b", "d"]],
    ["c's list element", { cTags: ["x", "z"] }, ["c", "d"]],
    ["c's list order", { cTags: ["y", "x"] }, ["c", "d"]],
    ["e's field", { eSeed: 8 }, ["e"]],
  ];
  for (const [what, change, moved] of truthTable) {
    it(`changing ${what} moves exactly ${moved.join(", ") || "nothing"}`, () => {
      const before = paths(base);
      const after = paths({ ...base, ...change });
      const changed = Object.keys(before)
        .filter((n) => before[n] !== after[n])
        .sort();
      expect(changed).toEqual(moved);
    });
  }

  it("is independent of the prefix; only the location changes", () => {
    const g1 = resolveGraph(build(base), "/one");
    const g2 = resolveGraph(build(base), "/two/deeper");
    expect(g1.steps.map((s) => s.id)).toEqual(g2.steps.map((s) => s.id));
    expect(g1.steps[0].outputPath).toBe(`/one/${g1.steps[0].id}`);
    expect(g2.steps[0].outputPath).toBe(`/two/deeper/${g2.steps[0].id}`);
  });

  it("places steps as <prefix>/<name>-<hash> in topological order, each once in a diamond", () => {
    const g = resolveGraph(build(base), "/p");
    expect(g.steps.map((s) => s.name)).toEqual(["a", "b", "c", "d", "e"]);
    for (const s of g.steps) expect(s.outputPath).toMatch(new RegExp(`^/p/${s.name}-[0-9a-f]{8}$`));
  });

  it("resolves references to absolute paths and unwraps ignored values", () => {
    const g = resolveGraph(build({ ...base, aIgnored: "trace" }), "/p");
    const a = g.byName.get("a")!;
    expect(a.config).toEqual({ n: 10, logLevel: "trace" });
    expect(g.byName.get("b")!.config).toEqual({ input: `${a.outputPath}/data.json`, opt: { lr: 0.1 } });
    expect(g.byName.get("d")!.deps.map((s) => s.name)).toEqual(["b", "c"]);
  });

  it("does not depend on key order, and identical steps collapse to one", () => {
    const x = defineStep({ name: "x", config: { a: 1, b: { c: 2, d: 3 } }, fn: noop });
    const y = defineStep({ name: "x", config: { b: { d: 3, c: 2 }, a: 1 }, fn: noop });
    const g = resolveGraph([x, y], "/p");
    expect(g.steps).toHaveLength(1);
  });

  it("refuses two different steps with one name", () => {
    const x = defineStep({ name: "x", config: { a: 1 }, fn: noop });
    const y = defineStep({ name: "x", config: { a: 2 }, fn: noop });
    expect(() => resolveGraph([x, y], "/p")).toThrow(/two different steps are named x/);
  });

  it("includes the dependency's name, so steps with equal configs are told apart", () => {
    const p = defineStep({ name: "p", config: {}, fn: noop });
    const q = defineStep({ name: "q", config: {}, fn: noop });
    const fromP = defineStep({ name: "t", config: { in: outputOf(p) }, fn: noop });
    const fromQ = defineStep({ name: "t", config: { in: outputOf(q) }, fn: noop });
    expect(resolveGraph([fromP], "/p").byName.get("t")!.id).not.toBe(resolveGraph([fromQ], "/p").byName.get("t")!.id);
  });

  it("an ignored reference is still a dependency but not part of identity", () => {
    const p1 = defineStep({ name: "p", config: { v: 1 }, fn: noop });
    const p2 = defineStep({ name: "p", config: { v: 2 }, fn: noop });
    const t1 = defineStep({ name: "t", config: { hint: ignore(outputOf(p1)) }, fn: noop });
    const t2 = defineStep({ name: "t", config: { hint: ignore(outputOf(p2)) }, fn: noop });
    const g1 = resolveGraph([t1], "/p");
    expect(g1.byName.get("t")!.deps.map((d) => d.name)).toEqual(["p"]);
    expect(g1.byName.get("t")!.id).toBe(resolveGraph([t2], "/p").byName.get("t")!.id);
  });

  it("rejects non-plain config values with the field path", () => {
    const bad = (config: unknown) => () => resolveGraph([defineStep({ name: "s", config, fn: noop })], "/p");
    expect(bad({ opt: { lr: Number.NaN } })).toThrow(/opt\.lr: expected a finite number, got NaN/);
    expect(bad({ when: new Date(0) })).toThrow(/when: expected plain data, got Date/);
    expect(bad({ cb: [1, () => 2] })).toThrow(/cb\[1\]: expected plain data, got function/);
    const s = defineStep({ name: "s0", config: {}, fn: noop });
    expect(bad({ dep: s })).toThrow(/dep: a step inside a config must be wrapped in outputOf/);
    expect(bad({ opt: { lr: Number.NaN } })).toThrow(MarinError);
  });

  it("validates the resolved config with the step's schema, naming the field", () => {
    const schema = z.object({ trainer: z.object({ numTrainSteps: z.number().int().positive() }) });
    const mk = (n: number) => defineStep({ name: "train", config: { trainer: { numTrainSteps: n } }, schema, fn: noop });
    expect(() => resolveGraph([mk(-3)], "/p")).toThrow(/trainer\.numTrainSteps: .*got -3/);
    expect(resolveGraph([mk(3)], "/p").steps[0].config).toEqual({ trainer: { numTrainSteps: 3 } });
  });

  it("rejects bad names and sub-paths", () => {
    expect(() => defineStep({ name: "../x", config: {}, fn: noop })).toThrow(MarinError);
    expect(() => defineStep({ name: "a b", config: {}, fn: noop })).toThrow(MarinError);
    const s = defineStep({ name: "ok/name", config: {}, fn: noop });
    expect(() => outputOf(s, "../escape")).toThrow(MarinError);
    expect(() => outputOf(s, "/abs")).toThrow(MarinError);
  });

  const json = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      fc.integer(),
      fc.string(),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), tie("value"), { maxKeys: 4 }),
    ),
  })).value;

  it("property: key order never matters; changing any leaf changes the hash", () => {
    const leaves = (v: unknown, at: (string | number)[] = []): (string | number)[][] => {
      if (Array.isArray(v) && v.length) return v.flatMap((e, i) => leaves(e, [...at, i]));
      if (v !== null && typeof v === "object" && Object.keys(v).length) return Object.entries(v).flatMap(([k, e]) => leaves(e, [...at, k]));
      return [at];
    };
    const reverseKeys = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(reverseKeys);
      if (v !== null && typeof v === "object")
        return Object.fromEntries(
          Object.entries(v)
            .reverse()
            .map(([k, e]) => [k, reverseKeys(e)]),
        );
      return v;
    };
    const idOf = (config: unknown) => resolveGraph([defineStep({ name: "s", config, fn: noop })], "/p").steps[0].id;
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), json, { minKeys: 1, maxKeys: 5 }), fc.nat(), (config, pick) => {
        expect(idOf(reverseKeys(config))).toBe(idOf(config));
        const all = leaves(config);
        const target = all[pick % all.length];
        const mutated = structuredClone(config) as Record<string | number, unknown>;
        let cur: Record<string | number, unknown> = mutated;
        for (const k of target.slice(0, -1)) cur = cur[k] as Record<string | number, unknown>;
        const last = target[target.length - 1];
        const old = cur[last];
        const replacement = { __changed: canonicalJson(old as never) ?? "x" };
        cur[last] = replacement;
        expect(idOf(mutated)).not.toBe(idOf(config));
      }),
      { numRuns: 200 },
    );
  });
});

describe("code hash", () => {
  it("follows the function's source (not its whitespace) and never enters identity", () => {
    const mk = (fn: () => unknown) => resolveGraph([defineStep({ name: "s", config: { a: 1 }, fn })], "/p").steps[0];
    const one = mk(() => 1);
    const spaced = mk(() => 1);
    const two = mk(() => 2);
    expect(spaced.codeHash).toBe(one.codeHash);
    expect(two.codeHash).not.toBe(one.codeHash);
    expect(two.id).toBe(one.id);
  });
});
