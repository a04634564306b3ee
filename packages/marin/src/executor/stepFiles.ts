// The files of a step's `.marin/` folder: paths, the status file, the write mode of its files and JSON reads.
import { promises as fs } from "node:fs";
import path from "node:path";
import { formatZodIssues, writeFileAtomic } from "@marin/iris/toolkit";
import { z } from "@marin/iris/toolkit";
import { MarinError } from "../errors.ts";

/**
 * Where a step's bookkeeping lives: beside its output folder, `<parent>/.marin/<name>-<hash>/` for
 * the output `<parent>/<name>-<hash>/`. Never inside it: the output folder appears only when its
 * staging folder (in here) is renamed to it, complete.
 */
export function metaDir(outputPath: string): string {
  return path.join(path.dirname(outputPath), ".marin", path.basename(outputPath));
}

/**
 * The staging folder the holder of lease `token` writes into (published by rename on success).
 * One per token, so a holder that lost its lease (a body still running, abandoned) never writes
 * into the folder of the holder that took over.
 */
export function stagingDir(outputPath: string, token: number): string {
  return path.join(metaDir(outputPath), `staging-${token}`);
}

const STAGING_DIR = /^staging-(\d+)$/;

/** The lease tokens of the staging folders present in a step's `.marin/`, highest first. */
export async function stagingTokens(outputPath: string): Promise<number[]> {
  let names: string[];
  try {
    names = await fs.readdir(metaDir(outputPath));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  return names
    .flatMap((n) => {
      const m = STAGING_DIR.exec(n);
      return m ? [Number(m[1])] : [];
    })
    .sort((a, b) => b - a);
}

/** The prefix-wide bookkeeping folder: run records, logs, the embedded cluster's database, pointers. */
export function prefixMetaDir(prefix: string): string {
  return path.join(prefix, ".marin");
}

/** The states a step's `status.json` records. */
export const STEP_STATES = ["RUNNING", "SUCCESS", "FAILED", "DEP_FAILED", "CANCELLED"] as const;
/** One of {@link STEP_STATES}. */
export type StepState = (typeof STEP_STATES)[number];

const statusSchema = z.object({
  state: z.enum(STEP_STATES),
  updatedAt: z.number(),
  startedAt: z.number().optional(),
  finishedAt: z.number().optional(),
  error: z.string().optional(),
  owner: z.string().optional(),
  token: z.number().optional(),
  runId: z.string().optional(),
  result: z.unknown().optional(),
  /** The hash of the step function's source when it succeeded (see `codeHashOf`). */
  codeHash: z.string().optional(),
});

/** The content of `<output>/.marin/status.json`. */
export type StepStatus = z.infer<typeof statusSchema>;

/** How the executor writes its small files: atomically (readers see the old or the new), not fsynced. */
export const META_WRITE = { durable: false, mkdir: true } as const;

/** Reads and parses a JSON file; `undefined` if it does not exist. */
export async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
    throw e;
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new MarinError("INTERNAL", `${file}: not valid JSON`, { cause: e });
  }
}

/** A step's status, or `undefined` if it never ran at this prefix. */
export async function readStatus(outputPath: string): Promise<StepStatus | undefined> {
  const file = path.join(metaDir(outputPath), "status.json");
  const raw = await readJson(file);
  if (raw === undefined) return undefined;
  const parsed = statusSchema.safeParse(raw);
  if (!parsed.success) throw new MarinError("INTERNAL", `${file}: unexpected content: ${formatZodIssues(parsed.error)}`);
  return parsed.data;
}

/** Replaces a step's status (atomically). */
export async function writeStatus(outputPath: string, status: StepStatus): Promise<void> {
  await writeFileAtomic(path.join(metaDir(outputPath), "status.json"), JSON.stringify(status, null, 2) + "\n", META_WRITE);
}
