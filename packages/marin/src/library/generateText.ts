// The generateText standard step: samples from a trained checkpoint (levanter).
import { promises as fs } from "node:fs";
import path from "node:path";
import { CompletionResponseSchema, parseResponse } from "@marin/levanter/serve/openai";
import { z } from "@marin/iris/toolkit";
import { MarinError } from "../errors.ts";
import { remoteInference } from "../service/remoteInference.ts";
import { defineStep } from "../step/step.ts";
import { checkOptions, RESOURCE_KEYS } from "./options.ts";
import type { OutputRef, Step, StepResources } from "../step/step.ts";

const configSchema = z.object({
  checkpoints: z.string(),
  prompts: z.array(z.string()).min(1),
  maxTokens: z.number().int().positive(),
  temperature: z.number().min(0),
  topK: z.number().int().positive().nullable(),
  seed: z.number().int(),
  viaService: z.literal(true).optional(),
});

/** Options of {@link generateText}. */
export interface GenerateTextOptions {
  /** Step name (default `generate`). */
  name?: string;
  /** `outputOf(trainStep, "checkpoints")`. */
  checkpoints: OutputRef;
  prompts: string[];
  maxTokens?: number;
  temperature?: number;
  topK?: number | null;
  seed?: number;
  /**
   * Sample through the inference service (remoteInference: levanter's server as a child iris job,
   * `/v1/completions` with `seed + i` for prompt i) instead of a one-shot `generate()` per prompt.
   */
  viaService?: boolean;
  /** Resources of the iris job (default one core). */
  resources?: StepResources;
}

/** Samples a continuation per prompt from the final checkpoint into `samples.jsonl` (`{ prompt, text }` per line). */
export function generateText(opts: GenerateTextOptions): Step<any> {
  checkOptions(
    "generateText",
    { name: true, checkpoints: true, prompts: true, maxTokens: true, temperature: true, topK: true, seed: true, viaService: true, resources: RESOURCE_KEYS },
    opts,
  );
  return defineStep({
    name: opts.name ?? "generate",
    description: "sample text from the trained model",
    version: "1",
    schema: configSchema,
    // Its own process: tfjs keeps global engine state that concurrent in-process steps would share.
    // Through the service, the step only sends requests; its server replica has its own core.
    resources: opts.resources ?? { cpuMillis: opts.viaService ? 250 : 1000 },
    config: {
      checkpoints: opts.checkpoints,
      prompts: opts.prompts,
      maxTokens: opts.maxTokens ?? 64,
      temperature: opts.temperature ?? 0.8,
      topK: opts.topK ?? null,
      seed: opts.seed ?? 0,
      // Only when set, so that the identity of existing generate steps is unchanged.
      ...(opts.viaService ? { viaService: true as const } : {}),
    },
    fn: async (ctx) => {
      const cfg = ctx.config as z.infer<typeof configSchema>;
      if (cfg.viaService) {
        const samples = await sampleViaService(cfg, (l) => ctx.log(l));
        await fs.writeFile(path.join(ctx.outputPath, "samples.jsonl"), samples.map((s) => JSON.stringify(s)).join("\n") + "\n");
        return { sample: samples[0]!.prompt + samples[0]!.text, samples: samples.length, viaService: true };
      }
      const { generate } = await import("@marin/levanter");
      const samples: { prompt: string; text: string }[] = [];
      for (const [i, prompt] of cfg.prompts.entries()) {
        const r = await generate({
          checkpoint: cfg.checkpoints,
          prompt,
          maxTokens: cfg.maxTokens,
          temperature: cfg.temperature,
          seed: cfg.seed + i,
          ...(cfg.topK !== null ? { topK: cfg.topK } : {}),
        });
        samples.push({ prompt, text: r.text });
      }
      await fs.writeFile(path.join(ctx.outputPath, "samples.jsonl"), samples.map((s) => JSON.stringify(s)).join("\n") + "\n");
      return { sample: samples[0].prompt + samples[0].text, samples: samples.length };
    },
  });
}

/** One completion per prompt from the served checkpoint. */
async function sampleViaService(cfg: z.infer<typeof configSchema>, log: (line: string) => void): Promise<{ prompt: string; text: string }[]> {
  return remoteInference({ checkpoint: cfg.checkpoints, name: "generate", log }, async ({ baseUrl, model }) => {
    const samples: { prompt: string; text: string }[] = [];
    for (const [i, prompt] of cfg.prompts.entries()) {
      const res = await fetch(`${baseUrl}/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model, prompt, max_tokens: cfg.maxTokens, temperature: cfg.temperature, seed: cfg.seed + i, ...(cfg.topK !== null ? { top_k: cfg.topK } : {}) }),
      });
      const body = parseResponse(CompletionResponseSchema, await res.json(), (m) => new MarinError("STEP_FAILED", `${baseUrl}/completions answered ${res.status}: ${m}`));
      if (!res.ok || !body.choices[0]) throw new MarinError("STEP_FAILED", `${baseUrl}/completions answered ${res.status}: no choices`);
      samples.push({ prompt, text: body.choices[0].text });
    }
    return samples;
  });
}
