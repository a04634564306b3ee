// The OpenAI-compatible wire protocol `levanter serve` speaks, as zod schemas and their types: the
// one definition the server validates requests with and clients (marin's) parse responses with.
// It imports nothing but zod (from iris's toolkit), so a client loads it without TensorFlow.js
// (`@marin/levanter/serve/openai`; the same names are exported from `@marin/levanter/serve`).
import { z } from "@marin/iris/toolkit";

// --- requests (the server validates them) ---

const StopSchema = z.union([z.string(), z.array(z.string()).max(4)]).nullish();
const SamplingFields = {
  model: z.string().optional(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  top_k: z.number().int().min(1).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  seed: z.number().int().nullish(),
  stop: StopSchema,
  stream: z.boolean().nullish(),
  user: z.string().optional(),
};

/** `POST /v1/completions`: a prompt (text, texts, or token ids) and sampling settings. */
export const CompletionRequestSchema = z.object({
  ...SamplingFields,
  prompt: z.union([z.string(), z.array(z.string()).min(1), z.array(z.number().int().nonnegative()).min(1)]),
  max_tokens: z.number().int().min(0).nullish(),
  echo: z.boolean().nullish(),
  logprobs: z.number().int().min(0).max(20).nullish(),
});
export type CompletionRequest = z.input<typeof CompletionRequestSchema>;

/** A chat message's content: text, or text parts. */
export const ChatContentSchema = z.union([z.string(), z.array(z.object({ type: z.literal("text"), text: z.string() }))]);
export type ChatContent = z.infer<typeof ChatContentSchema>;

/** One message of a chat request. */
export const ChatRequestMessageSchema = z.object({ role: z.enum(["system", "user", "assistant", "developer", "tool"]), content: ChatContentSchema.nullable() });

/** `POST /v1/chat/completions`: messages (rendered by the model's chat template) and sampling settings. */
export const ChatCompletionRequestSchema = z.object({
  ...SamplingFields,
  messages: z.array(ChatRequestMessageSchema).min(1),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
});
export type ChatCompletionRequest = z.input<typeof ChatCompletionRequestSchema>;

/** `POST /tokenize`: a prompt, or messages rendered by the chat template. */
export const TokenizeRequestSchema = z.union([
  z.object({ prompt: z.string(), model: z.string().optional() }),
  z.object({ messages: ChatCompletionRequestSchema.shape.messages, model: z.string().optional() }),
]);
export type TokenizeRequest = z.input<typeof TokenizeRequestSchema>;

// --- responses (clients parse them) ---

/** One model of `GET /v1/models` (`max_model_len`: prompt plus generated tokens at most; levanter's addition, as vLLM's). */
export const ModelCardSchema = z.object({
  id: z.string(),
  object: z.literal("model"),
  created: z.number(),
  owned_by: z.string(),
  max_model_len: z.number().int().optional(),
});
export type ModelCard = z.infer<typeof ModelCardSchema>;

/** `GET /v1/models`. */
export const ModelListSchema = z.object({ object: z.literal("list"), data: z.array(ModelCardSchema) });
export type ModelList = z.infer<typeof ModelListSchema>;

/** Token counts of a finished request. */
export const UsageSchema = z.object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() });
export type Usage = z.infer<typeof UsageSchema>;

/** Log probabilities in the legacy completions shape (`token_logprobs[0]` is null for an echoed prompt). */
export const CompletionLogprobsSchema = z.object({
  tokens: z.array(z.string()),
  token_logprobs: z.array(z.number().nullable()),
  top_logprobs: z.array(z.record(z.string(), z.number()).nullable()),
  text_offset: z.array(z.number().int()),
});
export type CompletionLogprobs = z.infer<typeof CompletionLogprobsSchema>;

/** Why a choice ended (null while streaming). */
export const FinishReasonSchema = z.enum(["stop", "length"]).nullable();

const CompletionChoiceSchema = z.object({ index: z.number().int(), text: z.string(), logprobs: CompletionLogprobsSchema.nullable(), finish_reason: FinishReasonSchema });

/** `POST /v1/completions` answer (without `stream`). */
export const CompletionResponseSchema = z.object({
  id: z.string(),
  object: z.literal("text_completion"),
  created: z.number(),
  model: z.string(),
  choices: z.array(CompletionChoiceSchema),
  usage: UsageSchema,
});
export type CompletionResponse = z.infer<typeof CompletionResponseSchema>;

/** One `data:` event of a streamed completion. */
export const CompletionChunkSchema = CompletionResponseSchema.omit({ usage: true });
export type CompletionChunk = z.infer<typeof CompletionChunkSchema>;

const TokenLogprobSchema = z.object({ token: z.string(), logprob: z.number(), bytes: z.array(z.number().int()).nullable() });

/** Chat log probabilities: per generated token, its logprob and the alternatives asked for. */
export const ChatLogprobsSchema = z.object({
  content: z.array(TokenLogprobSchema.extend({ logprob: z.number().nullable(), top_logprobs: z.array(TokenLogprobSchema) })),
});
export type ChatLogprobs = z.infer<typeof ChatLogprobsSchema>;

/** `POST /v1/chat/completions` answer (without `stream`). */
export const ChatCompletionResponseSchema = z.object({
  id: z.string(),
  object: z.literal("chat.completion"),
  created: z.number(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      message: z.object({ role: z.literal("assistant"), content: z.string().nullable() }),
      logprobs: ChatLogprobsSchema.nullable(),
      finish_reason: FinishReasonSchema,
    }),
  ),
  usage: UsageSchema,
});
export type ChatCompletionResponse = z.infer<typeof ChatCompletionResponseSchema>;

/** One `data:` event of a streamed chat completion: the role first, then content deltas, then the finish reason. */
export const ChatCompletionChunkSchema = z.object({
  id: z.string(),
  object: z.literal("chat.completion.chunk"),
  created: z.number(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      delta: z.object({ role: z.literal("assistant").optional(), content: z.string().optional() }),
      logprobs: ChatLogprobsSchema.nullable(),
      finish_reason: FinishReasonSchema,
    }),
  ),
});
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunkSchema>;

/** `POST /tokenize` answer. */
export const TokenizeResponseSchema = z.object({ tokens: z.array(z.number().int()), count: z.number().int(), max_model_len: z.number().int() });
export type TokenizeResponse = z.infer<typeof TokenizeResponseSchema>;

/** The `type` of an error answer. */
export const OpenAiErrorTypeSchema = z.enum(["invalid_request_error", "rate_limit_error", "conflict_error", "service_unavailable", "server_error"]);
export type OpenAiErrorType = z.infer<typeof OpenAiErrorTypeSchema>;

/** Every error answer (and a streamed request's last event when it fails). */
export const ErrorResponseSchema = z.object({
  error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string().nullable() }),
});
export type ErrorResponse = z.infer<typeof ErrorResponseSchema>;

/** The data of the event that ends every stream. */
export const STREAM_DONE = "[DONE]";

/**
 * Parses a response body with `schema`; on a mismatch, `fail` gets a message naming the first
 * field at fault (and the server's error message when the body is an error answer).
 */
export function parseResponse<S extends z.ZodType>(schema: S, body: unknown, fail: (message: string) => Error): z.output<S> {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const err = ErrorResponseSchema.safeParse(body);
  if (err.success) throw fail(err.data.error.message);
  const issue = r.error.issues[0]!;
  throw fail(`${issue.path.length ? issue.path.join(".") : "body"}: ${issue.message}`);
}
