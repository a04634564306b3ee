// The controller's cache of parsed job specs: least recently used first out, bounded in entries
// and in bytes (of the spec's JSON text), and emptied of a job's spec when the job ends.
import type { JobSpec } from "../jobSpec.ts";

/** Default bounds of a {@link SpecCache}. */
export const SPEC_CACHE_LIMITS = { entries: 1000, bytes: 64 * 1024 * 1024 } as const;

/** Parsed job specs by instance id, bounded (least recently used evicted first). */
export class SpecCache {
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  readonly #entries = new Map<string, { spec: JobSpec; bytes: number }>();
  #bytes = 0;

  constructor(limits: { entries?: number; bytes?: number } = {}) {
    this.#maxEntries = limits.entries ?? SPEC_CACHE_LIMITS.entries;
    this.#maxBytes = limits.bytes ?? SPEC_CACHE_LIMITS.bytes;
  }

  /** The cached spec (now the most recently used), or undefined. */
  get(instanceId: string): JobSpec | undefined {
    const e = this.#entries.get(instanceId);
    if (e === undefined) return undefined;
    this.#entries.delete(instanceId);
    this.#entries.set(instanceId, e);
    return e.spec;
  }

  /** Caches a spec whose JSON text is `bytes` long; a spec over the byte bound is not kept. */
  set(instanceId: string, spec: JobSpec, bytes: number): void {
    this.delete(instanceId);
    if (bytes > this.#maxBytes) return;
    this.#entries.set(instanceId, { spec, bytes });
    this.#bytes += bytes;
    for (const [id, e] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && this.#bytes <= this.#maxBytes) break;
      this.#entries.delete(id);
      this.#bytes -= e.bytes;
    }
  }

  /** Forgets a spec (its job ended). */
  delete(instanceId: string): void {
    const e = this.#entries.get(instanceId);
    if (e === undefined) return;
    this.#entries.delete(instanceId);
    this.#bytes -= e.bytes;
  }

  /** How many specs are cached and the bytes of their JSON text. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.#entries.size, bytes: this.#bytes };
  }
}
