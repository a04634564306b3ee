// Gopher/C4-style quality heuristics as named, configurable rules over a document's text.

/** Bounds of a rule (either side optional). */
export interface Bounds {
  min?: number;
  max?: number;
}

/**
 * The rules and their thresholds; `false` turns a rule off. Defaults follow Gopher (Rae et al.,
 * 2021, appendix A) and C4.
 */
export interface QualityRules {
  /** Number of words. Default `{ min: 50, max: 100000 }`. */
  wordCount?: Bounds | false;
  /** Mean word length in characters. Default `{ min: 3, max: 10 }`. */
  meanWordLength?: Bounds | false;
  /** Ratio of `#` and ellipsis (`...`, `…`) occurrences to words. Default `{ max: 0.1 }`. */
  symbolWordRatio?: Bounds | false;
  /** Fraction of lines ending in an ellipsis. Default `{ max: 0.3 }`. */
  ellipsisLines?: Bounds | false;
  /** Fraction of lines starting with a bullet (•, ‣, ●, -, *, ·). Default `{ max: 0.9 }`. */
  bulletLines?: Bounds | false;
  /** Fraction of words with at least one letter. Default `{ min: 0.8 }`. */
  alphabeticWords?: Bounds | false;
  /** Number of distinct stop words present (the, be, to, of, and, that, have, with). Default `{ min: 2 }`. */
  stopWords?: Bounds | false;
  /** Fraction of lines that repeat an earlier line. Default `{ max: 0.3 }`. */
  duplicateLines?: Bounds | false;
  /** Fraction of characters in lines that repeat an earlier line. Default `{ max: 0.2 }`. */
  duplicateLineChars?: Bounds | false;
  /** Fraction of paragraphs (split on blank lines) that repeat an earlier one. Default `{ max: 0.3 }`. */
  duplicateParagraphs?: Bounds | false;
  /** Fraction of characters in paragraphs that repeat an earlier one. Default `{ max: 0.2 }`. */
  duplicateParagraphChars?: Bounds | false;
  /**
   * For each n, the maximum fraction of word characters covered by the most frequent word n-gram.
   * Default `{ 2: 0.2, 3: 0.18, 4: 0.16 }`.
   */
  topNgramCharFraction?: Record<number, number> | false;
}

/** The rule names, in the order they are evaluated and reported. */
export const QUALITY_RULE_NAMES = [
  "wordCount",
  "meanWordLength",
  "symbolWordRatio",
  "ellipsisLines",
  "bulletLines",
  "alphabeticWords",
  "stopWords",
  "duplicateLines",
  "duplicateLineChars",
  "duplicateParagraphs",
  "duplicateParagraphChars",
  "topNgramCharFraction",
] as const;

export type QualityRuleName = (typeof QUALITY_RULE_NAMES)[number];

export const DEFAULT_QUALITY_RULES: Required<QualityRules> = {
  wordCount: { min: 50, max: 100_000 },
  meanWordLength: { min: 3, max: 10 },
  symbolWordRatio: { max: 0.1 },
  ellipsisLines: { max: 0.3 },
  bulletLines: { max: 0.9 },
  alphabeticWords: { min: 0.8 },
  stopWords: { min: 2 },
  duplicateLines: { max: 0.3 },
  duplicateLineChars: { max: 0.2 },
  duplicateParagraphs: { max: 0.3 },
  duplicateParagraphChars: { max: 0.2 },
  topNgramCharFraction: { 2: 0.2, 3: 0.18, 4: 0.16 },
};

const STOP_WORDS = new Set(["the", "be", "to", "of", "and", "that", "have", "with"]);
const BULLET = /^\s*[•‣●\-*·◦▪]/u;
const ELLIPSIS_END = /(\.\.\.|…)\s*$/u;
const LETTER = /\p{L}/u;

function inBounds(v: number, b: Bounds): boolean {
  return !(b.min !== undefined && v < b.min) && !(b.max !== undefined && v > b.max);
}

/** Fraction of items (and of their characters) that repeat an earlier item. */
function duplicates(items: string[]): { fraction: number; chars: number } {
  if (items.length === 0) return { fraction: 0, chars: 0 };
  const seen = new Set<string>();
  let dup = 0;
  let dupChars = 0;
  let total = 0;
  for (const it of items) {
    total += it.length;
    if (seen.has(it)) {
      dup++;
      dupChars += it.length;
    } else seen.add(it);
  }
  return { fraction: dup / items.length, chars: total === 0 ? 0 : dupChars / total };
}

