// The OpenAI-compatible HTTP server over an InferenceEngine (Hono on node:http): routes, validation, SSE, queue limits, metrics.
import { createAdaptorServer } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono, type Context } from "hono";
import { streamSSE } from "hono/streaming";
import { ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { Histogram, LabeledCounter, PrometheusText } from "@marin/iris/toolkit";
import { z } from "@marin/iris/toolkit";
import { BUILTIN_CHAT_TEMPLATE, loadChatTemplate, type ChatTemplate } from "./chatTemplate.ts";
import { LevanterError } from "../errors.ts";
import { EngineRequestError, InferenceEngine, type EngineOptions, type EngineRequest, type EngineResult, type Logprobs } from "../inference/engine.ts";
import {
  ChatCompletionRequestSchema as ChatBody,
  CompletionRequestSchema as CompletionBody,
  TokenizeRequestSchema as TokenizeBody,
  type ChatCompletionChunk,
  type ChatCompletionResponse,
  type ChatContent,
  type ChatLogprobs,
  type CompletionChunk,
  type CompletionResponse,
  type ErrorResponse,
  type ModelList,
  type OpenAiErrorType,
  type TokenizeResponse,
} from "./openai.ts";

/** Options of {@link createInferenceServer}. */
export interface InferenceServerOptions {
  /** A `step-N` checkpoint or a folder of them (the newest complete one); loaded after the port is bound. */
  checkpoint?: string;
  /** An engine (or one being made) instead of `checkpoint`, e.g. in tests. */
  engine?: InferenceEngine | Promise<InferenceEngine>;
  /** HF tokenizer.json for non-byte checkpoints; its tokenizer_config.json's chat template is used. */
  tokenizerJson?: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** The id `/v1/models` reports (default: the checkpoint path). */
  modelId?: string;
  /** Engine limits (batch, queue, KV budget). */
  engineOptions?: EngineOptions;
  /** Seconds a 429 tells the client to wait (default 1). */
  retryAfterSeconds?: number;
  /** Largest request body in bytes (default {@link DEFAULT_MAX_BODY_BYTES}, 16 MiB); a larger one is 413 before it is read. */
  maxBodyBytes?: number;
  /**
   * Largest prompt in UTF-8 bytes (each completion prompt; a chat's messages together), checked
   * before tokenizing (default: 32 bytes per token of the model's context, at least 64 KiB).
   */
  maxPromptBytes?: number;
  /** Prompts × `n` of one request at most (default 128); more is 400 before anything is tokenized. */
  maxSequencesPerRequest?: number;
  /**
   * Sequences (prompts × `n`) one client (remote address) may have queued or running at once
   * (default: half the engine's queue, at least 1); beyond it 429, so no client fills the queue.
   */
  maxSequencesPerClient?: number;
}

const POST_ROUTES = new Set(["/v1/completions", "/v1/chat/completions", "/tokenize"]);

/** Default {@link InferenceServerOptions.maxBodyBytes}: 16 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 16 * 2 ** 20;

/** A running server. */
export interface InferenceServer {
  /** `http://host:port` (no trailing slash; the OpenAI base URL is `${url}/v1`). */
  readonly url: string;
  readonly port: number;
  /** Resolves when the model is loaded (rejects if loading failed; `/health` then answers 500). */
  readonly ready: Promise<void>;
  /** The engine, once loaded. */
  engine(): InferenceEngine | undefined;
  /** Stops accepting connections, cancels what runs and frees the model. */
  close(): Promise<void>;
}

class HttpError extends Error {
  readonly status: 400 | 404 | 409 | 413 | 415 | 429 | 500 | 503;
  readonly type: OpenAiErrorType;
  readonly param: string | null;
  readonly code: string | null;
  constructor(status: HttpError["status"], message: string, type: OpenAiErrorType, param: string | null = null, code: string | null = null) {
    super(message);
    this.status = status;
    this.type = type;
    this.param = param;
    this.code = code;
  }
}

function errorBody(e: HttpError): ErrorResponse {
  return { error: { message: e.message, type: e.type, param: e.param, code: e.code } };
}

const TTFT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

// Prometheus text exposition (a handful of series).
class Metrics {
  readonly requests = new LabeledCounter();
  readonly ttft = new Histogram(TTFT_BUCKETS);
  private readonly samples: { t: number; tokens: number }[] = [];

  request(route: string, status: number): void {
    this.requests.inc({ route, status });
  }

  observeTtft(seconds: number): void {
    this.ttft.observe(seconds);
  }

  // Generated tokens per second over the last ~10 s of snapshots.
  sample(tokens: number): void {
    this.samples.push({ t: performance.now(), tokens });
    while (this.samples.length > 11) this.samples.shift();
  }

  render(engine: InferenceEngine | undefined): string {
    const page = new PrometheusText();
    page.family("levanter_serve_requests_total", "counter", "HTTP requests by route and status.", this.requests.samples("levanter_serve_requests_total"));
    const s = engine?.stats();
    page.single("levanter_serve_queue_depth", "gauge", "Requests waiting for a batch slot.", s?.queued ?? 0);
    page.single("levanter_serve_active_sequences", "gauge", "Sequences in the running batch.", s?.active ?? 0);
    page.single("levanter_serve_generated_tokens_total", "counter", "Tokens generated.", s?.generatedTokens ?? 0);
    page.single("levanter_serve_prompt_tokens_total", "counter", "Prompt tokens prefilled.", s?.promptTokens ?? 0);
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    const rate = first && last && last.t > first.t ? ((last.tokens - first.tokens) * 1000) / (last.t - first.t) : 0;
    page.single("levanter_serve_tokens_per_second", "gauge", "Generated tokens per second over the last 10 s.", rate);
    page.single("levanter_serve_kv_cache_reserved_bytes", "gauge", "KV cache bytes reserved by running sequences.", s?.kvReservedBytes ?? 0);
    page.single("levanter_serve_kv_cache_budget_bytes", "gauge", "KV cache memory budget.", s?.kvBudgetBytes ?? 0);
    page.family(
      "levanter_serve_time_to_first_token_seconds",
      "histogram",
      "Seconds from submission to the first generated token.",
      this.ttft.samples("levanter_serve_time_to_first_token_seconds"),
    );
    return page.text();
  }
}

function shiftLogprobs(lp: Logprobs, by: number): Logprobs {
  return { ...lp, text_offset: lp.text_offset.map((o) => o + by) };
}

function concatLogprobs(a: Logprobs, b: Logprobs): Logprobs {
  return {
    tokens: [...a.tokens, ...b.tokens],
    token_logprobs: [...a.token_logprobs, ...b.token_logprobs],
    top_logprobs: [...a.top_logprobs, ...b.top_logprobs],
    text_offset: [...a.text_offset, ...b.text_offset],
  };
}

function chatLogprobs(lp: Logprobs | undefined, top: number): ChatLogprobs | null {
  if (!lp) return null;
  const bytes = (s: string) => [...Buffer.from(s, "utf8")];
  return {
    content: lp.tokens.map((token, i) => ({
      token,
      logprob: lp.token_logprobs[i],
      bytes: bytes(token),
      top_logprobs: top > 0 ? Object.entries(lp.top_logprobs[i] ?? {}).map(([t, l]) => ({ token: t, logprob: l, bytes: bytes(t) })) : [],
    })),
  };
}

/**
 * Starts an OpenAI-compatible server: binds `host:port` first (so `/health` answers 503 while the
 * model loads), then loads the checkpoint. Routes: `GET /health`, `GET /v1/models`,
 * `POST /v1/completions`, `POST /v1/chat/completions`, `POST /tokenize`, `GET /metrics`.
 *
 * @example const server = await createInferenceServer({ checkpoint: "runs/tiny/checkpoints", port: 8000 }); await server.ready;
 */
export async function createInferenceServer(opts: InferenceServerOptions): Promise<InferenceServer> {
  if (!opts.engine && !opts.checkpoint) throw new EngineRequestError("createInferenceServer: give checkpoint or engine", "checkpoint");
  let engine: InferenceEngine | undefined;
  let template: ChatTemplate = BUILTIN_CHAT_TEMPLATE;
  let loadError: unknown;
  const active = new Set<string>();
  const metrics = new Metrics();
  const retryAfter = String(opts.retryAfterSeconds ?? 1);
  const created = Math.floor(Date.now() / 1000);
  const app = new Hono();

  const need = (): InferenceEngine => {
    if (engine) return engine;
    if (loadError) throw new HttpError(500, `the model failed to load: ${String((loadError as Error).message ?? loadError)}`, "server_error", null, "model_load_failed");
    throw new HttpError(503, "the model is still loading", "service_unavailable", null, "model_loading");
  };

  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const tooLarge = () => new HttpError(413, `the request body is larger than ${maxBody} bytes (the server's limit)`, "invalid_request_error", null, "request_too_large");
  // The body, read up to the limit (a larger one stops being read at once: 413).
  const readBody = async (c: Context): Promise<string> => {
    const body = c.req.raw.body;
    if (!body) return "";
    const reader = body.getReader();
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > maxBody) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      chunks.push(value);
    }
    return Buffer.concat(chunks).toString("utf8");
  };

  const parse = async <S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> => {
    const text = await readBody(c);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new HttpError(400, "the request body is not valid JSON", "invalid_request_error", null, "invalid_json");
    }
    const r = schema.safeParse(body);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      const param = issue.path.length ? issue.path.join(".") : null;
      throw new HttpError(400, `${param ?? "body"}: ${issue.message}`, "invalid_request_error", param, "invalid_value");
    }
    return r.data;
  };

  const fail = (c: Context, route: string, e: unknown): Response => {
    const err =
      e instanceof HttpError
        ? e
        : e instanceof LevanterError && e.code === "ENGINE_BUSY"
          ? new HttpError(429, e.message, "rate_limit_error", null, "rate_limit_exceeded")
          : e instanceof LevanterError && e.code === "INVALID_REQUEST"
            ? new HttpError(400, e.message, "invalid_request_error", e instanceof EngineRequestError ? e.param : null, "invalid_value")
            : new HttpError(500, e instanceof Error ? e.message : String(e), "server_error");
    metrics.request(route, err.status);
    if (err.status === 429) c.header("Retry-After", retryAfter);
    // The rest of a body too large is not read: the connection ends with the answer.
    if (err.status === 413) c.header("Connection", "close");
    return c.json(errorBody(err), err.status);
  };

  // Prompt size in UTF-8 bytes, before any tokenizing (a UTF-16 unit is at least one byte).
  const promptLimit = (e: InferenceEngine) => opts.maxPromptBytes ?? Math.max(64 * 1024, 32 * e.maxContext);
  const checkPromptBytes = (e: InferenceEngine, texts: readonly string[], param: string) => {
    const limit = promptLimit(e);
    let total = 0;
    for (const t of texts) {
      total += t.length > limit ? t.length : Buffer.byteLength(t, "utf8");
      if (total > limit)
        throw new HttpError(
          400,
          `${param}: more than ${limit} bytes of prompt (the server's limit, checked before tokenizing)`,
          "invalid_request_error",
          param,
          "prompt_too_large",
        );
    }
  };
  const perRequest = opts.maxSequencesPerRequest ?? 128;
  const checkSequences = (prompts: number, n: number) => {
    if (prompts * n > perRequest) {
      const param = n > 1 ? "n" : "prompt";
      throw new HttpError(
        400,
        `${param}: ${prompts} prompt(s) × n ${n} = ${prompts * n} sequences; at most ${perRequest} per request`,
        "invalid_request_error",
        param,
        "too_many_sequences",
      );
    }
  };

  // Sequences each client (remote address) has queued or running: no client may take more than
  // its share of the queue, however it splits them into requests.
  const byClient = new Map<string, number>();
  const reserve = (c: Context, e: InferenceEngine, sequences: number): (() => void) => {
    const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
    const client = incoming?.socket?.remoteAddress ?? "unknown";
    const limit = opts.maxSequencesPerClient ?? Math.max(1, Math.floor(e.maxQueue / 2));
    const have = byClient.get(client) ?? 0;
    if (have + sequences > limit) {
      throw new HttpError(
        429,
        `this client (${client}) already has ${have} sequence(s) queued or running; at most ${limit} at once`,
        "rate_limit_error",
        null,
        "client_limit_exceeded",
      );
    }
    byClient.set(client, have + sequences);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (byClient.get(client) ?? sequences) - sequences;
      if (left > 0) byClient.set(client, left);
      else byClient.delete(client);
    };
  };

  // Claims x-request-id while the request runs; a second one with the same id is 409.
  const claim = (c: Context): (() => void) => {
    const id = c.req.header("x-request-id");
    if (!id) return () => {};
    if (active.has(id)) throw new HttpError(409, `x-request-id ${JSON.stringify(id)} is already active`, "conflict_error", null, "duplicate_request_id");
    active.add(id);
    return () => active.delete(id);
  };

  const stops = (s: string | string[] | null | undefined, extra: string[] = []): string[] => [...(s === undefined || s === null ? [] : typeof s === "string" ? [s] : s), ...extra];

  // Every POST carries JSON (415 otherwise: a form or text/plain body, as any web page can send
  // without a preflight, starts nothing) and announces no more than the body limit (413, unread).
  app.use("*", async (c, next) => {
    if (c.req.method !== "POST") return next();
    const route = POST_ROUTES.has(c.req.path) ? c.req.path : "other";
    const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/json") {
      return fail(
        c,
        route,
        new HttpError(415, `content-type must be application/json, not ${JSON.stringify(type || "(none)")}`, "invalid_request_error", null, "unsupported_media_type"),
      );
    }
    const length = c.req.header("content-length");
    if (length !== undefined && Number(length) > maxBody) return fail(c, route, tooLarge());
    return next();
  });

  app.get("/health", (c) => {
    if (engine) return c.json({ status: "ok" });
    if (loadError) return c.json({ status: "failed", error: String((loadError as Error).message ?? loadError) }, 500);
    return c.json({ status: "loading" }, 503);
  });

  app.get("/v1/models", (c) => {
    try {
      const e = need();
      metrics.request("/v1/models", 200);
      return c.json({ object: "list", data: [{ id: e.modelId, object: "model", created, owned_by: "levanter", max_model_len: e.maxContext }] } satisfies ModelList);
    } catch (err) {
      return fail(c, "/v1/models", err);
    }
  });

  app.get("/metrics", (c) => c.text(metrics.render(engine), 200, { "content-type": "text/plain; version=0.0.4" }));

  app.post("/tokenize", async (c) => {
    try {
      const e = need();
      const body = await parse(c, TokenizeBody);
      checkPromptBytes(e, "prompt" in body ? [body.prompt] : body.messages.map((m) => flatten(m.content)), "prompt" in body ? "prompt" : "messages");
      const text = "prompt" in body ? body.prompt : template.render(body.messages.map((m) => ({ role: m.role, content: flatten(m.content) })));
      const tokens = e.tokenizer.encode(text);
      metrics.request("/tokenize", 200);
      return c.json({ tokens, count: tokens.length, max_model_len: e.maxContext } satisfies TokenizeResponse);
    } catch (err) {
      return fail(c, "/tokenize", err);
    }
  });

  // Runs one engine request per prompt; `onDelta(choiceIndex, text, finish)` streams.
  const run = async (
    e: InferenceEngine,
    prompts: number[][],
    base: Omit<EngineRequest, "prompt">,
    signal: AbortSignal,
    onDelta?: (index: number, text: string, finish?: "stop" | "length") => void,
  ): Promise<EngineResult[]> => {
    const n = base.n ?? 1;
    // One listener on the request's signal, one signal per engine request (not one listener per
    // prompt on a shared signal); removed when the request ends, however it ends.
    const each = prompts.map(() => new AbortController());
    const cancel = () => each.forEach((a) => a.abort(signal.reason));
    if (signal.aborted) cancel();
    else signal.addEventListener("abort", cancel, { once: true });
    try {
      const submitted = prompts.map((prompt, p) =>
        e.submit({ ...base, prompt }, { signal: each[p]!.signal, ...(onDelta ? { onDelta: (d) => onDelta(p * n + d.index, d.text, d.finishReason) } : {}) }),
      );
      // One failing (the queue full, a prompt too long) cancels its siblings.
      const results = await Promise.all(submitted.map((s) => s.catch((err: unknown) => (cancel(), Promise.reject(err)))));
      for (const r of results) metrics.observeTtft(r.ttftMs / 1000);
      return results;
    } finally {
      signal.removeEventListener("abort", cancel);
    }
  };

  const linkedAbort = (c: Context): AbortController => {
    const ac = new AbortController();
    const s = c.req.raw.signal;
    if (s.aborted) ac.abort(s.reason);
    else s.addEventListener("abort", () => ac.abort(new Error("the client went away")), { once: true });
    return ac;
  };

  app.post("/v1/completions", async (c) => {
    const route = "/v1/completions";
    let release = () => {};
    try {
      const e = need();
      const body = await parse(c, CompletionBody);
      const promptCount = typeof body.prompt === "string" || typeof body.prompt[0] === "number" ? 1 : body.prompt.length;
      checkSequences(promptCount, body.n ?? 1);
      if (typeof body.prompt === "string") checkPromptBytes(e, [body.prompt], "prompt");
      else if (typeof body.prompt[0] === "string") checkPromptBytes(e, body.prompt as string[], "prompt");
      release = claim(c);
      release = both(release, reserve(c, e, promptCount * (body.n ?? 1)));
      const prompts: number[][] =
        typeof body.prompt === "string"
          ? [e.tokenizer.encode(body.prompt)]
          : typeof body.prompt[0] === "number"
            ? [body.prompt as number[]]
            : (body.prompt as string[]).map((p) => e.tokenizer.encode(p));
      const echo = body.echo ?? false;
      const base: Omit<EngineRequest, "prompt"> = {
        maxTokens: body.max_tokens ?? 16,
        temperature: body.temperature ?? 1,
        topP: body.top_p ?? 1,
        n: body.n ?? 1,
        echo,
        stop: stops(body.stop),
        ...(body.top_k ? { topK: body.top_k } : {}),
        ...(body.seed !== null && body.seed !== undefined ? { seed: body.seed } : {}),
        ...(body.logprobs !== null && body.logprobs !== undefined ? { logprobs: body.logprobs } : {}),
      };
      const id = `cmpl-${randomUUID()}`;
      const model = e.modelId;
      const ac = linkedAbort(c);
      const promptText = prompts.map((p) => e.tokenizer.decode(p));
      if (body.stream) {
        e.assertAccepting();
        metrics.request(route, 200);
        return streamEvents(c, ac, release, async (send) => {
          const n = base.n ?? 1;
          const chunk = (index: number, text: string, finish: "stop" | "length" | null): CompletionChunk => ({
            id,
            object: "text_completion",
            created,
            model,
            choices: [{ index, text, logprobs: null, finish_reason: finish }],
          });
          // Each token's event is this text around the index, text and finish reason (JSON.stringify's bytes).
          const head = `{"id":${JSON.stringify(id)},"object":"text_completion","created":${created},"model":${JSON.stringify(model)},"choices":[{"index":`;
          if (echo) promptText.forEach((t, p) => Array.from({ length: n }, (_, j) => send(chunk(p * n + j, t, null))));
          await run(e, prompts, base, ac.signal, (index, text, finish) => {
            if (text || finish) send(undefined, `${head}${index},"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":${finish ? JSON.stringify(finish) : "null"}}]}`);
          });
        });
      }
      try {
        const results = await run(e, prompts, base, ac.signal);
        const n = base.n ?? 1;
        const choices = results.flatMap((r, p) =>
          r.choices.map((ch) => {
            let logprobs: Logprobs | null = ch.logprobs ?? null;
            if (echo && logprobs && r.promptLogprobs) logprobs = concatLogprobs(r.promptLogprobs, shiftLogprobs(logprobs, promptText[p]!.length));
            return { index: p * n + ch.index, text: echo ? promptText[p]! + ch.text : ch.text, logprobs, finish_reason: ch.finishReason };
          }),
        );
        const promptTokens = results.reduce((s, r) => s + r.promptTokens, 0);
        const completionTokens = results.reduce((s, r) => s + r.completionTokens, 0);
        metrics.request(route, 200);
        return c.json({
          id,
          object: "text_completion",
          created: Math.floor(Date.now() / 1000),
          model,
          choices,
          usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
        } satisfies CompletionResponse);
      } finally {
        release();
      }
    } catch (err) {
      release();
      return fail(c, route, err);
    }
  });

  app.post("/v1/chat/completions", async (c) => {
    const route = "/v1/chat/completions";
    let release = () => {};
    try {
      const e = need();
      const body = await parse(c, ChatBody);
      checkSequences(1, body.n ?? 1);
      checkPromptBytes(
        e,
        body.messages.map((m) => flatten(m.content)),
        "messages",
      );
      release = claim(c);
      release = both(release, reserve(c, e, body.n ?? 1));
      const prompt = e.tokenizer.encode(template.render(body.messages.map((m) => ({ role: m.role, content: flatten(m.content) }))));
      const top = body.top_logprobs ?? 0;
      const base: Omit<EngineRequest, "prompt"> = {
        maxTokens: body.max_completion_tokens ?? body.max_tokens ?? Math.max(0, e.maxContext - prompt.length),
        temperature: body.temperature ?? 1,
        topP: body.top_p ?? 1,
        n: body.n ?? 1,
        stop: stops(body.stop, template.stop),
        ...(body.top_k ? { topK: body.top_k } : {}),
        ...(body.seed !== null && body.seed !== undefined ? { seed: body.seed } : {}),
        ...(body.logprobs ? { logprobs: top } : {}),
      };
      const id = `chatcmpl-${randomUUID()}`;
      const model = e.modelId;
      const ac = linkedAbort(c);
      if (body.stream) {
        e.assertAccepting();
        metrics.request(route, 200);
        return streamEvents(c, ac, release, async (send) => {
          const chunk = (index: number, delta: ChatCompletionChunk["choices"][number]["delta"], finish: "stop" | "length" | null): ChatCompletionChunk => ({
            id,
            object: "chat.completion.chunk",
            created,
            model,
            choices: [{ index, delta, logprobs: null, finish_reason: finish }],
          });
          // A content event is this text around the index and the text (JSON.stringify's bytes).
          const head = `{"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":[{"index":`;
          for (let i = 0; i < (base.n ?? 1); i++) send(chunk(i, { role: "assistant", content: "" }, null));
          await run(e, [prompt], base, ac.signal, (index, text, finish) => {
            if (text) send(undefined, `${head}${index},"delta":{"content":${JSON.stringify(text)}},"logprobs":null,"finish_reason":null}]}`);
            if (finish) send(chunk(index, {}, finish));
          });
        });
      }
      try {
        const [r] = await run(e, [prompt], base, ac.signal);
        metrics.request(route, 200);
        return c.json({
          id,
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model,
          choices: r!.choices.map((ch) => ({
            index: ch.index,
            message: { role: "assistant", content: ch.text },
            logprobs: chatLogprobs(ch.logprobs, top),
            finish_reason: ch.finishReason,
          })),
          usage: { prompt_tokens: r!.promptTokens, completion_tokens: r!.completionTokens, total_tokens: r!.promptTokens + r!.completionTokens },
        } satisfies ChatCompletionResponse);
      } finally {
        release();
      }
    } catch (err) {
      release();
      return fail(c, route, err);
    }
  });

  app.notFound((c) => c.json(errorBody(new HttpError(404, `no route ${c.req.method} ${c.req.path}`, "invalid_request_error", null, "not_found")), 404));

  const server = createAdaptorServer({ fetch: app.fetch });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, opts.host ?? "127.0.0.1", () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  const sampler = setInterval(() => metrics.sample(engine?.stats().generatedTokens ?? 0), 1000);
  sampler.unref();

  const ready = (async () => {
    const e = await (opts.engine ??
      InferenceEngine.load({
        checkpoint: opts.checkpoint!,
        ...(opts.tokenizerJson ? { tokenizerJson: opts.tokenizerJson } : {}),
        ...(opts.modelId ? { modelId: opts.modelId } : {}),
        ...opts.engineOptions,
      }));
    template = await loadChatTemplate(opts.tokenizerJson ?? e.tokenizerJson);
    engine = e;
  })();
  ready.catch((e: unknown) => {
    loadError = e;
  });

  let closed = false;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    ready,
    engine: () => engine,
    close: async () => {
      if (closed) return;
      closed = true;
      clearInterval(sampler);
      await ready.catch(() => {});
      engine?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
    },
  };
}

