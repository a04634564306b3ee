// `tokenize --strip-word-tags`: text written as `word/TAG` tokens (the Brown Corpus) back to prose.

const NO_SPACE_BEFORE = new Set([".", ",", ";", ":", "?", "!", ")", "''", "'"]);
const NO_SPACE_AFTER = new Set(["``", "("]);

function untag(token: string): string {
  const slash = token.lastIndexOf("/");
  return slash > 0 ? token.slice(0, slash) : token;
}

/**
 * `The/at jury/nn said/vbd ``/`` no/at ''/'' ./.` → `The jury said "no".`: drops each token's tag
 * (after its last `/`), re-attaches punctuation, turns Brown's `` and '' quotes into `"`, and joins
 * the sentences (one per line in the corpus) with spaces.
 */
export function stripWordTags(text: string): string {
  const sentences: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const words = line.trim().split(/\s+/).filter(Boolean).map(untag);
    if (words.length === 0) continue;
    let out = "";
    let glue = false;
    for (const w of words) {
      if (out !== "" && !glue && !NO_SPACE_BEFORE.has(w)) out += " ";
      out += w === "``" || w === "''" ? '"' : w;
      glue = NO_SPACE_AFTER.has(w);
    }
    sentences.push(out);
  }
  return sentences.join(" ");
}
