// HashIndex against a Map (property tests).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HashIndex } from "./hashIndex.ts";

describe("HashIndex", () => {
  it("finds the first position of each key and keeps keys with equal hashes apart (against a Map)", () => {
    fc.assert(
      fc.property(
        // Few distinct hashes (many collisions), including hashes above 2^32 and 0.
        fc.array(fc.tuple(fc.constantFrom(0, 1, 7, 2 ** 40 + 7, 2 ** 53 - 1), fc.integer({ min: 0, max: 30 })), { maxLength: 400 }),
        fc.integer({ min: 1, max: 64 }),
        (entries, expected) => {
          const index = new HashIndex(expected);
          const keys: string[] = [];
          const first = new Map<string, number>();
          for (const [hash, k] of entries) {
            // A key determines its hash, as with real keys; distinct keys may share a hash.
            const key = `${hash}:${k}`;
            const position = keys.length;
            keys.push(key);
            const found = index.insertUnlessFound(hash, position, (other) => keys[other] === key);
            expect(found).toBe(first.get(key) ?? -1);
            if (!first.has(key)) first.set(key, position);
          }
          expect(index.size).toBe(first.size);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("grows past its first capacity, and forgets everything on clear", () => {
    const index = new HashIndex(4);
    const before = index.bytes;
    const n = 10_000;
    for (let i = 0; i < n; i++) expect(index.insertUnlessFound(i * 2654435761, i, () => true)).toBe(-1);
    expect(index.size).toBe(n);
    expect(index.bytes).toBeGreaterThan(before);
    for (let i = 0; i < n; i += 97) expect(index.insertUnlessFound(i * 2654435761, n + i, (p) => p === i)).toBe(i);
    index.clear();
    expect(index.size).toBe(0);
    expect(index.insertUnlessFound(0, 5, () => true)).toBe(-1);
  });

  it("hands a released table to the next shard on this thread, emptied", () => {
    const a = HashIndex.acquire();
    for (let i = 0; i < 5000; i++) a.insertUnlessFound(i, i, () => false);
    const grown = a.bytes;
    HashIndex.release(a);
    HashIndex.release(a); // a second release of the same table is ignored
    const b = HashIndex.acquire();
    expect(b).toBe(a);
    expect(b.size).toBe(0);
    expect(b.bytes).toBe(grown);
    expect(b.insertUnlessFound(7, 1, () => true)).toBe(-1);
    expect(HashIndex.acquire()).not.toBe(b);
  });
});
