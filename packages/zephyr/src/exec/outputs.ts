// Where a shard's records go: back to the coordinator (collect, count), to an intermediate file
// (chunks, scatter), or to a committed output file (JSONL, Parquet, token cache).
import { mkdir, stat, unlink } from "node:fs/promises";
import path from "node:path";
import { ZephyrError } from "../errors.ts";
import { JsonlWriter } from "../io/jsonl.ts";
import type { Stage } from "../plan/planner.ts";
import { ChunkWriter } from "./chunkFile.ts";
import { tempPathFor, writeCommitMarker } from "./commit.ts";
import { openScatter } from "./exchange.ts";
import type { StageWhere } from "./fused.ts";
import { openParquetWriter } from "./parquetSeam.ts";
import type { ScatterRef } from "./exchange.ts";
import { loadLevanterSharding, tokenIdsOf } from "./tokenCache.ts";

/** Where one shard writes (resolved by the coordinator). */
export type ShardOutputSpec =
  | { readonly kind: "collect" }
  | { readonly kind: "count" }
  | { readonly kind: "chunks"; readonly file: string }
  | {
      readonly kind: "scatter";
      readonly dir: string;
      readonly partitions: number;
      readonly tag: number;
      readonly localDedup: boolean;
      readonly memory?: "dedup" | "group";
      readonly values?: "json";
    }
  /** `encoded`: the shard's records arrive as UTF-8 JSON text (see {@link jsonPassthrough}), written as they are. */
  | { readonly kind: "jsonl"; readonly path: string; readonly fingerprint: string; readonly encoded?: boolean }
  | { readonly kind: "parquet"; readonly path: string; readonly fingerprint: string }
  | { readonly kind: "tokenCache"; readonly dir: string; readonly tokenizer: string; readonly vocabSize: number; readonly fingerprint: string };

/** What a shard's output reports. */
export type OutputResult =
  | { readonly kind: "collect"; readonly records: unknown[] }
  | { readonly kind: "count"; readonly count: number }
  | { readonly kind: "chunks"; readonly file: string; readonly count: number; readonly bytes: number }
  | { readonly kind: "scatter"; readonly ref: ScatterRef; readonly bytes: number }
  /**
   * A shard file. `"staged"`: written in full under the hidden temp name `staged`, beside `path`;
   * the coordinator publishes it under `path` once every shard of the stage has succeeded.
   */
  | {
      readonly kind: "file";
      readonly path: string;
      readonly count: number;
      readonly bytes: number;
      readonly outcome: "committed" | "already" | "staged";
      readonly staged?: string;
    };

/** A shard's open output. `write` returns a promise only when the caller must wait. */
export interface ShardOutput {
  write(batch: unknown[]): Promise<void> | undefined;
  close(): Promise<OutputResult>;
  abort(): Promise<void>;
}

/**
 * Whether `stage` (a deduplicate) hands its records straight to a JSONL sink: then its mappers
 * spill each record as JSON text and the reducer writes that text without decoding and
 * re-serialising it (in zephyr's benchmark, ~2 of a threads run's ~17 CPU seconds). Not for
 * the inline backend, whose exchange stays in memory. The output equals `JSON.stringify` of the
 * record as the inline backend writes it.
 */
export function jsonPassthrough(stage: Stage, sinkKind: string, backend: string): boolean {
  return backend !== "inline" && stage.input.kind === "shuffle" && stage.input.mode === "dedup" && stage.ops.length === 0 && stage.output.kind === "sink" && sinkKind === "jsonl";
}

/** Opens the output of one shard. */
export async function openShardOutput(spec: ShardOutputSpec, stage: Stage, task: { shard: number; memoryBudgetBytes: number }, where: StageWhere): Promise<ShardOutput> {
  switch (spec.kind) {
    case "collect": {
      const records: unknown[] = [];
      return {
        write(b) {
          for (let i = 0; i < b.length; i++) records.push(b[i]);
          return undefined;
        },
        close: async () => ({ kind: "collect", records }),
        abort: async () => undefined,
      };
    }
    case "count": {
      let count = 0;
      return {
        write(b) {
          count += b.length;
          return undefined;
        },
        close: async () => ({ kind: "count", count }),
        abort: async () => undefined,
      };
    }
    case "chunks": {
      await mkdir(path.dirname(spec.file), { recursive: true });
      const w = await ChunkWriter.create(spec.file);
      return {
        write: (b) => w.write(b),
        close: async () => {
          const count = await w.close();
          return { kind: "chunks", file: spec.file, count, bytes: w.bytes };
        },
        abort: async () => {
          await w.close().catch(() => undefined);
        },
      };
    }
    case "scatter": {
      if (stage.output.kind !== "scatter") throw new ZephyrError("INTERNAL", `stage ${stage.id} does not scatter`);
      await mkdir(spec.dir, { recursive: true });
      const w = await openScatter(
        spec.dir,
        spec.partitions,
        stage.output.key as (r: unknown) => unknown,
        task.memoryBudgetBytes,
        spec.tag,
        where,
        spec.localDedup,
        spec.memory,
        spec.values,
      );
      return {
        write: (b) => w.write(b),
        close: async () => {
          const { ref, bytes } = await w.close();
          return { kind: "scatter", ref, bytes };
        },
        abort: () => w.abort(),
      };
    }
    case "jsonl":
    case "parquet": {
      await mkdir(path.dirname(spec.path), { recursive: true });
      const tmp = tempPathFor(spec.path);
      const w = spec.kind === "jsonl" ? JsonlWriter.create(tmp) : await openParquetWriter(tmp);
      const encoded = spec.kind === "jsonl" && spec.encoded === true;
      let count = 0;
      return {
        write(b) {
          count += b.length;
          return encoded ? (w as JsonlWriter).writeEncoded(b as Uint8Array[]) : w.writeMany(b);
        },
        close: async () => {
          try {
            await w.close();
          } catch (e) {
            await unlink(tmp).catch(() => undefined);
            throw e;
          }
          // Not under its final name yet: nothing of a run is visible until its whole stage succeeded.
          const bytes = (await stat(tmp)).size;
          return { kind: "file", path: spec.path, count, bytes, outcome: "staged", staged: tmp };
        },
        abort: async () => {
          await w.abort();
          await unlink(tmp).catch(() => undefined);
        },
      };
    }
    case "tokenCache": {
      const lev = await loadLevanterSharding();
      const w = await lev.TokenCacheShardWriter.open(spec.dir, task.shard, { tokenizer: spec.tokenizer, vocabSize: spec.vocabSize });
      let count = 0;
      return {
        write: async (b) => {
          for (const r of b) await w.writeDocument(tokenIdsOf(r, count++));
        },
        close: async () => {
          const summary = await w.close();
          const file = path.join(spec.dir, summary.file);
          await writeCommitMarker(file, summary.numDocuments, spec.fingerprint);
          const bytes = (await stat(file)).size;
          return { kind: "file", path: file, count: summary.numDocuments, bytes, outcome: "committed" };
        },
        abort: () => w.abort(),
      };
    }
  }
}
