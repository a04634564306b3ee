// Plain text: one record per line.
import { badLine, lineBlocks } from "./lineBlocks.ts";
import type { BadRecord, BadRecordPolicy, InvalidUtf8Policy, ReadStats } from "./lineBlocks.ts";

/** Options of {@link readTextBatches} and {@link readText}. */
export interface ReadTextOptions {
  /**
   * `"fail"` (default): a bad line (invalid UTF-8, longer than 256 MiB) throws
   * `ZephyrError("BAD_RECORD")` as `FILE:LINE: why`. `"skip"`: drop the line and count it.
   */
  onBadRecord?: BadRecordPolicy;
  /** `"badRecord"` (default): invalid UTF-8 makes the line bad. `"replace"`: read it with U+FFFD instead. */
  invalidUtf8?: InvalidUtf8Policy;
  /** Called for every skipped line (only under `"skip"`). */
  onSkip?: (bad: BadRecord) => void;
  /** Incremented for every skipped line (only under `"skip"`). */
  stats?: ReadStats;
}

/**
 * Streams the lines of a text file (compression by extension) as arrays of strings, one array per
 * ~64 KiB of decompressed text. Each line loses its "\n" and a trailing "\r"; empty lines are kept
 * (they are records), but the file's final newline does not produce an extra empty line. A batch
 * is never empty.
 *
 * Records are plain strings; wrapping them (for example as `{ text }`) is the Dataset's choice.
 */
export async function* readTextBatches(filePath: string, options: ReadTextOptions = {}): AsyncGenerator<string[], void, undefined> {
  let line = 1;
  for await (const block of lineBlocks(filePath, { invalidUtf8: options.invalidUtf8 })) {
    let lines = block.text.split("\n");
    const first = line;
    line += lines.length;
    for (let i = 0; i < lines.length; i++) {
      const l = lines[i];
      if (l.endsWith("\r")) lines[i] = l.slice(0, -1);
    }
    if (block.bad) {
      for (const b of block.bad) badLine(filePath, first + b.index, b.reason, undefined, options);
      const drop = new Set(block.bad.map((b) => b.index));
      lines = lines.filter((_, i) => !drop.has(i));
    }
    if (lines.length > 0) yield lines;
  }
}

/** Streams the lines of a text file one at a time; see {@link readTextBatches}. */
export async function* readText(filePath: string, options: ReadTextOptions = {}): AsyncGenerator<string, void, undefined> {
  for await (const batch of readTextBatches(filePath, options)) yield* batch;
}
