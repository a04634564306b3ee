// @marin/levanter/sharding — how data is split across data-parallel ranks, and the token-cache
// layout. zephyr loads this subpath with a dynamic import() without TensorFlow.js installed:
// nothing under src/sharding/ may import @tensorflow/* (enforced by .eslintrc.cjs).
export { shardFor } from "./shardFor.ts";
export { batchSlice, dataParallelMesh } from "./dataParallel.ts";
export type { DataParallelMesh } from "./dataParallel.ts";
export { ArrayTokenSource } from "./tokenSource.ts";
export type { TokenSource } from "./tokenSource.ts";
export { LEDGER_FILE, TOKEN_CACHE_FORMAT, TOKEN_CACHE_VERSION, shardFileName, tokenCacheLedgerSchema } from "./tokenCacheLayout.ts";
export type { ShardFooter, TokenCacheLedger } from "./tokenCacheLayout.ts";
export { TokenCacheShardWriter, finalizeTokenCache, writeTokenCacheShard } from "./tokenCacheWriter.ts";
export type { ShardSummary, TokenCacheShardOptions } from "./tokenCacheWriter.ts";
export { TokenCacheReader, readTokenCacheLedger } from "./tokenCacheReader.ts";
