// InferenceServer over real HTTP on 127.0.0.1: the official openai client, SSE, and raw fetch for 400/409/429/503.
import { waitFor } from "@marin/iris/testing";
import OpenAI from "openai";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { byteTokenizer } from "../data/byteTokenizer.ts";
import { ModelConfigSchema, resolveModelConfig } from "../models/modelConfig.ts";
import { TransformerLm } from "../models/transformer.ts";
import { Rng } from "../rng.ts";
import { InferenceEngine } from "../inference/engine.ts";
import { createInferenceServer, DEFAULT_MAX_BODY_BYTES, type InferenceServer } from "./server.ts";

function tinyEngine(opts: ConstructorParameters<typeof InferenceEngine>[3] = {}, tokenizer = byteTokenizer): InferenceEngine {
  const cfg = resolveModelConfig(ModelConfigSchema.parse({ nLayers: 2, dModel: 32, nHeads: 4, seqLen: 128, initStd: 0.5 }), 257);
  return new InferenceEngine(TransformerLm.init(cfg, new Rng(5)), tokenizer, "tiny", opts);
}

// The byte tokenizer, counting the text it encodes.
function countingTokenizer(): { tokenizer: typeof byteTokenizer; encoded: { chars: number } } {
  const encoded = { chars: 0 };
  return { tokenizer: { ...byteTokenizer, encode: (text: string) => ((encoded.chars += text.length), byteTokenizer.encode(text)) }, encoded };
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
    const messages = [
      { role: "system" as const, content: "Be brief." },
      { role: "user" as const, content: "Hello there" },
    ];
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
      expect(json).toBe(
        JSON.stringify({
          id: chunk.id,
          object: "text_completion",
          created: chunk.created,
          model: "tiny",
          choices: [{ index: chunk.choices[0]!.index, text: chunk.choices[0]!.text, logprobs: null, finish_reason: chunk.choices[0]!.finish_reason }],
        }),
      );
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
    for (const name of ["levanter_serve_requests_total{", "levanter_serve_queue_depth", "levanter_serve_tokens_per_second", "levanter_serve_time_to_first_token_seconds_bucket"])
      expect(m).toContain(name);
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
    // One client (127.0.0.1) fills the whole queue here: its share is raised to all of it.
    const server = await createInferenceServer({ engine, retryAfterSeconds: 2, maxSequencesPerClient: 8 });
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

// A POST from a given loopback source address (127.0.0.0/8 is all loopback on Linux): another client.
function postFrom(localAddress: string, url: string, body: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}`, { method: "POST", localAddress, headers: { "content-type": "application/json" } }, (res) => {
      let text = "";
      res.on("data", (d: Buffer) => (text += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

describe("InferenceServer bounds", () => {
  it("415 for a body that is not application/json, before reading it", async () => {
    const server = await createInferenceServer({ engine: tinyEngine() });
    try {
      await server.ready;
      const body = JSON.stringify({ prompt: "hi", max_tokens: 1 });
      for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
        const r = await fetch(`${server.url}/v1/completions`, { method: "POST", headers: { "content-type": type }, body });
        expect(r.status, type).toBe(415);
        expect(await errorOf(r)).toMatchObject({ type: "invalid_request_error", code: "unsupported_media_type" });
      }
      // No content type at all (a Blob without one), on every POST route.
      for (const route of ["/v1/chat/completions", "/tokenize"]) expect((await fetch(`${server.url}${route}`, { method: "POST", body: new Blob([body]) })).status).toBe(415);
      expect(server.engine()!.stats().generatedTokens).toBe(0);
      // JSON with parameters is JSON.
      expect((await post(`${server.url}/v1/completions`, body, { "content-type": "Application/JSON; charset=utf-8" })).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it("413 for a body over the limit: 16 MiB by default, announced or streamed", async () => {
    expect(DEFAULT_MAX_BODY_BYTES).toBe(16 * 2 ** 20);
    const server = await createInferenceServer({ engine: tinyEngine() });
    const small = await createInferenceServer({ engine: tinyEngine(), maxBodyBytes: 64 * 1024 });
    try {
      await Promise.all([server.ready, small.ready]);
      const big = JSON.stringify({ prompt: "x", max_tokens: 1, user: "y".repeat(16 * 2 ** 20) });
      const r = await post(`${server.url}/v1/completions`, big);
      expect(r.status).toBe(413);
      expect(await errorOf(r)).toMatchObject({ code: "request_too_large", message: expect.stringContaining(`${16 * 2 ** 20} bytes`) });
      // Just under the limit is read (and answered on its merits).
      expect((await post(`${server.url}/v1/completions`, JSON.stringify({ prompt: "x", max_tokens: 1, user: "y".repeat(15 * 2 ** 20) }))).status).toBe(200);
      // A chunked body with no content-length stops being read at the limit.
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= 4 * 2 ** 20) return controller.close();
          sent += 16 * 1024;
          controller.enqueue(new Uint8Array(16 * 1024).fill(32));
        },
      });
      const chunked = await fetch(`${small.url}/tokenize`, { method: "POST", headers: { "content-type": "application/json" }, body: stream, duplex: "half" } as RequestInit);
      expect(chunked.status).toBe(413);
      expect((await errorOf(chunked)).code).toBe("request_too_large");
      expect(sent).toBeLessThan(4 * 2 ** 20);
    } finally {
      await Promise.all([server.close(), small.close()]);
    }
  });

  it("checks a prompt's bytes before tokenizing it, on every route", async () => {
    const { tokenizer, encoded } = countingTokenizer();
    const engine = tinyEngine({}, tokenizer);
    const server = await createInferenceServer({ engine });
    try {
      await server.ready;
      const huge = "a".repeat(10 * 2 ** 20); // 10 MB: under the body limit
      const cases: [string, unknown, string][] = [
        ["/v1/completions", { prompt: huge, max_tokens: 1 }, "prompt"],
        ["/v1/completions", { prompt: ["short", huge], max_tokens: 1 }, "prompt"],
        ["/v1/chat/completions", { messages: [{ role: "user", content: huge }] }, "messages"],
        ["/v1/chat/completions", { messages: [{ role: "user", content: [{ type: "text", text: huge }] }] }, "messages"],
        ["/tokenize", { prompt: huge }, "prompt"],
      ];
      for (const [route, body, param] of cases) {
        const t0 = performance.now();
        const r = await post(`${server.url}${route}`, body);
        expect(r.status, route).toBe(400);
        expect(await errorOf(r)).toMatchObject({ code: "prompt_too_large", param, message: expect.stringContaining(`${64 * 1024} bytes`) });
        expect(performance.now() - t0).toBeLessThan(10_000);
      }
      expect(encoded.chars).toBe(0);
      // Multi-byte text counts in UTF-8 bytes: 30,000 × "é" is 60,000 bytes (under 64 KiB), 40,000 is not.
      expect((await post(`${server.url}/tokenize`, { prompt: "é".repeat(30_000) })).status).toBe(200);
      expect((await errorOf(await post(`${server.url}/tokenize`, { prompt: "é".repeat(40_000) }))).code).toBe("prompt_too_large");
    } finally {
      await server.close();
    }
  });

  it("caps prompts × n per request before tokenizing anything", async () => {
    const { tokenizer, encoded } = countingTokenizer();
    const engine = tinyEngine({}, tokenizer);
    const server = await createInferenceServer({ engine });
    try {
      await server.ready;
      const many = await post(`${server.url}/v1/completions`, { prompt: Array.from({ length: 100_000 }, () => "x"), max_tokens: 1 });
      expect(many.status).toBe(400);
      expect(await errorOf(many)).toMatchObject({ code: "too_many_sequences", param: "prompt", message: expect.stringContaining("at most 128 per request") });
      const times = await post(`${server.url}/v1/completions`, { prompt: Array.from({ length: 10 }, () => "x"), n: 13, max_tokens: 1 });
      expect(await errorOf(times)).toMatchObject({ code: "too_many_sequences", param: "n" });
      expect(encoded.chars).toBe(0);
      expect(engine.stats().queued + engine.stats().active).toBe(0);
      const ok = await post(`${server.url}/v1/completions`, { prompt: Array.from({ length: 16 }, () => "x"), n: 2, max_tokens: 1, temperature: 0 });
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as { choices: unknown[] }).choices).toHaveLength(32);
    } finally {
      await server.close();
    }
  });

  it("one client cannot fill the queue: past its share it gets 429 while another client is served", async () => {
    const engine = tinyEngine({ maxBatch: 4, maxQueue: 8 });
    const server = await createInferenceServer({ engine });
    try {
      await server.ready;
      engine.pause();
      // Client A (127.0.0.1) queues its share (half the queue: 4 sequences) in one request.
      const first = post(`${server.url}/v1/completions`, { prompt: ["a", "b"], n: 2, max_tokens: 2, temperature: 0 });
      await waitFor("A's request queued", () => engine.stats().queued === 2);
      const more = await post(`${server.url}/v1/completions`, { prompt: "c", max_tokens: 2 });
      expect(more.status).toBe(429);
      expect(more.headers.get("retry-after")).toBe("1");
      expect(await errorOf(more)).toMatchObject({ type: "rate_limit_error", code: "client_limit_exceeded" });
      const stream = await post(`${server.url}/v1/chat/completions`, { messages: [{ role: "user", content: "c" }], stream: true });
      expect(stream.status).toBe(429);
      // Client B (127.0.0.2) still gets in.
      const b = postFrom("127.0.0.2", `${server.url}/v1/completions`, { prompt: "d", max_tokens: 2, temperature: 0 });
      await waitFor("B's request queued", () => engine.stats().queued === 3);
      engine.resume();
      expect((await first).status).toBe(200);
      expect((await b).status).toBe(200);
      // A's share is free again once its requests ended.
      expect((await post(`${server.url}/v1/completions`, { prompt: ["e", "f", "g", "h"], max_tokens: 1 })).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it("200 clients leaving mid-stream (some with many prompts) leak no listeners and free every slot", async () => {
    const engine = tinyEngine({ maxBatch: 32, maxQueue: 512 });
    const server = await createInferenceServer({ engine, maxSequencesPerClient: 4096 });
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      await server.ready;
      const readers = await Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          const body =
            i % 10 === 0 ? { prompt: Array.from({ length: 12 }, () => "hi"), max_tokens: 100, stream: true } : { prompt: "hello", max_tokens: 100, stream: true, seed: i };
          const r = await post(`${server.url}/v1/completions`, body);
          expect(r.status).toBe(200);
          const reader = r.body!.getReader();
          await reader.read();
          return reader;
        }),
      );
      await Promise.all(readers.map((r) => r.cancel()));
      await waitFor("every request to leave the engine", () => engine.stats().active === 0 && engine.stats().queued === 0, { timeoutMs: 60_000 });
      expect(engine.stats().kvReservedBytes).toBe(0);
      // Warnings are emitted on the next tick: one request more, then look.
      expect((await post(`${server.url}/v1/completions`, { prompt: Array.from({ length: 12 }, () => "x"), max_tokens: 1 })).status).toBe(200);
      await new Promise((r) => setImmediate(r));
      expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await server.close();
    }
  }, 120_000);
});