// Runs both releases.
function both(a: () => void, b: () => void): () => void {
  return () => {
    a();
    b();
  };
}

function flatten(content: ChatContent | null): string {
  if (content === null) return "";
  return typeof content === "string" ? content : content.map((p) => p.text).join("");
}

/** Sends one SSE event: an object (serialised here) or an already serialised JSON text. */
type SendEvent = (data: unknown, json?: string) => void;

/**
 * An SSE response: `produce` sends events (JSON) in order; an error it throws becomes one error event
 * (unless the client went away), `release` frees the request's queue place, and the stream ends
 * with `data: [DONE]`. A client gone mid-stream aborts `ac`, which cancels the request.
 *
 * On node:http (always, in {@link createInferenceServer}) the events go straight to the socket:
 * one chunk write per event, no web-stream machinery per token; elsewhere through Hono's streamSSE.
 */
function streamEvents(c: Context, ac: AbortController, release: () => void, produce: (send: SendEvent) => Promise<void>): Response {
  const res = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  if (res instanceof ServerResponse) return streamToNode(res, ac, release, produce);
  return streamSSE(c, async (stream) => {
    stream.onAbort(() => ac.abort(new Error("the client went away")));
    let chain = Promise.resolve();
    // A client gone mid-stream makes writes fail: its request is cancelled through the abort signal.
    const send: SendEvent = (data, json) => void (chain = chain.then(() => stream.writeSSE({ data: json ?? JSON.stringify(data) })).catch(() => {}));
    await produceEvents(produce, send, ac, release);
    await chain;
    await stream.writeSSE({ data: "[DONE]" }).catch(() => {});
  });
}

