import { describe, expect, it } from "vitest";
import { stripWordTags } from "./wordTags.ts";

describe("stripWordTags", () => {
  it("drops tags after the last slash, re-attaches punctuation and quotes, joins lines", () => {
    const line = "\tThe/at 1-1/2/cd Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' ,/, it/pps didn't/dod* ./.";
    expect(stripWordTags(line)).toBe('The 1-1/2 Fulton County Grand Jury said "no evidence", it didn\'t.');
    const brown = "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ,/, and/cc (/( so/rb )/) on/in ./.\n\n\tIt's/pps+bez 1/2/cd done/vbn ./.\n";
    expect(stripWordTags(brown)).toBe('The jury said "no evidence", and (so) on. It\'s 1/2 done.');
  });

  it("attaches split contractions, runs of closing punctuation and brackets", () => {
    expect(stripWordTags("it/pps 's/bez [/( so/rb ]/) do/do n't/* ?/. !/. .../...")).toBe("it's [so] don't?!...");
    expect(stripWordTags("")).toBe("");
  });
});