/** Characters covered by the most frequent word `n`-gram, over all word characters. */
function topNgramFraction(ws: string[], n: number, wordChars: number): number {
  if (ws.length < n || wordChars === 0) return 0;
  const counts = new Map<string, number>();
  let best = 0;
  let bestKey = "";
  for (let i = 0; i + n <= ws.length; i++) {
    const k = ws.slice(i, i + n).join(" ");
    const c = (counts.get(k) ?? 0) + 1;
    counts.set(k, c);
    if (c > best) {
      best = c;
      bestKey = k;
    }
  }
  if (best <= 1) return 0;
  const len = bestKey.length - (n - 1);
  return (best * len) / wordChars;
}

/** The resolved rules: defaults, overridden by `rules` (a rule set to `false` is off). */
export function resolveRules(rules: QualityRules = {}): Partial<Required<QualityRules>> {
  const out: Partial<Record<QualityRuleName, unknown>> = {};
  for (const name of QUALITY_RULE_NAMES) {
    const v = (rules as Record<string, unknown>)[name];
    if (v === false) continue;
    out[name] = v === undefined ? DEFAULT_QUALITY_RULES[name] : v;
  }
  return out as Partial<Required<QualityRules>>;
}

/** The names of the rules `text` fails (empty: it passes). */
export function failedRules(text: string, rules: Partial<Required<QualityRules>>): QualityRuleName[] {
  const failed: QualityRuleName[] = [];
  const ws = text.split(/\s+/).filter((w) => w.length > 0);
  let wordChars = 0;
  for (const w of ws) wordChars += w.length;
  const lines = text.split("\n");
  const nonEmptyLines = lines.map((l) => l.trim()).filter((l) => l.length > 0);
  const check = (name: QualityRuleName, value: number): void => {
    const b = rules[name] as Bounds | undefined;
    if (b && !inBounds(value, b)) failed.push(name);
  };
  check("wordCount", ws.length);
  if (rules.meanWordLength) check("meanWordLength", ws.length === 0 ? 0 : wordChars / ws.length);
  if (rules.symbolWordRatio) {
    const symbols = (text.match(/#/g)?.length ?? 0) + (text.match(/\.\.\.|…/g)?.length ?? 0);
    check("symbolWordRatio", ws.length === 0 ? 0 : symbols / ws.length);
  }
  if (rules.ellipsisLines) check("ellipsisLines", nonEmptyLines.length === 0 ? 0 : nonEmptyLines.filter((l) => ELLIPSIS_END.test(l)).length / nonEmptyLines.length);
  if (rules.bulletLines) check("bulletLines", nonEmptyLines.length === 0 ? 0 : lines.filter((l) => l.trim().length > 0 && BULLET.test(l)).length / nonEmptyLines.length);
  if (rules.alphabeticWords) check("alphabeticWords", ws.length === 0 ? 0 : ws.filter((w) => LETTER.test(w)).length / ws.length);
  if (rules.stopWords) {
    const present = new Set<string>();
    for (const w of ws) {
      const lw = w.toLowerCase().replace(/^[^\p{L}]+|[^\p{L}]+$/gu, "");
      if (STOP_WORDS.has(lw)) present.add(lw);
    }
    check("stopWords", present.size);
  }
  if (rules.duplicateLines || rules.duplicateLineChars) {
    const d = duplicates(nonEmptyLines);
    check("duplicateLines", d.fraction);
    check("duplicateLineChars", d.chars);
  }
  if (rules.duplicateParagraphs || rules.duplicateParagraphChars) {
    const paras = text
      .split(/\n\s*\n/)
      .map((p) => p.trim())
      .filter((p) => p.length > 0);
    const d = duplicates(paras);
    check("duplicateParagraphs", d.fraction);
    check("duplicateParagraphChars", d.chars);
  }
  const top = rules.topNgramCharFraction;
  if (top) {
    const lower = ws.map((w) => w.toLowerCase());
    for (const [n, max] of Object.entries(top)) {
      if (topNgramFraction(lower, Number(n), wordChars) > max) {
        failed.push("topNgramCharFraction");
        break;
      }
    }
  }
  return failed;
}
