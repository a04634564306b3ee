// Standard steps' option checks: unknown keys named by path with a suggestion.
import { describe, expect, it } from "vitest";
import { MarinError } from "../errors.ts";
import { defineStep, outputOf } from "../step/step.ts";
import { cleanText } from "./cleanText.ts";
import { suggestKey } from "./options.ts";
import { tokenize } from "./tokenize.ts";

const input = outputOf(defineStep({ name: "docs", config: {}, fn: () => undefined }));

describe("standard step options", () => {
  it("rejects a misspelled key with its path and a suggestion", () => {
    const err = (() => {
      try {
        cleanText({ input, minChar: 40 } as never);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(MarinError);
    expect((err as MarinError).message).toBe("cleanText: invalid options:\n  unknown key minChar (did you mean minChars?)");
    expect(() => tokenize({ input, name: "tok", validatonFraction: 0.1 } as never)).toThrow(
      "tokenize (step tok): invalid options:\n  unknown key validatonFraction (did you mean validationFraction?)",
    );
    expect(() => cleanText({ input, zzzzzz: 1 } as never)).toThrow(/unknown key zzzzzz \(known: name, input, /);
  });

  it("suggests only close keys", () => {
    expect(suggestKey("minchars", ["minChars", "maxChars"])).toBe("minChars");
    expect(suggestKey("banana", ["minChars", "maxChars"])).toBeUndefined();
  });
});
