// qualityFilter: each Gopher/C4 rule drops the documents it should, with its own count.
import { describe, expect, it } from "vitest";
import { fromList, ZephyrError } from "../index.ts";
import { DEFAULT_QUALITY_RULES, failedRules, resolveRules } from "./quality.ts";

const good =
  "The river ran past the old mill and the children walked along its bank with their teacher. " +
  "They talked about the water, the stones and the birds that had come back to the valley that spring. " +
  "Later the group stopped at the bridge to have lunch together and to draw the houses on the other side of the stream.";

describe("quality rules", () => {
  it("a plain paragraph passes every default rule", () => {
    expect(failedRules(good, resolveRules())).toEqual([]);
  });

  it("each rule catches its own kind of bad document", () => {
    const rules = resolveRules();
    const cases: [string, string][] = [
      ["wordCount", "too short to be a document"],
      ["meanWordLength", `${good} ${"x ".repeat(200)}`],
      ["symbolWordRatio", `${good} ${"# ".repeat(20)}`],
      ["ellipsisLines", `${good}\n${Array.from({ length: 5 }, (_, i) => `and then line ${i} went on...`).join("\n")}`],
      ["bulletLines", Array.from({ length: 12 }, (_, i) => `• item ${i} of the list with the words to have and of that`).join("\n")],
      ["alphabeticWords", `${good} ${"123 456 789 ".repeat(30)}`],
      ["stopWords", "Lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua ".repeat(4)],
      ["duplicateLines", `${good}\n${"the same line again and again\n".repeat(6)}`],
      ["duplicateParagraphs", `${good}\n\n${"a repeated paragraph of text\n\n".repeat(6)}`],
      ["topNgramCharFraction", `${good} ${"buy cheap now ".repeat(30)}`],
    ];
    for (const [rule, text] of cases) expect(failedRules(text, rules), rule).toContain(rule);
  });

  it("qualityFilter keeps good documents and reports each rule's drop count; rules are configurable", async () => {
    const docs = [good, "too short", `${good}\n${"• bullet of the to and with\n".repeat(40)}`, good.toUpperCase()];
    const { records, stats } = await fromList(docs, { shards: 2 })
      .qualityFilter({ text: (t) => t })
      .collect({ backend: "inline", withStats: true });
    expect(records).toEqual([good, good.toUpperCase()]);
    expect(stats.counters["qualityFilter.wordCount"]).toBe(1);
    expect(stats.counters["qualityFilter.bulletLines"]).toBe(1);
    expect(stats.counters["qualityFilter.dropped"]).toBe(2);
    expect(stats.counters["qualityFilter.kept"]).toBe(2);
    const loose = await fromList(docs)
      .qualityFilter({
        text: (t) => t,
        rules: { wordCount: { min: 1 }, stopWords: false, bulletLines: false, duplicateLines: false, duplicateLineChars: false, topNgramCharFraction: false },
      })
      .collect({ backend: "inline" });
    expect(loose).toHaveLength(4);
    expect(DEFAULT_QUALITY_RULES.wordCount).toEqual({ min: 50, max: 100_000 });
    expect(() => fromList(docs).qualityFilter({ text: (t) => t, rules: { wordCont: { min: 1 } } as never })).toThrow(ZephyrError);
  });
});
