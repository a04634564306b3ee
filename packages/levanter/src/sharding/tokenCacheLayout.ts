// The on-disk token cache, shared by its writers (zephyr, marin's tokenize step, tests) and its
// reader (the levanter trainer). Layout of a cache directory:
//
//   <dir>/ledger.json          written last, by finalizeTokenCache(): the cache's table of contents
//   <dir>/shard-00000.tokens   one file per shard, written by one writer and renamed into place
//   <dir>/shard-00001.tokens   …
//
// A shard file is self-describing, so a shard is committed by a single atomic rename (a shard
// written twice, say by a retried task, is replaced whole and never mixes two attempts):
//
//   [ tokens   : numTokens × uint32 LE ]          every document's ids, concatenated
//   [ offsets  : (numDocuments + 1) × uint64 LE ]  offsets[0] = 0, offsets[i + 1] = end of document i
//   [ footer   : UTF-8 JSON ShardFooter ]          {shard, numTokens, numDocuments, tokenizer, vocabSize}
//   [ uint32 LE: byte length of the footer JSON ]
//   [ 8 bytes  : magic "LVTOKv01" ]
//
// Tokens come first so that a writer streams them with bounded memory; offsets are positions in
// the shard's token array (not bytes). ledger.json repeats each shard's counts, so a reader checks
// every footer against it and refuses a cache whose shards changed after finalization.
import { z } from "@marin/iris/toolkit";
import { LevanterError } from "../errors.ts";
import { formatZodIssues } from "@marin/iris/toolkit";

/** File name of a cache's ledger. */
export const LEDGER_FILE = "ledger.json";
/** The `format` field of every ledger.json. */
export const TOKEN_CACHE_FORMAT = "levanter-token-cache";
/** The ledger/shard format version this code writes and reads. */
export const TOKEN_CACHE_VERSION = 1;
/** The 8 bytes that end every shard file. */
export const SHARD_MAGIC = "LVTOKv01";
/** Bytes after the footer JSON: its uint32 length and the magic. */
export const SHARD_TRAILER_BYTES = 12;

/** The file name of shard `index` (`shard-00003.tokens`). */
export function shardFileName(index: number): string {
  return `shard-${String(index).padStart(5, "0")}.tokens`;
}

/** Matches a shard file name; group 1 is its index. */
export const SHARD_FILE_PATTERN = /^shard-(\d{5,})\.tokens$/;

const nonNegInt = z.number().int().nonnegative();

/** The JSON footer of one shard file. */
export const shardFooterSchema = z.object({
  shard: nonNegInt,
  numTokens: nonNegInt,
  numDocuments: nonNegInt,
  tokenizer: z.string().min(1),
  vocabSize: z.number().int().positive(),
});

/** The JSON footer of one shard file (see the layout comment in tokenCacheLayout.ts). */
export type ShardFooter = z.infer<typeof shardFooterSchema>;

/** One shard as ledger.json records it. */
export const ledgerShardSchema = z.object({
  index: nonNegInt,
  file: z.string().regex(SHARD_FILE_PATTERN),
  numTokens: nonNegInt,
  numDocuments: nonNegInt,
});

/** The zod schema of ledger.json. */
export const tokenCacheLedgerSchema = z.object({
  format: z.literal(TOKEN_CACHE_FORMAT),
  version: z.literal(TOKEN_CACHE_VERSION),
  tokenizer: z.string().min(1),
  vocabSize: z.number().int().positive(),
  tokenDtype: z.literal("uint32"),
  shards: z.array(ledgerShardSchema),
  totalTokens: nonNegInt,
  totalDocuments: nonNegInt,
  finished: z.boolean(),
});

/** The contents of a token cache's ledger.json. */
export type TokenCacheLedger = z.infer<typeof tokenCacheLedgerSchema>;

/**
 * Validates a parsed ledger.json, throwing a DATA error that names the bad field
 * (`ledger.json totalTokens: …`), and checks that its totals add up.
 */
export function parseLedger(json: unknown, where: string): TokenCacheLedger {
  const parsed = tokenCacheLedgerSchema.safeParse(json);
  if (!parsed.success) {
    throw new LevanterError("DATA", `${where}: invalid ledger: ${formatZodIssues(parsed.error)}`);
  }
  const ledger = parsed.data;
  const tokens = ledger.shards.reduce((s, sh) => s + sh.numTokens, 0);
  const docs = ledger.shards.reduce((s, sh) => s + sh.numDocuments, 0);
  if (tokens !== ledger.totalTokens) {
    throw new LevanterError("DATA", `${where}: totalTokens: expected the sum of the shards (${tokens}), got ${ledger.totalTokens}`);
  }
  if (docs !== ledger.totalDocuments) {
    throw new LevanterError("DATA", `${where}: totalDocuments: expected the sum of the shards (${docs}), got ${ledger.totalDocuments}`);
  }
  ledger.shards.forEach((sh, i) => {
    if (sh.index !== i) throw new LevanterError("DATA", `${where}: shards.${i}.index: expected ${i}, got ${sh.index}`);
  });
  return ledger;
}
