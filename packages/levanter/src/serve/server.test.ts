// InferenceServer over real HTTP on 127.0.0.1: the official openai client, SSE, and raw fetch for 400/409/429/503.
import { waitFor } from "@marin/iris/testing";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { byteTokenizer } from "../data/byteTokenizer.ts";
import { ModelConfigSchema, resolveModelConfig } from "../models/modelConfig.ts";
import { TransformerLm } from "../models/transformer.ts";
import { Rng } from "../rng.ts";
import { InferenceEngine } from "./engine.ts";
import { createInferenceServer, type InferenceServer } from "./server.ts";

function tinyEngine(opts: ConstructorParameters<typeof InferenceEngine>[3] = {}): InferenceEngine {
  const cfg = resolveModelConfig(ModelConfigSchema.parse({ nLayers: 2, dModel: 32, nHeads: 4, seqLen: 128, initStd: 0.5 }), 257);
  return new InferenceEngine(TransformerLm.init(cfg, new Rng(5)), byteTokenizer, "tiny", opts);
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });

const errorOf = async (r: Response) => ((await r.json()) as { error: { message: string; type: string; param: string | null; code: string | null } }).error;

describe("InferenceServer", () => {
  let server: InferenceServer;
  let client: OpenAI;
  beforeAll(async () => {
    process.env.LEVANTER_LOG = "warn";
    await selectBackend({ force: "wasm" });
    server = await createInferenceServer({ engine: tinyEngine() });
    await server.ready;
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("lists the model", async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(["tiny"]);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("completes with the openai client: seeded sampling is reproducible; prompts × n choices are indexed in order", async () => {
    const a = await client.completions.create({ model: "tiny", prompt: "The cat", max_tokens: 12, temperature: 1, seed: 3 });
    const b = await client.completions.create({ model: "tiny", prompt: "The cat", max_tokens: 12, temperature: 1, seed: 3 });
    expect(a.choices[0]!.text).toBe(b.choices[0]!.text);
    expect(a.object).toBe("text_completion");
    expect(a.usage).toMatchObject({ prompt_tokens: 7 });
    const n = await client.completions.create({ model: "tiny", prompt: ["x", "y"], max_tokens: 4, n: 2, temperature: 0 });
    expect(n.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(n.choices[0]!.text).toBe(n.choices[1]!.text);
  });

  it("scores a prompt: echo + logprobs with max_tokens 0, first entry null", async () => {
    const r = await client.completions.create({ model: "tiny", prompt: "abcdef", max_tokens: 0, echo: true, logprobs: 3 });
    const lp = r.choices[0]!.logprobs!;
    expect(r.choices[0]!.text).toBe("abcdef");
    expect(lp.tokens).toEqual(["a", "b", "c", "d", "e", "f"]);
    expect(lp.token_logprobs![0]).toBeNull();
    expect(lp.token_logprobs!.slice(1).every((x) => typeof x === "number" && x < 0)).toBe(true);
    expect(Object.keys(lp.top_logprobs![2]!).length).toBe(3);
    expect(lp.text_offset).toEqual([0, 1, 2, 3, 4, 5]);
    // echo with generated tokens: prompt entries then completion entries, offsets continuing.
    const g = await client.completions.create({ model: "tiny", prompt: "ab", max_tokens: 3, echo: true, logprobs: 0, temperature: 0 });
    expect(g.choices[0]!.text.startsWith("ab")).toBe(true);
    expect(g.choices[0]!.logprobs!.token_logprobs![0]).toBeNull();
    expect(g.choices[0]!.logprobs!.text_offset!.slice(0, 3)).toEqual([0, 1, 2]);
  });

  it("streams a chat completion as SSE ending [DONE], the same text as without streaming", async () => {
    const messages = [{ role: "system" as const, content: "Be brief." }, { role: "user" as const, content: "Hello there" }];
    const whole = await client.chat.completions.create({ model: "tiny", messages, max_tokens: 20, temperature: 0, logprobs: true, top_logprobs: 2 });
    expect(whole.choices[0]!.message.role).toBe("assistant");
    expect(whole.choices[0]!.logprobs!.content!.length).toBeGreaterThan(0);
    const stream = await client.chat.completions.create({ model: "tiny", messages, max_tokens: 20, temperature: 0, stream: true });
    let text = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(finish).toBe(whole.choices[0]!.finish_reason);
    const raw = await (await post(`${server.url}/v1/chat/completions`, { messages, max_tokens: 3, stream: true })).text();
    expect(raw.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });


  it("streams completions as SSE events in OpenAI's chunk shape (field order too), the seeded text of the non-streamed answer", async () => {
    const body = { prompt: "Once upon", max_tokens: 16, temperature: 1, seed: 11, n: 2, stop: ["zz"] };
    const whole = await client.completions.create({ model: "tiny", ...body });
    const r = await post(`${server.url}/v1/completions`, { ...body, stream: true });
    expect(r.headers.get("content-type")).toBe("text/event-stream");
    const raw = await r.text();
    expect(raw.endsWith("data: [DONE]\n\n")).toBe(true);
    const events = raw.split("\n\n").filter((e) => e && e !== "data: [DONE]");
    const texts = ["", ""];
    const finishes: (string | null)[] = [null, null];
    for (const e of events) {
      expect(e.startsWith("data: ")).toBe(true);
      const json = e.slice("data: ".length);
      const chunk = JSON.parse(json) as { id: string; created: number; model: string; choices: { index: number; text: string; finish_reason: string | null }[] };
      // The event's bytes are JSON.stringify's of the chunk object in OpenAI's field order.
      expect(json).toBe(JSON.stringify({ id: chunk.id, object: "text_completion", created: chunk.created, model: "tiny", choices: [{ index: chunk.choices[0]!.index, text: chunk.choices[0]!.text, logprobs: null, finish_reason: chunk.choices[0]!.finish_reason }] }));
      texts[chunk.choices[0]!.index] += chunk.choices[0]!.text;
      finishes[chunk.choices[0]!.index] = chunk.choices[0]!.finish_reason ?? finishes[chunk.choices[0]!.index]!;
    }
    expect(texts).toEqual(whole.choices.map((c) => c.text));
    expect(finishes).toEqual(whole.choices.map((c) => c.finish_reason));
  });
  it("a client that disconnects mid-stream frees its slot", async () => {
    const engine = server.engine()!;
    const r = await post(`${server.url}/v1/chat/completions`, { messages: [{ role: "user", content: "go" }], max_tokens: 100, temperature: 1, seed: 1, stream: true });
    const reader = r.body!.getReader();
    await reader.read(); // the first chunk: the request is running
    engine.pause(); // nothing finishes on its own from here
    expect(engine.stats().active).toBe(1);
    await reader.cancel();
    await waitFor("the cancelled request to leave the batch", () => engine.stats().active === 0);
    expect(engine.stats().kvReservedBytes).toBe(0);
    engine.resume();
  });

  it("tokenizes with the built-in chat template and exposes Prometheus metrics", async () => {
    const t = await (await post(`${server.url}/tokenize`, { prompt: "hi" })).json();
    expect(t).toEqual({ tokens: [104, 105], count: 2, max_model_len: 128 });
    const chat = (await (await post(`${server.url}/tokenize`, { messages: [{ role: "user", content: "hi" }] })).json()) as { tokens: number[] };
    expect(chat.tokens).toEqual(byteTokenizer.encode("<|user|>\nhi\n<|assistant|>\n"));
    const m = await (await fetch(`${server.url}/metrics`)).text();
    for (const name of ["levanter_serve_requests_total{", "levanter_serve_queue_depth", "levanter_serve_tokens_per_second", "levanter_serve_time_to_first_token_seconds_bucket"]) expect(m).toContain(name);
    expect(m).toMatch(/levanter_serve_generated_tokens_total [1-9]/);
  });

  it("answers a malformed body with 400 in OpenAI's error shape, naming the field", async () => {
    const r = await post(`${server.url}/v1/completions`, { prompt: "x", max_tokens: -1 });
    expect(r.status).toBe(400);
    const error = await errorOf(r);
    expect(error).toMatchObject({ type: "invalid_request_error", param: "max_tokens" });
    expect(error.message).toMatch(/^max_tokens: /);
    const chat = await post(`${server.url}/v1/chat/completions`, { messages: [{ role: "robot", content: "x" }] });
    expect((await errorOf(chat)).param).toBe("messages.0.role");
    const bad = await post(`${server.url}/v1/completions`, "{not json");
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).code).toBe("invalid_json");
    await expect(client.completions.create({ model: "tiny", prompt: "x", temperature: 5 })).rejects.toMatchObject({ status: 400 });
  });
});

describe("InferenceServer limits", () => {
  it("answers 503 while loading, then 200", async () => {
    let resolve!: (e: InferenceEngine) => void;
    const server = await createInferenceServer({ engine: new Promise<InferenceEngine>((r) => (resolve = r)) });
    try {
      const h = await fetch(`${server.url}/health`);
      expect(h.status).toBe(503);
      const m = await fetch(`${server.url}/v1/models`);
      expect(m.status).toBe(503);
      expect((await errorOf(m)).code).toBe("model_loading");
      resolve(tinyEngine());
      await server.ready;
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it("429 with Retry-After past the queue bound, 409 for an active x-request-id, a gone client frees its place", async () => {
    const engine = tinyEngine({ maxBatch: 1, maxQueue: 2 });
    const server = await createInferenceServer({ engine, retryAfterSeconds: 2 });
    try {
      engine.pause();
      const body = { prompt: "hello", max_tokens: 4, temperature: 0 };
      const first = post(`${server.url}/v1/completions`, body, { "x-request-id": "req-1" });
      await waitFor("the first request queued", () => engine.stats().queued === 1);
      const dup = await post(`${server.url}/v1/completions`, body, { "x-request-id": "req-1" });
      expect(dup.status).toBe(409);
      expect((await errorOf(dup)).code).toBe("duplicate_request_id");
      const ac = new AbortController();
      const gone = fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], stream: true }),
        signal: ac.signal,
      });
      await waitFor("the streaming request queued", () => engine.stats().queued === 2);
      const full = await post(`${server.url}/v1/completions`, body);
      expect(full.status).toBe(429);
      expect(full.headers.get("retry-after")).toBe("2");
      expect((await errorOf(full)).type).toBe("rate_limit_error");
      const fullStream = await post(`${server.url}/v1/completions`, { ...body, stream: true });
      expect(fullStream.status).toBe(429);
      (await gone).body?.cancel().catch(() => {});
      ac.abort();
      await waitFor("the gone client's request dropped", () => engine.stats().queued === 1);
      engine.resume();
      const r = await first;
      expect(r.status).toBe(200);
      // The id is free again once its request finished.
      expect((await post(`${server.url}/v1/completions`, body, { "x-request-id": "req-1" })).status).toBe(200);
      await waitFor("the engine idle", () => engine.stats().active === 0 && engine.stats().queued === 0);
    } finally {
      await server.close();
    }
  });
});
