// The inference engine: one loaded model, preallocated per-sequence KV buffers under a memory budget, continuous batching with chunked prefill, per-request sampling.
// Over 500 lines: admission, the step loop and the per-token bookkeeping (stops, deltas, logprobs) share one mutable batch state (slots, buffers, queues); split apart, each piece would reach into the others' fields. The forward pass (decoder.ts), the KV buffers (kvPool.ts) and the sampling math (sampling.ts) live beside it.
import { selectBackend } from "../backend.ts";
import type { Tokenizer } from "../data/tokenizer.ts";
import { LevanterError } from "../errors.ts";
import type { TransformerLm } from "../models/transformer.ts";
import { Rng } from "../rng.ts";
import { tokenizerNamed } from "../data/tokenizerLookup.ts";
import { checkpointTokenizerFile, loadModelFromCheckpoint } from "../checkpoint/trainState.ts";
import { BatchDecoder, type DecodeRow } from "./decoder.ts";
import { Detokenizer } from "./detokenize.ts";
import { KvPool, type SeqKv } from "./kvPool.ts";
import { logSumExp, logprobOf, sampleToken, topIds } from "./sampling.ts";

export { logprobOf, sampleToken } from "./sampling.ts";

/** Limits of an {@link InferenceEngine}. */
export interface EngineOptions {
  /** Sequences decoded together at most (default 32); more wait in the queue. */
  maxBatch?: number;
  /** Requests waiting for a slot at most (default 256); beyond it {@link submit} throws {@link EngineBusyError}. */
  maxQueue?: number;
  /** Bytes the KV caches may hold together (default 512 MiB); each sequence's buffer holds `min(prompt + max_tokens, seqLen)` tokens, allocated when it is admitted. */
  kvBudgetBytes?: number;
  /** Prompt tokens prefilled per step at most (default 256), beside the running sequences' decode tokens: a long prompt joins over several steps instead of stalling them. */
  prefillChunk?: number;
}

/** What one completion asks for (token ids in, OpenAI's sampling semantics). */
export interface EngineRequest {
  /** Prompt token ids (empty: the end-of-document token starts the text). */
  prompt: number[];
  /** Tokens to generate at most per sample (0 with `echo`: score the prompt only). */
  maxTokens: number;
  /** 0 = greedy; default 1. */
  temperature?: number;
  /** Sample among the k likeliest tokens only. */
  topK?: number;
  /** Nucleus sampling: the smallest set of likeliest tokens whose probability reaches `topP` (default 1). */
  topP?: number;
  /** Same seed, same prompt, same model → same tokens, whatever else is in the batch. Default: random. */
  seed?: number;
  /** Generation stops before the first of these strings; it is not part of the text. */
  stop?: string[];
  /** Independent samples of the prompt (default 1); sample i draws from seed `seed + i`. */
  n?: number;
  /** Also return the prompt's token logprobs (first entry `null`). */
  echo?: boolean;
  /** Log probabilities per token, with this many alternatives (0 = only the chosen token); undefined = none. */
  logprobs?: number;
}

/** Log probabilities in OpenAI's legacy completions shape. */
export interface Logprobs {
  tokens: string[];
  token_logprobs: (number | null)[];
  top_logprobs: (Record<string, number> | null)[];
  text_offset: number[];
}

/** One sample of a finished request. */
export interface EngineChoice {
  index: number;
  text: string;
  tokens: number[];
  finishReason: "stop" | "length";
  /** Completion token logprobs (when `logprobs` was asked). */
  logprobs?: Logprobs;
}

/** A finished request. */
export interface EngineResult {
  choices: EngineChoice[];
  promptTokens: number;
  completionTokens: number;
  /** The prompt's logprobs (when `echo` and `logprobs`): first entry `null`. */
  promptLogprobs?: Logprobs;
  /** Milliseconds from submission to the first generated token (or to the prompt's scores). */
  ttftMs: number;
}

/** Text as it becomes final (stop strings held back until they cannot match). */
export interface EngineDelta {
  index: number;
  text: string;
  /** Set on the last delta of a choice. */
  finishReason?: "stop" | "length";
}

