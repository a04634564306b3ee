// @marin/levanter — language-model training on TensorFlow.js. The one public entry of the package
// (the token-cache layout and data-parallel sharding live on the `@marin/levanter/sharding` subpath).
export { LevanterError, LEVANTER_ERROR_CODES } from "./errors.ts";
export type { LevanterErrorCode } from "./errors.ts";

// --- backends, model, optimizer, trainer, generation (levanter-L1) ---
export { nativeGemmCalibration, type GemmCalibration } from "./kernels/native/addon.ts";
export { BACKEND_NAMES, installWasmFixes, matMul2d, measureMatMulGflops, oneHotFloat, parseBackendName, selectBackend } from "./backend.ts";
export type { TfBackendName, BackendSelection, SelectBackendOptions } from "./backend.ts";
export { setWasmThreads, wasmThreads } from "./kernels/batchMatMul.ts";
export { profileKernels } from "./kernels/profile.ts";
export type { KernelTime } from "./kernels/profile.ts";
export { ModelConfigSchema, flopsPerToken, resolveModelConfig, trainingFlopsPerToken } from "./models/modelConfig.ts";
export type { ModelConfig, ModelConfigInput, ResolvedModelConfig } from "./models/modelConfig.ts";
export { TransformerLm, defaultDecayMask } from "./models/transformer.ts";
export type { NamedParams } from "./models/transformer.ts";
export { AdamW } from "./optim/adamw.ts";
export type { AdamWOptions, AdamWScalars } from "./optim/adamw.ts";
export { OptimizerConfigSchema } from "./optim/optimizerConfig.ts";
export type { OptimizerConfig, OptimizerConfigInput } from "./optim/optimizerConfig.ts";
export { lrSchedule } from "./optim/schedule.ts";
export type { LrSchedule } from "./optim/schedule.ts";
export { trainLm } from "./trainer/trainLm.ts";
export { runTrainGang, submitTrainGang, trainGangSpec } from "./trainer/gangJob.ts";
export type { GangTrainResult, RunTrainGangOptions, TrainGangOptions } from "./trainer/gangJob.ts";
export type { TrainStepInfo, TrainHook, TrainLmOptions, TrainLmResult } from "./trainer/trainLm.ts";
export {
  DataConfigSchema,
  MixtureConfigSchema,
  TRACKER_NAMES,
  TrainLmConfigSchema,
  TrainerConfigSchema,
  formatIssues,
  parseTrainLmConfig,
} from "./trainer/trainerConfig.ts";
export type { DataConfig, TrainLmConfig, TrainLmConfigInput, TrainerConfig } from "./trainer/trainerConfig.ts";
export { applyOverrides, loadTrainLmConfig } from "./trainer/configFile.ts";
export { computeGradients } from "./trainer/gradients.ts";
export type { LossAndGrads } from "./trainer/gradients.ts";
export { evaluateCheckpoint, evaluateLm } from "./trainer/evaluate.ts";
export { tokenizerNamed } from "./data/tokenizerLookup.ts";
export type { EvalResult, EvaluateCheckpointOptions } from "./trainer/evaluate.ts";
export { loadModelFromCheckpoint, readTrainCheckpoint, saveTrainState } from "./checkpoint/trainState.ts";
export type { TrainState } from "./checkpoint/trainState.ts";
export { CompositeTracker, ConsoleTracker, JsonlTracker, TensorBoardTracker } from "./trainer/trackers.ts";
export type { Tracker } from "./trainer/trackers.ts";
export { TensorBoardWriter } from "./trainer/tensorboard.ts";
export { StatusReporter, formatStatus } from "./trainer/status.ts";
export type { StatusInput, StatusSink } from "./trainer/status.ts";
export { generate } from "./generate.ts";
export { exportHf, importHf, parseByteSize } from "./checkpoint/hfCheckpoint.ts";
export type { ExportHfOptions, ExportResult, ImportResult } from "./checkpoint/hfCheckpoint.ts";
export { exportGguf } from "./checkpoint/ggufExport.ts";
export type { ExportGgufResult } from "./checkpoint/ggufExport.ts";
export { NODE_LLAMA_CPP_VERSION, importNodeLlamaCpp, installNodeLlamaCpp } from "./models/nodeLlamaCpp.ts";
export type { LlamaSequence, NodeLlamaCpp } from "./models/nodeLlamaCpp.ts";
export type { GgufFileType } from "./models/gguf.ts";
export { Rng } from "./rng.ts";
export { initializeDistributed } from "./distributed.ts";
export type { Distributed, DistributedOptions } from "./distributed.ts";
export type { GenerateOptions, GenerateResult } from "./generate.ts";

// --- data, checkpoints (levanter-L2) ---
export { byteTokenizer, BYTE_EOS_ID } from "./data/byteTokenizer.ts";
export { bitsPerByte, encodeDocument } from "./data/tokenizer.ts";
export type { Tokenizer } from "./data/tokenizer.ts";
export { HfTokenizer, loadHfTokenizer, loadTokenizer } from "./data/hfTokenizer.ts";
export type { HfTokenizerFiles } from "./data/hfTokenizer.ts";
export { BYTE_LEVEL_CHARS, DEFAULT_EOS_TOKEN, MAX_TRAINED_VOCAB, TOKENIZER_FILES, trainBpeTokenizer, writeTrainedTokenizer } from "./data/trainTokenizer.ts";
export type { TrainBpeOptions, TrainedBpeTokenizer } from "./data/trainTokenizer.ts";
export { FeistelPermutation } from "./data/feistelPermutation.ts";
export { TokenLoader, ValidationBatches, countWindows } from "./data/tokenLoader.ts";
export { MixtureLoader } from "./data/mixtureLoader.ts";
export type { MixtureBatch, MixtureSource, MixtureStage } from "./data/mixtureLoader.ts";
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

// --- serving (inference engine + OpenAI-compatible server) ---
export { EngineBusyError, EngineRequestError, InferenceEngine, logprobOf, sampleToken } from "./inference/engine.ts";
export type { EngineChoice, EngineDelta, EngineOptions, EngineRequest, EngineResult, EngineStats, Logprobs, SubmitOptions } from "./inference/engine.ts";
export { BatchDecoder } from "./inference/decoder.ts";
export type { BatchDecoderOptions, DecodeRow } from "./inference/decoder.ts";
export { KvBudgetError, KvPool, SeqKv } from "./inference/kvPool.ts";
export type { KvLayout } from "./inference/kvPool.ts";
export { createInferenceServer } from "./serve/server.ts";
export type { InferenceServer, InferenceServerOptions } from "./serve/server.ts";
export { BUILTIN_CHAT_TEMPLATE, loadChatTemplate } from "./serve/chatTemplate.ts";
export type { ChatMessage, ChatTemplate } from "./serve/chatTemplate.ts";
export type { KvCache } from "./models/transformer.ts";
