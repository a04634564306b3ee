// Text written as `word/TAG` tokens (the Brown Corpus, one sentence per line) back to prose.

/** Tokens made only of these attach to the word before them: `.`, `,`, `?!`, `...`, `)`, `]`. */
const CLOSING = /^[.,;:!?)\]]+$/;
/** Tokens attached to the word before them besides CLOSING: the closing quotes and split contractions. */
const NO_SPACE_BEFORE = new Set(["''", "'", "'s", "n't", "'re", "'ve", "'ll", "'d", "'m"]);
/** Tokens the next word attaches to: the opening quote and brackets. */
const NO_SPACE_AFTER = new Set(["``", "(", "["]);

function untag(token: string): string {
  const slash = token.lastIndexOf("/");
  return slash > 0 ? token.slice(0, slash) : token;
}

/**
 * `The/at jury/nn said/vbd ``/`` no/at ''/'' ./.` → `The jury said "no".`: drops each token's tag
 * (after its last `/`, so `1-1/2/cd` keeps `1-1/2`), re-attaches punctuation, closing quotes and
 * split contractions to the word before, opening quotes and brackets to the word after, turns
 * Brown's `` and '' quotes into `"`, and joins the lines (sentences) with single spaces; blank
 * lines are dropped.
 */
export function stripWordTags(text: string): string {
  const sentences: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const words = line.trim().split(/\s+/).filter(Boolean).map(untag);
    if (words.length === 0) continue;
    let out = "";
    let glue = false;
    for (const w of words) {
      if (out !== "" && !glue && !CLOSING.test(w) && !NO_SPACE_BEFORE.has(w)) out += " ";
      out += w === "``" || w === "''" ? '"' : w;
      glue = NO_SPACE_AFTER.has(w);
    }
    sentences.push(out);
  }
  return sentences.join(" ");
}
