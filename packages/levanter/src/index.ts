// @marin/levanter — language-model training on TensorFlow.js: the public surface the README
// documents (at most 60 names). Other entries:
//   @marin/levanter/serve     the OpenAI-compatible server and the inference engine under it
//   @marin/levanter/sharding  the token-cache layout and data-parallel sharding (no tfjs)
//   @marin/levanter/internals building blocks for benchmarks and tools (no stability promise)
export { LevanterError, LEVANTER_ERROR_CODES } from "./errors.ts";
export type { LevanterErrorCode } from "./errors.ts";

// --- backends ---
export { BACKEND_NAMES, selectBackend } from "./backend.ts";
export type { TfBackendName } from "./backend.ts";
export { nativeGemmCalibration } from "./kernels/native/addon.ts";
export { setWasmThreads } from "./kernels/wasm/batchMatMul.ts";
export { profileKernels } from "./kernels/profile.ts";

// --- model, optimizer ---
export { ModelConfigSchema, flopsPerToken, resolveModelConfig } from "./models/modelConfig.ts";
export type { ModelConfigInput, ResolvedModelConfig } from "./models/modelConfig.ts";
export { TransformerLm, defaultDecayMask } from "./models/transformer.ts";
export { AdamW } from "./optim/adamw.ts";
export { OptimizerConfigSchema } from "./optim/optimizerConfig.ts";
export type { OptimizerConfigInput } from "./optim/optimizerConfig.ts";
export { lrSchedule } from "./optim/schedule.ts";
export { Rng } from "./rng.ts";

// --- training ---
export { trainLm } from "./trainer/trainLm.ts";
export type { TrainHook, TrainLmOptions } from "./trainer/trainLm.ts";
export { TrainLmConfigSchema, TrainerConfigSchema } from "./trainer/trainerConfig.ts";
export type { TrainLmConfigInput } from "./trainer/trainerConfig.ts";
export { loadTrainLmConfig } from "./trainer/configFile.ts";
export { runTrainGang, submitTrainGang, trainGangSpec } from "./trainer/gangJob.ts";

// --- evaluation, generation ---
export { evaluateCheckpoint, evaluateLm } from "./trainer/evaluate.ts";
export { generate } from "./generate.ts";
export type { GenerateOptions } from "./generate.ts";

// --- checkpoints, import/export ---
export { loadModelFromCheckpoint, saveTrainState } from "./checkpoint/trainState.ts";
export { Checkpointer } from "./checkpoint/checkpointer.ts";
export { findLatestCheckpoint, listCheckpoints, loadCheckpoint, readCheckpointMetadata, saveCheckpoint } from "./checkpoint/checkpointStore.ts";
export { exportHf, importHf, parseByteSize } from "./checkpoint/hfCheckpoint.ts";
export { exportGguf } from "./checkpoint/ggufExport.ts";

// --- data, tokenizers ---
export { byteTokenizer } from "./data/byteTokenizer.ts";
export { bitsPerByte, encodeDocument } from "./data/tokenizer.ts";
export type { Tokenizer } from "./data/tokenizer.ts";
export { HfTokenizer, loadHfTokenizer, loadTokenizer } from "./data/hfTokenizer.ts";
export { tokenizerNamed } from "./data/tokenizerLookup.ts";
export { trainBpeTokenizer, writeTrainedTokenizer } from "./data/trainTokenizer.ts";
export { TokenLoader, ValidationBatches } from "./data/tokenLoader.ts";
export { MixtureLoader } from "./data/mixtureLoader.ts";