/** Per-call options of {@link InferenceEngine.submit}. */
export interface SubmitOptions {
  /** Aborting cancels the request and frees its slot and KV cache; `submit` rejects with the reason. */
  signal?: AbortSignal;
  onDelta?: (d: EngineDelta) => void;
}

/** Code `ENGINE_BUSY`: the queue is full or the engine closed (the server answers 429). */
export class EngineBusyError extends LevanterError {
  override readonly name = "EngineBusyError";
  constructor(message: string) {
    super("ENGINE_BUSY", message);
  }
}

/** Code `INVALID_REQUEST`: a request the engine cannot serve (too long, too many samples); the server answers 400 naming `param`. */
export class EngineRequestError extends LevanterError {
  override readonly name = "EngineRequestError";
  /** The request field at fault (OpenAI's `param`). */
  readonly param: string;
  constructor(message: string, param: string) {
    super("INVALID_REQUEST", message);
    this.param = param;
  }
}

/** Counters and gauges of an engine (for `/metrics`). */
export interface EngineStats {
  active: number;
  queued: number;
  generatedTokens: number;
  promptTokens: number;
  /** Bytes of the KV buffers allocated now (each admitted sequence's, until it leaves). */
  kvReservedBytes: number;
  kvBudgetBytes: number;
  /** Batched forward steps run (each decodes every running sequence and prefills up to `prefillChunk` prompt tokens). */
  decodeSteps: number;
}

interface Job {
  req: Required<Pick<EngineRequest, "temperature" | "topP" | "n" | "echo">> & EngineRequest;
  opts: SubmitOptions;
  submitted: number;
  firstTokenAt?: number;
  /** Positions of each sample's KV buffer. */
  capacity: number;
  /** The tokens prefilled (the prompt, or the end-of-document token for an empty one). */
  prompt: number[];
  /** Prompt tokens prefilled so far (into the first sample's buffer; copied to the others at the end). */
  prefilled: number;
  seqs: Seq[];
  done: boolean;
  promptLogprobs?: Logprobs;
  resolve: (r: EngineResult) => void;
  reject: (e: unknown) => void;
  onAbort?: () => void;
}

interface Seq {
  job: Job;
  index: number;
  rng: Rng;
  kv?: SeqKv;
  /** Its prompt is prefilled and its first token sampled: it decodes from now on. */
  started: boolean;
  generated: number[];
  /** The text of `generated`, kept up to date token by token. */
  detok: Detokenizer;
  text: string;
  emitted: number;
  finish?: "stop" | "length";
  logprobs?: Logprobs;
  /** Logits that the next token is sampled from. */
  next?: Float32Array;
}

/**
 * Serves completions from one model: each step is one batched forward over the next token of
 * every running sequence plus up to `prefillChunk` prompt tokens of joining requests, against a
 * preallocated KV buffer per sequence (written in place; no copies per token). Requests join the
 * batch between steps and leave it when done or cancelled (continuous batching), freeing their
 * buffers. All compute runs on the calling thread, one step at a time, yielding to the event loop
 * between steps.
 */
export class InferenceEngine {
  readonly model: TransformerLm;
  readonly tokenizer: Tokenizer;
  /** The tokenizer.json the tokenizer came from (a flag, or the one the checkpoint carries), for its chat template. */
  tokenizerJson?: string;
  /** The model id `/v1/models` reports. */
  readonly modelId: string;
  /** Prompt plus generated tokens at most (the model's `seqLen`). */
  readonly maxContext: number;
  private readonly maxBatch: number;
  /** Requests waiting for a slot at most (beyond it {@link submit} throws {@link EngineBusyError}). */
  readonly maxQueue: number;
  private readonly prefillChunk: number;
  private readonly kvBudgetBytes: number;
  private readonly kvBytesPerToken: number;
  private readonly decoder: BatchDecoder;
  private readonly pool: KvPool;
  private readonly queue: Job[] = [];
  private readonly active: Seq[] = [];
  /** Admitted jobs whose prompt is not fully prefilled, in admission order. */
  private readonly prefilling: Job[] = [];
  private running = false;
  private paused = false;
  private closed = false;
  private readonly counters = { generatedTokens: 0, promptTokens: 0, decodeSteps: 0 };

