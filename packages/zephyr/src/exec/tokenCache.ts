// The token-cache sink loads levanter's layout code only when used, through a dynamic import(),
// so zephyr runs without @marin/levanter installed (an optional peer dependency).
import { ZephyrError } from "../errors.ts";

/** The part of `@marin/levanter/sharding` the token-cache sink uses. */
export interface LevanterSharding {
  TokenCacheShardWriter: {
    open(
      dir: string,
      shard: number,
      options: { tokenizer: string; vocabSize: number },
    ): Promise<{
      writeDocument(ids: ArrayLike<number>): Promise<void>;
      close(): Promise<{ shard: number; file: string; numTokens: number; numDocuments: number }>;
      abort(): Promise<void>;
    }>;
  };
  finalizeTokenCache(dir: string, opts?: { numShards?: number }): Promise<{ totalTokens: number; totalDocuments: number }>;
  shardFileName(index: number): string;
}

/** Loads the levanter sharding module. */
export type LevanterShardingLoader = () => Promise<LevanterSharding>;

const defaultLoader: LevanterShardingLoader = () => import("@marin/levanter/sharding");
let loader: LevanterShardingLoader = defaultLoader;

/** Replaces the loader (tests prove the missing-package message with it); `undefined` restores it. */
export function setLevanterShardingLoader(next: LevanterShardingLoader | undefined): void {
  loader = next ?? defaultLoader;
}

/** Loads `@marin/levanter/sharding`, or says what to install. */
export async function loadLevanterSharding(): Promise<LevanterSharding> {
  try {
    return await loader();
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException)?.code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND" || /Cannot find (package|module)/.test(String((cause as Error)?.message))) {
      throw new ZephyrError(
        "MISSING_DEPENDENCY",
        "writeTokenCache needs the optional peer dependency @marin/levanter (its ./sharding subpath defines the token-cache layout): install @marin/levanter, e.g. `pnpm add @marin/levanter`",
        { cause },
      );
    }
    throw new ZephyrError("MISSING_DEPENDENCY", `loading @marin/levanter/sharding failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** The token ids of one record: an array or typed array of ids, or an object with `ids` or `tokens`. */
export function tokenIdsOf(record: unknown, position: number): ArrayLike<number> {
  if (Array.isArray(record) || ArrayBuffer.isView(record)) return record as unknown as ArrayLike<number>;
  if (record !== null && typeof record === "object") {
    const r = record as { ids?: unknown; tokens?: unknown };
    const ids = r.ids ?? r.tokens;
    if (Array.isArray(ids) || ArrayBuffer.isView(ids)) return ids as unknown as ArrayLike<number>;
  }
  throw new ZephyrError("BAD_RECORD", `writeTokenCache: record #${position} is not token ids (expected number[], a typed array, or {ids}/{tokens})`);
}
