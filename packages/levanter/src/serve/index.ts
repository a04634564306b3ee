// @marin/levanter/serve — serving: the OpenAI-compatible server (serve/) over the inference engine
// (inference/: continuous batching, KV buffers, sampling, decode kernels), and the OpenAI wire
// protocol's zod schemas (also on `@marin/levanter/serve/openai`, which loads no TensorFlow.js).
export { createInferenceServer, DEFAULT_MAX_BODY_BYTES } from "./server.ts";
export type { InferenceServer, InferenceServerOptions } from "./server.ts";
export { BUILTIN_CHAT_TEMPLATE, loadChatTemplate } from "./chatTemplate.ts";
export type { ChatMessage, ChatTemplate } from "./chatTemplate.ts";
export * from "./openai.ts";

export { EngineBusyError, EngineRequestError, InferenceEngine } from "../inference/engine.ts";
export type { EngineChoice, EngineDelta, EngineOptions, EngineRequest, EngineResult, EngineStats, Logprobs, SubmitOptions } from "../inference/engine.ts";
export { logprobOf, sampleToken } from "../inference/sampling.ts";
export { BatchDecoder } from "../inference/decoder.ts";
export type { BatchDecoderOptions, DecodeRow } from "../inference/decoder.ts";
export { KvBudgetError, KvPool, SeqKv } from "../inference/kvPool.ts";
export type { KvLayout } from "../inference/kvPool.ts";
export type { KvCache } from "../models/transformer.ts";
