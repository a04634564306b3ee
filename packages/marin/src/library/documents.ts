// The documents format the standard data steps share, and their lazy link to zephyr.
import path from "node:path";
import type { Dataset, DatasetRunOptions } from "@marin/zephyr";

/** One document as the standard data steps store it (JSON Lines, gzip). */
export interface Document {
  id: string;
  text: string;
}

/** Zephyr settings every standard step uses: in this process, quiet (the marin live view draws progress). */
export const ZEPHYR_RUN: DatasetRunOptions = { backend: "inline", progress: false };

/**
 * @marin/zephyr, loaded on first use: the standard steps import it only when one of them runs, so
 * that an all-cached run (or `plan`) does not pay for loading the data layer.
 */
export function zephyr(): Promise<typeof import("@marin/zephyr")> {
  return import("@marin/zephyr");
}

/** The documents a standard data step wrote into `dir`. */
export async function readDocuments(dir: string): Promise<Dataset<Document>> {
  return (await zephyr()).readJsonl<Document>(path.join(dir, "*.jsonl.gz"));
}

/** The file pattern standard data steps write documents to. */
export function documentsPattern(dir: string): string {
  return path.join(dir, "part-{shard}-of-{total}.jsonl.gz");
}