  constructor(model: TransformerLm, tokenizer: Tokenizer, modelId: string, opts: EngineOptions = {}) {
    this.model = model;
    this.tokenizer = tokenizer;
    this.modelId = modelId;
    this.maxContext = model.config.seqLen;
    this.maxBatch = opts.maxBatch ?? 32;
    this.maxQueue = opts.maxQueue ?? 256;
    this.prefillChunk = opts.prefillChunk ?? 256;
    this.kvBudgetBytes = opts.kvBudgetBytes ?? 512 * 2 ** 20;
    if (!(this.maxBatch >= 1) || !(this.maxQueue >= 0)) throw new LevanterError("INVALID_CONFIG", `maxBatch/maxQueue: expected ≥ 1 / ≥ 0, got ${this.maxBatch}/${this.maxQueue}`);
    if (!(this.prefillChunk >= 1)) throw new LevanterError("INVALID_CONFIG", `prefillChunk: expected ≥ 1, got ${this.prefillChunk}`);
    this.decoder = new BatchDecoder(model);
    this.pool = new KvPool(this.decoder.layout, this.kvBudgetBytes);
    this.kvBytesPerToken = this.pool.bytesPerToken;
  }

  /** Loads a checkpoint (a `step-N` directory or a folder of them: the newest complete one) and its tokenizer, once. */
  static async load(opts: { checkpoint: string; tokenizerJson?: string; modelId?: string } & EngineOptions): Promise<InferenceEngine> {
    await selectBackend();
    const { model, state, path } = await loadModelFromCheckpoint(opts.checkpoint);
    try {
      // An imported (or fine-tuned) checkpoint carries its tokenizer.json and tokenizer_config.json.
      const tokenizerJson = opts.tokenizerJson ?? (await checkpointTokenizerFile(path));
      const tokenizer = await tokenizerNamed(state.tokenizer, tokenizerJson, [path]);
      const engine = new InferenceEngine(model, tokenizer, opts.modelId ?? path, opts);
      if (tokenizerJson) engine.tokenizerJson = tokenizerJson;
      return engine;
    } catch (e) {
      model.dispose();
      throw e;
    }
  }

  /**
   * Where a decode step runs: `native` (the addon's whole-step kernel, every model shape: learned
   * or rotary positions, multi-head or grouped-query) where levanter's native addon loads, else
   * `packed` or `tfjs` (see {@link BatchDecoder}).
   */
  get decodePath(): "native" | "packed" | "tfjs" {
    return this.decoder.projections;
  }

  /** Current counters. */
  stats(): EngineStats {
    return {
      active: this.active.length,
      queued: this.queue.length,
      ...this.counters,
      kvReservedBytes: this.pool.allocatedBytes,
      kvBudgetBytes: this.kvBudgetBytes,
    };
  }

  /** Throws {@link EngineBusyError} when a request submitted now would be refused for a full queue. */
  assertAccepting(): void {
    if (this.closed) throw new EngineBusyError("the engine is closed");
    if (this.queue.length >= this.maxQueue) throw new EngineBusyError(`the queue is full (${this.maxQueue} waiting)`);
  }

  /** Holds scheduling (queued requests wait, running ones stop between steps) until {@link resume}. */
  pause(): void {
    this.paused = true;
  }

  /** Resumes after {@link pause}. */
  resume(): void {
    this.paused = false;
    this.kick();
  }

