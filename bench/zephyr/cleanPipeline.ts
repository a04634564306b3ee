// The benchmark's pipeline, in its own module so worker threads can import it (definePipeline).
import { createHash } from "node:crypto";
import { definePipeline, readJsonl } from "@marin/zephyr";

/** An input record of the benchmark corpus. */
export interface Doc {
  id: number;
  text: string;
}

/** NFKC, whitespace runs collapsed to one space (trimmed), lower-case. */
export function normalizeText(text: string): string {
  return text.normalize("NFKC").replace(/\s+/g, " ").trim().toLowerCase();
}

/** The exact-dedup key: a hash of the normalized text. */
export function textHash(text: string): string {
  return createHash("sha1").update(text).digest("base64");
}

/** Texts shorter than this (after normalization) are dropped. */
export const MIN_CHARS = 40;

/** read → normalize → drop short → exact dedup by text hash. */
export const cleanPipeline = definePipeline(import.meta.url, (args: { input: string }) =>
  readJsonl<Doc>(`${args.input}/*.jsonl.gz`)
    .map((d) => ({ id: d.id, text: normalizeText(d.text) }))
    .filter((d) => d.text.length >= MIN_CHARS)
    .deduplicate((d) => textHash(d.text)),
);
