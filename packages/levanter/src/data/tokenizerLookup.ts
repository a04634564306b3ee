// Which tokenizer a token cache or a checkpoint names, found where the data records it: used by
// training, evaluation, generation and serving alike (so none of them imports another for it).
import { existsSync } from "node:fs";
import path from "node:path";
import { LevanterError } from "../errors.ts";
import { loadTokenizer } from "./hfTokenizer.ts";
import type { Tokenizer } from "./tokenizer.ts";

/**
 * The tokenizer a cache or checkpoint names: built in for `byte`, else from `tokenizerJson`, else
 * from the `tokenizer.json` recorded beside the data — the first of `recordedIn` (a token cache or
 * a checkpoint directory) that holds one.
 */
export async function tokenizerNamed(name: string, tokenizerJson: string | undefined, recordedIn: string[] = []): Promise<Tokenizer> {
  if (name === "byte") return loadTokenizer("byte");
  const file = tokenizerJson ?? recordedIn.map((d) => path.join(d, "tokenizer.json")).find((f) => existsSync(f));
  if (!file) {
    throw new LevanterError(
      "INVALID_CONFIG",
      `tokenizerJson: required for tokenizer "${name}" (only "byte" is built in${recordedIn.length ? `, and no tokenizer.json in ${recordedIn.join(" or ")}` : ""})`,
    );
  }
  return loadTokenizer(file, { name });
}