// Runs a stream's producer: an error (unless the client left) becomes one last error event; the
// request's slot is released either way.
async function produceEvents(produce: (send: SendEvent) => Promise<void>, send: SendEvent, ac: AbortController, release: () => void): Promise<void> {
  try {
    await produce(send);
  } catch (err) {
    if (!ac.signal.aborted) send(errorBody(err instanceof HttpError ? err : new HttpError(500, String((err as Error).message ?? err), "server_error")));
  } finally {
    release();
  }
}

// streamEvents on the Node response itself (the same headers and bytes as Hono's streamSSE).
function streamToNode(res: ServerResponse, ac: AbortController, release: () => void, produce: (send: SendEvent) => Promise<void>): Response {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", "transfer-encoding": "chunked" });
  res.flushHeaders();
  const gone = () => {
    if (!res.writableFinished) ac.abort(new Error("the client went away"));
  };
  res.once("close", gone);
  // After the headers, each event is one HTTP/1.1 chunk written to the socket itself (the
  // response's own write path adds a cork, a tick and a writev per call); res.end writes the last.
  const socket = res.socket;
  const send: SendEvent = (data, json) => {
    if (res.destroyed || res.writableEnded || !socket || socket.destroyed) return;
    const event = `data: ${json ?? JSON.stringify(data)}\n\n`;
    socket.write(`${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`);
  };
  void (async () => {
    await produceEvents(produce, send, ac, release);
    if (!res.destroyed && !res.writableEnded) res.end("data: [DONE]\n\n");
  })();
  return RESPONSE_ALREADY_SENT;
}
