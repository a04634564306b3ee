// Splits a (possibly compressed) text file into blocks of whole lines, the unit both the JSONL and
// the text reader work on: one block per decompressed chunk (~64 KiB), so the per-line cost is a
// slice and nothing else: no promise, no readline event per line.
import { StringDecoder } from "node:string_decoder";
import { ZephyrError } from "../errors.ts";
import { openDecompressed } from "./files.ts";

/**
 * Yields the lines of `filePath` in blocks: each block is consecutive whole lines joined by "\n"
 * (without the final newline; "\r" of CRLF files is kept), so a block with n newlines holds n + 1
 * lines and line numbers simply continue from block to block. The file's final newline does not
 * start an extra (empty) line, and a leading UTF-8 byte order mark is dropped. Read or codec
 * failures become `ZephyrError("IO")` naming the file.
 */
export async function* lineBlocks(filePath: string): AsyncGenerator<string, void, undefined> {
  const decoder = new StringDecoder("utf8");
  let carry = "";
  const stream = openDecompressed(filePath);
  try {
    let first = true;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let text = carry + decoder.write(chunk);
      if (first && text.length > 0) {
        // A UTF-8 byte order mark is not part of the first line.
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        first = false;
      }
      const end = text.lastIndexOf("\n");
      if (end < 0) {
        carry = text;
        continue;
      }
      carry = text.slice(end + 1);
      yield text.slice(0, end);
    }
    const rest = carry + decoder.end();
    if (rest.length > 0) yield rest;
  } catch (cause) {
    if (cause instanceof ZephyrError) throw cause;
    throw new ZephyrError("IO", `reading ${filePath} failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  } finally {
    stream.destroy();
  }
}
