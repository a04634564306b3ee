// An open-addressing table from a shuffle's 53-bit key hash to where that key's bytes are, for
// exact deduplication without a JavaScript string or Map entry per record. Several entries may
// share a hash: the caller's `same` decides by comparing key bytes, so a hash collision never
// merges two distinct keys.

/** Slots per entry kept at most this full before the table doubles. */
const MAX_LOAD = 0.5;
/** Idle tables a thread keeps for its next shards, and the largest it keeps. */
const SPARE_TABLES = 2;
const SPARE_MAX_BYTES = 64 * 1024 * 1024;
const spare: HashIndex[] = [];

/**
 * Hash → position table. Positions are non-negative integers below 2^53 (a record index, or a
 * segment · 2^32 + offset). Typed arrays only: 16 bytes a slot, no garbage per insert.
 *
 * @example
 * const seen = new HashIndex();
 * if (seen.insertUnlessFound(hash, i, (j) => sameKeyBytes(i, j)) < 0) keep(i);
 */
export class HashIndex {
  private hashes: Float64Array;
  /** Position + 1; 0 marks an empty slot. */
  private slots: Float64Array;
  private mask: number;
  private count = 0;

  /**
   * A cleared table, reused from a shard that finished on this thread when there is one: a shard's
   * table grows to ~2 × its keys, and growing it again for every shard (rehashing, and faulting in
   * fresh zeroed memory) cost ~0.5 CPU s per 1M-record run. Hand it back with {@link release}.
   */
  static acquire(): HashIndex {
    const reused = spare.pop();
    if (reused === undefined) return new HashIndex();
    reused.clear();
    return reused;
  }

  /** Returns a table nobody uses any more to this thread's spares (kept only while few and small). */
  static release(index: HashIndex): void {
    if (spare.length < SPARE_TABLES && index.bytes <= SPARE_MAX_BYTES && !spare.includes(index)) spare.push(index);
  }

  constructor(expected = 1024) {
    let cap = 16;
    while (cap * MAX_LOAD < expected) cap *= 2;
    this.hashes = new Float64Array(cap);
    this.slots = new Float64Array(cap);
    this.mask = cap - 1;
  }

  /** Entries held. */
  get size(): number {
    return this.count;
  }

  /** Bytes of the table's arrays (for memory budgets). */
  get bytes(): number {
    return this.slots.length * 16;
  }

  /**
   * Looks for an entry with `hash` for which `same(position)` holds; returns its position, or
   * -1 after inserting `position` under `hash`.
   */
  insertUnlessFound(hash: number, position: number, same: (existing: number) => boolean): number {
    const hashes = this.hashes;
    const slots = this.slots;
    const mask = this.mask;
    // The hash's low 32 bits pick the slot (ToUint32 is exact for integers below 2^53).
    let i = (hash >>> 0) & mask;
    for (;;) {
      const s = slots[i];
      if (s === 0) break;
      if (hashes[i] === hash && same(s - 1)) return s - 1;
      i = (i + 1) & mask;
    }
    hashes[i] = hash;
    slots[i] = position + 1;
    if (++this.count > slots.length * MAX_LOAD) this.grow();
    return -1;
  }

  /** Forgets every entry (keeps the capacity). */
  clear(): void {
    if (this.count === 0) return;
    this.slots.fill(0);
    this.count = 0;
  }

  private grow(): void {
    const oldHashes = this.hashes;
    const oldSlots = this.slots;
    const cap = oldSlots.length * 2;
    const hashes = new Float64Array(cap);
    const slots = new Float64Array(cap);
    const mask = cap - 1;
    for (let j = 0; j < oldSlots.length; j++) {
      const s = oldSlots[j];
      if (s === 0) continue;
      const h = oldHashes[j];
      let i = (h >>> 0) & mask;
      while (slots[i] !== 0) i = (i + 1) & mask;
      hashes[i] = h;
      slots[i] = s;
    }
    this.hashes = hashes;
    this.slots = slots;
    this.mask = mask;
  }
}
