// The run records under `<prefix>/.marin/runs/<run-id>/run.json`: written when a run starts executing steps and when it ends; what `marin runs` and `marin logs` read.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "@marin/iris/toolkit";
import { writeFileAtomic } from "@marin/iris/toolkit";
import { META_WRITE, prefixMetaDir, readJson } from "./stepFiles.ts";

const reportSchema = z.object({ name: z.string(), id: z.string(), outputPath: z.string(), outcome: z.string(), error: z.string().optional() });

const recordSchema = z.object({
  runId: z.string(),
  prefix: z.string(),
  /** `running` until the runner ends (a runner killed outright leaves it `running`). */
  state: z.enum(["running", "finished"]),
  startedAt: z.number(),
  finishedAt: z.number().optional(),
  host: z.string().optional(),
  pid: z.number().optional(),
  ok: z.boolean().optional(),
  steps: z.array(reportSchema.partial({ outcome: true })),
});

/** The content of a run's `run.json`. */
export type RunRecord = z.infer<typeof recordSchema>;

/** The folder of run `runId` at `prefix`. */
export function runDirOf(prefix: string, runId: string): string {
  return path.join(prefixMetaDir(prefix), "runs", runId);
}

/** Writes a run's record (atomically). */
export async function writeRunRecord(record: RunRecord): Promise<void> {
  await writeFileAtomic(path.join(runDirOf(record.prefix, record.runId), "run.json"), JSON.stringify(record, null, 2) + "\n", META_WRITE);
}

/** This process, as a run record names its runner. */
export function runnerIdentity(): { host: string; pid: number } {
  return { host: os.hostname(), pid: process.pid };
}

/** Every run folder at `prefix`, oldest first (run ids start with their start time), with its record when readable. */
export async function listRuns(prefix: string): Promise<{ runId: string; dir: string; record: RunRecord | undefined }[]> {
  const root = path.join(prefixMetaDir(prefix), "runs");
  const names = (await fs.readdir(root, { withFileTypes: true }).catch(() => []))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (runId) => {
      const dir = path.join(root, runId);
      const parsed = recordSchema.safeParse(await readJson(path.join(dir, "run.json")).catch(() => undefined));
      return { runId, dir, record: parsed.success ? parsed.data : undefined };
    }),
  );
}

/** Whether the runner of a `running` record is still alive (only decidable on its own host; elsewhere: assumed alive). */
export function runnerAlive(record: RunRecord): boolean {
  if (record.state !== "running") return false;
  if (record.host !== os.hostname() || record.pid === undefined) return true;
  try {
    process.kill(record.pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
