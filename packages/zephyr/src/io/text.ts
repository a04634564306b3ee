// Plain text: one record per line.
import { lineBlocks } from "./lineBlocks.ts";

/**
 * Streams the lines of a text file (compression by extension) as arrays of strings, one array per
 * ~64 KiB of decompressed text. Each line loses its "\n" and a trailing "\r"; empty lines are kept
 * (they are records), but the file's final newline does not produce an extra empty line.
 *
 * Records are plain strings; wrapping them (for example as `{ text }`) is the Dataset's choice.
 */
export async function* readTextBatches(filePath: string): AsyncGenerator<string[], void, undefined> {
  for await (const block of lineBlocks(filePath)) {
    const lines = block.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line.endsWith("\r")) lines[i] = line.slice(0, -1);
    }
    yield lines;
  }
}

/** Streams the lines of a text file one at a time; see {@link readTextBatches}. */
export async function* readText(filePath: string): AsyncGenerator<string, void, undefined> {
  for await (const batch of readTextBatches(filePath)) yield* batch;
}
