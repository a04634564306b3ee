// A step's `info.json` and the prefix's last-run records (what `explain` diffs against).
import path from "node:path";
import { z } from "@marin/iris/toolkit";
import type { ResolvedStep, StepIdentity } from "../step/graph.ts";
import { writeFileAtomic } from "@marin/iris/toolkit";
import { META_WRITE, metaDir, prefixMetaDir, readJson } from "./stepFiles.ts";

const infoSchema = z.object({
  name: z.string(),
  id: z.string(),
  hash: z.string(),
  version: z.string().nullable(),
  identity: z.object({ config: z.unknown(), version: z.string().nullable(), deps: z.array(z.string()) }),
  config: z.unknown(),
  dependencies: z.array(z.object({ name: z.string(), id: z.string(), outputPath: z.string() })),
  outputPath: z.string(),
  createdAt: z.number(),
  runId: z.string().optional(),
});

/** The content of `<output>/.marin/info.json` (and of the per-name pointer to the last run). */
export interface StepRunInfo {
  name: string;
  id: string;
  hash: string;
  version: string | null;
  identity: StepIdentity;
  /** The resolved config `fn` received. */
  config: unknown;
  dependencies: { name: string; id: string; outputPath: string }[];
  outputPath: string;
  createdAt: number;
  runId?: string;
}

/** The info record of a step as it is now. */
export function infoOf(rs: ResolvedStep, now: number, runId?: string): StepRunInfo {
  return {
    name: rs.name,
    id: rs.id,
    hash: rs.hash,
    version: rs.step.version ?? null,
    identity: rs.identity,
    config: rs.config,
    dependencies: rs.deps.map((d) => ({ name: d.name, id: d.id, outputPath: d.outputPath })),
    outputPath: rs.outputPath,
    createdAt: now,
    ...(runId ? { runId } : {}),
  };
}

/** Writes `<output>/.marin/info.json`. */
export async function writeInfo(info: StepRunInfo): Promise<void> {
  await writeFileAtomic(path.join(metaDir(info.outputPath), "info.json"), JSON.stringify(info, null, 2) + "\n", META_WRITE);
}

/** Where the pointer to the last run of step `name` at `prefix` lives. */
export function lastRunFile(prefix: string, name: string): string {
  return path.join(prefixMetaDir(prefix), "last", `${name}.json`);
}

/** The info of the last run of step `name` at `prefix` (whatever its config was), if any. */
export async function readLastRun(prefix: string, name: string): Promise<StepRunInfo | undefined> {
  const raw = await readJson(lastRunFile(prefix, name));
  if (raw === undefined) return undefined;
  const parsed = infoSchema.safeParse(raw);
  return parsed.success ? (parsed.data as StepRunInfo) : undefined;
}

/** Records `info` as the last run of its step at `prefix`. */
export async function writeLastRun(prefix: string, info: StepRunInfo): Promise<void> {
  await writeFileAtomic(lastRunFile(prefix, info.name), JSON.stringify(info, null, 2) + "\n", META_WRITE);
}
