// Batching of record streams: the unit the executor hands from a source through the fused
// operations to an output.

/** Records per batch. */
export const BATCH = 1024;

/**
 * `it` in arrays of {@link BATCH} records (the last one shorter). A synchronous iterable is read
 * without an `await` per record.
 */
export async function* batchesOf(it: Iterable<unknown> | AsyncIterable<unknown>): AsyncGenerator<unknown[], void, undefined> {
  let buf: unknown[] = [];
  if (Symbol.asyncIterator in it) {
    for await (const x of it) {
      buf.push(x);
      if (buf.length >= BATCH) {
        yield buf;
        buf = [];
      }
    }
  } else {
    for (const x of it) {
      buf.push(x);
      if (buf.length >= BATCH) {
        yield buf;
        buf = [];
      }
    }
  }
  if (buf.length > 0) yield buf;
}
