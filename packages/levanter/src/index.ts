// @marin/levanter — language-model training on TensorFlow.js. The one public entry of the package
// (the token-cache layout and data-parallel sharding live on the `@marin/levanter/sharding` subpath).
export { LevanterError, LEVANTER_ERROR_CODES } from "./errors.ts";
export type { LevanterErrorCode } from "./errors.ts";

// --- data, checkpoints (levanter-L2) ---
export { byteTokenizer, BYTE_EOS_ID } from "./data/byteTokenizer.ts";
export { bitsPerByte, encodeDocument } from "./data/tokenizer.ts";
export type { Tokenizer } from "./data/tokenizer.ts";
export { HfTokenizer, loadHfTokenizer, loadTokenizer } from "./data/hfTokenizer.ts";
export type { HfTokenizerFiles } from "./data/hfTokenizer.ts";
export { FeistelPermutation } from "./data/feistelPermutation.ts";
export { TokenLoader, ValidationBatches, countWindows } from "./data/tokenLoader.ts";
export type { TokenBatch, TokenLoaderOptions } from "./data/tokenLoader.ts";
export { Checkpointer, checkpointerConfigSchema } from "./checkpoint/checkpointer.ts";
export type { CheckpointerConfig, CheckpointerConfigInput, SaveFn, SavedCheckpoint } from "./checkpoint/checkpointer.ts";
export {
  METADATA_FILE,
  checkpointDirName,
  findLatestCheckpoint,
  listCheckpoints,
  loadCheckpoint,
  readCheckpointMetadata,
  saveCheckpoint,
} from "./checkpoint/checkpointStore.ts";
export type { ArrayDtype, CheckpointMetadata, CheckpointPayload, FoundCheckpoint, LoadedCheckpoint, StoredArray } from "./checkpoint/checkpointStore.ts";
