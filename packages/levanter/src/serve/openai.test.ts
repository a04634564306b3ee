// The protocol module is the server's contract: every answer a real server gives (JSON and each
// SSE event) parses with its schema, and the module loads nothing but zod.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectBackend } from "../backend.ts";
import { byteTokenizer } from "../data/byteTokenizer.ts";
import { InferenceEngine } from "../inference/engine.ts";
import { ModelConfigSchema, resolveModelConfig } from "../models/modelConfig.ts";
import { TransformerLm } from "../models/transformer.ts";
import { Rng } from "../rng.ts";
import {
  ChatCompletionChunkSchema,
  ChatCompletionResponseSchema,
  CompletionChunkSchema,
  CompletionRequestSchema,
  CompletionResponseSchema,
  ErrorResponseSchema,
  ModelListSchema,
  STREAM_DONE,
  TokenizeResponseSchema,
  parseResponse,
} from "./openai.ts";
import { createInferenceServer, type InferenceServer } from "./server.ts";

const post = (url: string, body: unknown) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

// The `data:` payloads of an SSE answer, in order.
async function events(r: Response): Promise<string[]> {
  const text = await r.text();
  return text
    .split("\n\n")
    .filter((e) => e.startsWith("data: "))
    .map((e) => e.slice("data: ".length));
}

describe("OpenAI protocol module", () => {
  it("imports nothing but zod, from iris's toolkit (clients load it without TensorFlow.js)", () => {
    const source = readFileSync(new URL("./openai.ts", import.meta.url), "utf8");
    const imports = [...source.matchAll(/^import\s.*from\s+"([^"]+)";$/gm)].map((m) => m[1]);
    expect(imports).toEqual(["@marin/iris/toolkit"]);
  });

  it("parseResponse names the field at fault, or the server's error message", () => {
    const fail = (m: string) => new Error(m);
    expect(() => parseResponse(ModelListSchema, { object: "list", data: [{ id: 1 }] }, fail)).toThrow(/^data\.0\.id: /);
    expect(() =>
      parseResponse(ModelListSchema, { error: { message: "the model is still loading", type: "service_unavailable", param: null, code: "model_loading" } }, fail),
    ).toThrow(/^the model is still loading$/);
    expect(CompletionRequestSchema.safeParse({ prompt: "x", temperature: 3 }).success).toBe(false);
  });

  describe("against a real server", () => {
    let server: InferenceServer;
    beforeAll(async () => {
      process.env.LEVANTER_LOG = "warn";
      await selectBackend({ force: "wasm" });
      const cfg = resolveModelConfig(ModelConfigSchema.parse({ nLayers: 1, dModel: 16, nHeads: 2, seqLen: 64, initStd: 0.5 }), 257);
      server = await createInferenceServer({ engine: new InferenceEngine(TransformerLm.init(cfg, new Rng(5)), byteTokenizer, "tiny") });
      await server.ready;
    });
    afterAll(async () => {
      await server?.close();
    });

    it("models, completions (with logprobs), chat, tokenize and errors parse with their schemas", async () => {
      const models = ModelListSchema.parse(await (await fetch(`${server.url}/v1/models`)).json());
      expect(models.data[0]).toMatchObject({ id: "tiny", max_model_len: 64 });

      const c = CompletionResponseSchema.parse(
        await (await post(`${server.url}/v1/completions`, { prompt: "The cat", max_tokens: 4, temperature: 0, logprobs: 2, echo: true })).json(),
      );
      expect(c.choices[0]!.logprobs!.token_logprobs[0]).toBeNull();
      expect(c.usage.prompt_tokens).toBe(7);

      const chat = ChatCompletionResponseSchema.parse(
        await (
          await post(`${server.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], max_tokens: 3, temperature: 0, logprobs: true, top_logprobs: 1 })
        ).json(),
      );
      expect(chat.choices[0]!.message.role).toBe("assistant");
      expect(chat.choices[0]!.logprobs!.content.length).toBe(chat.usage.completion_tokens);

      const tok = TokenizeResponseSchema.parse(await (await post(`${server.url}/tokenize`, { prompt: "abc" })).json());
      expect(tok.count).toBe(3);

      const bad = await post(`${server.url}/v1/completions`, { prompt: "x", temperature: 5 });
      expect(bad.status).toBe(400);
      expect(ErrorResponseSchema.parse(await bad.json()).error.param).toBe("temperature");
    });

    it("every streamed event parses as a chunk, and the stream ends with [DONE]", async () => {
      const c = await events(await post(`${server.url}/v1/completions`, { prompt: "The", max_tokens: 5, temperature: 0, stream: true }));
      expect(c.at(-1)).toBe(STREAM_DONE);
      const chunks = c.slice(0, -1).map((e) => CompletionChunkSchema.parse(JSON.parse(e)));
      expect(chunks.at(-1)!.choices[0]!.finish_reason).not.toBeNull();

      const chat = await events(await post(`${server.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], max_tokens: 3, temperature: 0, stream: true }));
      expect(chat.at(-1)).toBe(STREAM_DONE);
      const deltas = chat.slice(0, -1).map((e) => ChatCompletionChunkSchema.parse(JSON.parse(e)));
      expect(deltas[0]!.choices[0]!.delta.role).toBe("assistant");
      expect(deltas.at(-1)!.choices[0]!.finish_reason).not.toBeNull();
    });
  });
});
