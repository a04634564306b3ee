import path from "node:path";
import { readJsonl } from "@marin/zephyr";
import type { Dataset, RunOptions } from "@marin/zephyr";

/** One document as the standard data steps store it (JSON Lines, gzip). */
export interface Document {
  id: string;
  text: string;
}

/** Zephyr settings every standard step uses: in this process, quiet (the marin live view draws progress). */
export const ZEPHYR_RUN: RunOptions = { backend: "inline", progress: false };

/** The documents a standard data step wrote into `dir`. */
export function readDocuments(dir: string): Dataset<Document> {
  return readJsonl<Document>(path.join(dir, "*.jsonl.gz"));
}

/** The file pattern standard data steps write documents to. */
export function documentsPattern(dir: string): string {
  return path.join(dir, "part-{shard}-of-{total}.jsonl.gz");
}
