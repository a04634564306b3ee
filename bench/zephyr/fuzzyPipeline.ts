// The fuzzy-dedup benchmark's pipeline, in its own module so worker threads can import it (definePipeline).
import { definePipeline, readJsonl } from "@marin/zephyr";

/** read JSONL.gz → dedupFuzzy (MinHash over word 5-grams, 128 permutations, LSH, components). */
export const fuzzyPipeline = definePipeline(import.meta.url, (args: { input: string; threshold: number }) =>
  readJsonl<{ id: number; text: string }>(`${args.input}/*.jsonl.gz`).dedupFuzzy({ text: (d) => d.text, threshold: args.threshold }),
);
