// Which shards a data-parallel rank reads (round-robin).
import { LevanterError } from "../errors.ts";

/**
 * The shard indexes that data-parallel rank `rank` of `world` reads, out of `numShards`: shards
 * are dealt round-robin (`rank`, `rank + world`, …), so every shard has exactly one reader.
 *
 * @example shardFor(1, 4, 10) // → [1, 5, 9]
 */
export function shardFor(rank: number, world: number, numShards: number): number[] {
  if (!Number.isInteger(world) || world < 1) {
    throw new LevanterError("INVALID_CONFIG", `world: expected a positive integer, got ${world}`);
  }
  if (!Number.isInteger(rank) || rank < 0 || rank >= world) {
    throw new LevanterError("INVALID_CONFIG", `rank: expected an integer in [0, ${world}), got ${rank}`);
  }
  if (!Number.isInteger(numShards) || numShards < 0) {
    throw new LevanterError("INVALID_CONFIG", `numShards: expected a non-negative integer, got ${numShards}`);
  }
  const out: number[] = [];
  for (let s = rank; s < numShards; s += world) out.push(s);
  return out;
}