  /**
   * Queues a completion; resolves when every sample has finished. Throws {@link EngineBusyError}
   * when the queue is full and {@link EngineRequestError} for a request that can never fit.
   */
  submit(request: EngineRequest, opts: SubmitOptions = {}): Promise<EngineResult> {
    if (this.closed) return Promise.reject(new EngineBusyError("the engine is closed"));
    const req = { ...request, temperature: request.temperature ?? 1, topP: request.topP ?? 1, n: request.n ?? 1, echo: request.echo ?? false };
    // Scoring only (echo, no new tokens): the last prompt token is a target, never an input, so
    // a prompt may be one token longer than the context — a training window of seqLen targets.
    const scoreOnly = req.echo && req.maxTokens === 0;
    const limit = scoreOnly ? this.maxContext + 1 : this.maxContext;
    if (req.prompt.length > limit) {
      const what = scoreOnly ? `; a prompt scored with echo and max_tokens 0 may have ${limit}` : "";
      return Promise.reject(new EngineRequestError(`the prompt has ${req.prompt.length} tokens; this model's context is ${this.maxContext}${what}`, "prompt"));
    }
    if (req.n > this.maxBatch) return Promise.reject(new EngineRequestError(`n: at most ${this.maxBatch} samples per request`, "n"));
    const prompt = req.prompt.length === 0 ? [this.tokenizer.eosId] : scoreOnly && req.prompt.length > 1 ? req.prompt.slice(0, -1) : req.prompt;
    const capacity = Math.min(prompt.length + req.maxTokens, this.maxContext);
    if (req.n * capacity * this.kvBytesPerToken > this.kvBudgetBytes) {
      return Promise.reject(new EngineRequestError(`the request needs ${req.n * capacity} cached tokens, more than the KV budget holds`, "max_tokens"));
    }
    if (this.queue.length >= this.maxQueue) return Promise.reject(new EngineBusyError(`the queue is full (${this.maxQueue} waiting)`));
    if (opts.signal?.aborted) return Promise.reject(opts.signal.reason);
    return new Promise<EngineResult>((resolve, reject) => {
      const job: Job = { req, opts, submitted: performance.now(), capacity, prompt, prefilled: 0, seqs: [], done: false, resolve, reject };
      if (opts.signal) {
        job.onAbort = () => this.cancel(job, opts.signal!.reason);
        opts.signal.addEventListener("abort", job.onAbort, { once: true });
      }
      this.queue.push(job);
      this.kick();
    });
  }

  /** Rejects what is queued or running and frees the model. */
  close(): void {
    this.closed = true;
    for (const job of [...this.queue, ...new Set(this.active.map((s) => s.job))]) this.cancel(job, new EngineBusyError("the engine closed"));
    this.decoder.dispose();
    this.model.dispose();
  }

  private kick(): void {
    if (this.running || this.paused || this.closed) return;
    this.running = true;
    setImmediate(() => void this.loop());
  }

