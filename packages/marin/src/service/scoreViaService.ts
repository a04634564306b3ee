// Scoring a validation token cache through an inference service: each window is one
// `/v1/completions` request with `echo` + `logprobs` and `max_tokens: 0` (the prompt's own logprobs).
import { CompletionResponseSchema, ModelListSchema, parseResponse } from "@marin/levanter/serve/openai";
import { MarinError } from "../errors.ts";

/** Options of {@link scoreViaService}. */
export interface ScoreViaServiceOptions {
  /** OpenAI base URL (`…/v1`). */
  baseUrl: string;
  model: string;
  /** A token cache (levanter layout). */
  data: string;
  /** HF tokenizer.json, for caches not made by the byte tokenizer (bits per byte need its byte counts). */
  tokenizerJson?: string;
  /** Windows per batch (as evaluateLm's `batchSize`; `maxBatches` counts these). */
  batchSize?: number;
  maxBatches?: number;
  /** Requests in flight at once (default 8). */
  concurrency?: number;
}

/** What {@link scoreViaService} measured. */
export interface ServiceScore {
  /** Mean next-token loss (nats per target token). */
  loss: number;
  bpb: number;
  tokens: number;
  /** Targets per window: the service's context (`max_model_len`); each prompt is `window + 1` tokens. */
  window: number;
}

/**
 * Loss and bits per byte of the served model on a token cache. The windows are levanter's
 * validation windows for `seqLen = max_model_len` (each prompt is a window's first input and its
 * `max_model_len` targets; the server scores a prompt one token longer than its context when
 * `echo` is on and `max_tokens` is 0), so the result equals `evaluateLm` on the same checkpoint
 * and data up to float rounding (tested to 1e-5).
 */
export async function scoreViaService(opts: ScoreViaServiceOptions): Promise<ServiceScore> {
  const { TokenCacheReader } = await import("@marin/levanter/sharding");
  const { ValidationBatches, bitsPerByte, tokenizerNamed } = await import("@marin/levanter");
  const modelsRes = await fetch(`${opts.baseUrl}/models`);
  if (!modelsRes.ok) throw new MarinError("STEP_FAILED", `${opts.baseUrl}/models answered ${modelsRes.status}`);
  const models = parseResponse(ModelListSchema, await modelsRes.json(), (m) => new MarinError("STEP_FAILED", `${opts.baseUrl}/models: ${m}`));
  const window = models.data.find((m) => m.id === opts.model)?.max_model_len ?? models.data[0]?.max_model_len;
  if (!window || window < 1) throw new MarinError("STEP_FAILED", `${opts.baseUrl}/models: no max_model_len ≥ 1 for model ${opts.model}`);
  const cache = await TokenCacheReader.open(opts.data);
  try {
    const tokenizer = await tokenizerNamed(cache.ledger.tokenizer, opts.tokenizerJson, [cache.dir]);
    const batches = new ValidationBatches(cache, { seqLen: window, batchSize: opts.batchSize ?? 16 });
    const limit = Math.min(batches.numBatches, opts.maxBatches ?? Infinity);
    const prompts: { prompt: number[]; targets: Int32Array }[] = [];
    let bytes = 0;
    for (let b = 0; b < limit; b++) {
      const batch = batches.batch(b);
      const L = batch.seqLen;
      for (let r = 0; r < batch.size; r++) {
        const targets = batch.targets.subarray(r * L, (r + 1) * L);
        prompts.push({ prompt: [batch.inputs[r * L]!, ...targets], targets });
      }
      bytes += tokenizer.countBytes(batch.targets);
    }
    let nats = 0;
    let tokens = 0;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < prompts.length) {
        const { prompt, targets } = prompts[next++]!;
        const res = await fetch(`${opts.baseUrl}/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: opts.model, prompt, max_tokens: 0, echo: true, logprobs: 0 }),
        });
        const body = parseResponse(CompletionResponseSchema, await res.json(), (m) => new MarinError("STEP_FAILED", `${opts.baseUrl}/completions answered ${res.status}: ${m}`));
        const lps = body.choices[0]?.logprobs?.token_logprobs;
        if (!res.ok || !lps) throw new MarinError("STEP_FAILED", `${opts.baseUrl}/completions answered ${res.status}: no logprobs.token_logprobs`);
        if (lps.length !== targets.length + 1)
          throw new MarinError("STEP_FAILED", `${opts.baseUrl}/completions: ${lps.length} prompt logprobs for a prompt of ${targets.length + 1} tokens`);
        for (let k = 1; k < lps.length; k++) nats -= lps[k]!;
        tokens += targets.length;
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 8) }, worker));
    return { loss: tokens ? nats / tokens : Number.NaN, bpb: bitsPerByte(nats, bytes), tokens, window };
  } finally {
    cache.close();
  }
}