  private async loop(): Promise<void> {
    try {
      while (!this.paused && !this.closed && (this.queue.length > 0 || this.active.length > 0)) {
        try {
          this.admit();
          this.step();
        } catch (e) {
          for (const job of new Set(this.active.map((s) => s.job))) this.cancel(job, e);
        }
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      this.running = false;
    }
  }

  // Moves queued requests (FIFO) into the batch while slots and the KV budget allow: allocates
  // each sample's buffer; the prompt is prefilled by the coming steps.
  private admit(): void {
    while (this.queue.length > 0) {
      const job = this.queue[0]!;
      const { req } = job;
      if (this.active.length + req.n > this.maxBatch || !this.pool.fits(Array.from({ length: req.n }, () => job.capacity))) return;
      this.queue.shift();
      this.counters.promptTokens += req.prompt.length;
      const seed = req.seed ?? Math.floor(Math.random() * 2 ** 32);
      for (let i = 0; i < req.n; i++) {
        const seq: Seq = {
          job,
          index: i,
          rng: new Rng((seed + i) >>> 0),
          kv: this.pool.allocate(job.capacity),
          started: false,
          generated: [],
          detok: new Detokenizer(this.tokenizer),
          text: "",
          emitted: 0,
          ...(req.logprobs !== undefined ? { logprobs: emptyLogprobs() } : {}),
        };
        job.seqs.push(seq);
        this.active.push(seq);
      }
      if (req.echo && req.logprobs !== undefined) {
        // Tokens and offsets now; each prompt token's logprob as the step that scores it runs.
        const lp = emptyLogprobs();
        let offset = 0;
        for (const id of req.prompt) {
          const s = this.tokenizer.decode([id]);
          lp.tokens.push(s);
          lp.text_offset.push(offset);
          offset += s.length;
        }
        if (req.prompt.length > 0) {
          lp.token_logprobs.push(null);
          lp.top_logprobs.push(null);
        }
        job.promptLogprobs = lp;
      }
      this.prefilling.push(job);
    }
  }

  // One batched forward: the next token of every started sequence, then prompt chunks of the
  // joining requests; samples from the logits it returns.
  private step(): void {
    const decoding = this.active.filter((s) => s.started && !s.finish);
    const rows: DecodeRow[] = decoding.map((s) => ({ kv: s.kv!, token: s.generated[s.generated.length - 1]!, pos: s.kv!.length, logits: true }));
    const chunks: { job: Job; from: number; to: number; scoring: boolean }[] = [];
    // A prompt's chunks are fixed by the prompt alone ([0, C), [C, 2C), …; C = prefillChunk), so
    // its rows compute the same values whatever else joins; a step takes whole chunks, FIFO, up
    // to C tokens (at least one chunk).
    let used = 0;
    for (const job of this.prefilling) {
      const from = job.prefilled;
      const to = Math.min(job.prompt.length, from + this.prefillChunk);
      if (used > 0 && used + (to - from) > this.prefillChunk) break;
      const scoring = job.promptLogprobs !== undefined;
      const kv = job.seqs[0]!.kv!;
      for (let i = from; i < to; i++) rows.push({ kv, token: job.prompt[i]!, pos: i, logits: scoring || i === job.prompt.length - 1 });
      chunks.push({ job, from, to, scoring });
      used += to - from;
    }
    if (rows.length === 0) return;
    const all = this.decoder.step(rows);
    this.counters.decodeSteps++;
    const v = this.model.config.vocabSize;
    let k = 0;
    // Views into this step's logits (a new array each step, so they stay valid while sampled from).
    const take = () => all.subarray(k * v, ++k * v);
    for (const s of decoding) s.next = take();
    for (const { job, from, to, scoring } of chunks) {
      let last: Float32Array | undefined;
      for (let i = from; i < to; i++) {
        if (!scoring && i !== job.prompt.length - 1) continue;
        const row = take();
        // Row i's logits score prompt token i + 1 (the last row's sample the first new token).
        if (scoring && i + 1 < job.req.prompt.length) {
          job.promptLogprobs!.token_logprobs.push(logprobOf(row, job.req.prompt[i + 1]!));
          job.promptLogprobs!.top_logprobs.push(this.topLogprobs(row, job.req.logprobs!));
        }
        if (i === job.prompt.length - 1) last = row;
      }
      job.prefilled = to;
      if (last) this.startSamples(job, last);
    }
    // A delta callback may cancel its request (and free its buffers) while others still sample.
    for (const s of decoding) if (!s.job.done) this.sampleInto(s);
    this.retireFinished();
  }

  // The prompt is prefilled (into the first sample's buffer): shares it with the other samples
  // and samples each one's first token from the last prompt row's logits.
  private startSamples(job: Job, last: Float32Array): void {
    this.prefilling.splice(this.prefilling.indexOf(job), 1);
    const first = job.seqs[0]!.kv!;
    for (const seq of job.seqs) {
      if (seq.kv !== first) this.pool.copyInto(first, seq.kv!);
      seq.next = last;
      seq.started = true;
    }
    for (const seq of job.seqs) if (!job.done) this.sampleInto(seq);
    if (job.req.maxTokens === 0) job.firstTokenAt ??= performance.now();
  }

  // Samples one token into `seq` from `seq.next`, or marks it finished.
  private sampleInto(seq: Seq): void {
    const { req } = seq.job;
    const room = this.maxContext - Math.max(1, req.prompt.length);
    if (seq.generated.length >= req.maxTokens || seq.generated.length >= room) {
      this.finish(seq, "length");
      return;
    }
    const row = seq.next!;
    const token = sampleToken(row, req.temperature, req.topK, req.topP, seq.rng);
    seq.job.firstTokenAt ??= performance.now();
    this.counters.generatedTokens++;
    if (token === this.tokenizer.eosId) {
      this.finish(seq, "stop");
      return;
    }
    seq.generated.push(token);
    if (seq.logprobs) {
      const s = this.tokenizer.decode([token]);
      const lp = seq.logprobs;
      const prev = lp.tokens.length ? lp.text_offset[lp.text_offset.length - 1]! + lp.tokens[lp.tokens.length - 1]!.length : 0;
      lp.tokens.push(s);
      lp.text_offset.push(prev);
      lp.token_logprobs.push(logprobOf(row, token));
      lp.top_logprobs.push(this.topLogprobs(row, req.logprobs!));
    }
    // Text before the stable length of the last token was searched then: look only where a stop
    // string could newly end.
    const searched = seq.detok.stableLength;
    seq.text = seq.detok.push(token);
    const stops = req.stop ?? [];
    let cut = -1;
    for (const s of stops) {
      const i = s.length ? seq.text.indexOf(s, Math.max(0, searched - s.length + 1)) : -1;
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      seq.text = seq.text.slice(0, cut);
      this.finish(seq, "stop");
      return;
    }
    // Hold back what could still become a stop string, and an incomplete UTF-8 tail.
    let safe = seq.text.length;
    while (safe > seq.emitted && seq.text[safe - 1] === "\uFFFD") safe--;
    for (const s of stops) {
      for (let k = Math.min(s.length - 1, seq.text.length); k > 0; k--) {
        if (seq.text.endsWith(s.slice(0, k))) {
          safe = Math.min(safe, seq.text.length - k);
          break;
        }
      }
    }
    if (safe > seq.emitted) {
      seq.job.opts.onDelta?.({ index: seq.index, text: seq.text.slice(seq.emitted, safe) });
      seq.emitted = safe;
    }
    // At its limit now: finish without running a step whose logits nobody samples.
    if (!seq.job.done && (seq.generated.length >= req.maxTokens || seq.generated.length >= room)) this.finish(seq, "length");
  }

  private finish(seq: Seq, reason: "stop" | "length"): void {
    seq.finish = reason;
    seq.job.opts.onDelta?.({ index: seq.index, text: seq.text.slice(seq.emitted), finishReason: reason });
    seq.emitted = seq.text.length;
    if (seq.kv) this.pool.free(seq.kv);
    seq.kv = undefined;
  }

  private retireFinished(): void {
    for (const job of new Set(this.active.map((s) => s.job))) {
      if (job.seqs.every((s) => s.finish)) this.complete(job);
    }
  }

  private release(job: Job): void {
    job.done = true;
    if (job.onAbort) job.opts.signal?.removeEventListener("abort", job.onAbort);
    const qi = this.queue.indexOf(job);
    if (qi >= 0) {
      this.queue.splice(qi, 1);
      return;
    }
    for (let i = this.active.length - 1; i >= 0; i--) if (this.active[i]!.job === job) this.active.splice(i, 1);
    const pi = this.prefilling.indexOf(job);
    if (pi >= 0) this.prefilling.splice(pi, 1);
    for (const s of job.seqs) {
      if (s.kv) this.pool.free(s.kv);
      s.kv = undefined;
    }
    this.kick();
  }

  private complete(job: Job): void {
    this.release(job);
    const completionTokens = job.seqs.reduce((n, s) => n + s.generated.length, 0);
    job.resolve({
      choices: job.seqs.map((s) => ({ index: s.index, text: s.text, tokens: s.generated, finishReason: s.finish!, ...(s.logprobs ? { logprobs: s.logprobs } : {}) })),
      promptTokens: job.req.prompt.length,
      completionTokens,
      ...(job.promptLogprobs ? { promptLogprobs: job.promptLogprobs } : {}),
      ttftMs: (job.firstTokenAt ?? performance.now()) - job.submitted,
    });
  }

  private cancel(job: Job, reason: unknown): void {
    if (job.done) return;
    this.release(job);
    job.reject(reason);
  }

  private topLogprobs(row: Float32Array, k: number): Record<string, number> | null {
    if (k <= 0) return null;
    const lse = logSumExp(row);
    const out: Record<string, number> = {};
    // Distinct ids can print alike (lone non-ASCII bytes): keep the likeliest of each string.
    let n = 0;
    for (const id of topIds(row, row.length)) {
      const s = this.tokenizer.decode([id]);
      if (s in out) continue;
      out[s] = row[id]! - lse;
      if (++n === k) break;
    }
    return out;
  }
}

function emptyLogprobs(): Logprobs {
  return { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
}
