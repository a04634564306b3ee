// The output commit protocol. Each attempt writes to its own hidden temp file and hands it back
// staged; once every shard of the sink stage has succeeded, the coordinator publishes them all,
// each by a hard link onto the final name, which fails if that name exists (a late duplicate can
// never replace a committed shard, and a reader never sees a partial file). A failed run
// publishes nothing and removes its temp files. A per-shard marker (written after the link)
// records the count and the fingerprint of the run that made it; `_SUCCESS` lists every shard
// once all are in.
import { randomBytes } from "node:crypto";
import { link, readFile, stat, unlink, readdir } from "node:fs/promises";
import path from "node:path";
import { writeFileAtomic } from "@marin/iris/toolkit";
import { ZephyrError } from "../errors.ts";

/** What a committed shard file holds. */
export interface CommittedShard {
  readonly path: string;
  readonly count: number;
  readonly bytes: number;
}

/**
 * The path of shard `shard` of `total` for an output pattern: `{shard}` and `{total}` become
 * 5-digit zero-padded numbers. A pattern without `{shard}` is accepted only for a single shard.
 */
export function shardPath(pattern: string, shard: number, total: number): string {
  const pad = (n: number): string => String(n).padStart(5, "0");
  if (!pattern.includes("{shard}") && total > 1) {
    throw new ZephyrError(
      "INVALID_ARGUMENT",
      `output pattern ${JSON.stringify(pattern)} has no {shard} but ${total} shards would write to it; add {shard} (for example "out/part-{shard}-of-{total}.jsonl.gz")`,
    );
  }
  return path.resolve(pattern.replaceAll("{shard}", pad(shard)).replaceAll("{total}", pad(total)));
}

/**
 * A fresh hidden temp name beside `finalPath`, unique to this attempt. It ends with the final
 * name, so writers that pick compression by extension see the same extension.
 */
export function tempPathFor(finalPath: string): string {
  const base = path.basename(finalPath);
  return path.join(path.dirname(finalPath), `.tmp-${process.pid}-${randomBytes(6).toString("hex")}.${base}`);
}

function markerPath(finalPath: string): string {
  return path.join(path.dirname(finalPath), ".zephyr", `${path.basename(finalPath)}.json`);
}

/** Markers and `_SUCCESS`: atomic (a reader never sees half of one), not fsynced. */
function writeAtomic(file: string, text: string): Promise<void> {
  return writeFileAtomic(file, text, { durable: false, mkdir: true });
}

/**
 * Commits `tmpPath` as `finalPath` unless a shard is already committed there. Resolves to
 * `"committed"` when this attempt won, `"already"` when another attempt had (this attempt's temp
 * file is then removed). Either way the marker is (re)written with `count`, `bytes` and
 * `fingerprint`: attempts of a deterministic pipeline agree, and this repairs a winner that died
 * between link and marker. The coordinator removes files of earlier runs first, so a file found
 * here was written by an attempt of this run.
 */
export async function commitFile(tmpPath: string, finalPath: string, count: number, fingerprint: string): Promise<"committed" | "already"> {
  let outcome: "committed" | "already" = "committed";
  try {
    await link(tmpPath, finalPath);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw new ZephyrError("IO", `committing ${finalPath} failed`, { cause: e });
    outcome = "already";
  }
  await unlink(tmpPath).catch(() => undefined);
  const st = await stat(finalPath);
  if (outcome === "committed" || !(await readCommitted(finalPath, fingerprint))) {
    await writeAtomic(markerPath(finalPath), JSON.stringify({ path: finalPath, count, bytes: st.size, mtimeMs: st.mtimeMs, fingerprint }));
  }
  return outcome;
}

/** A shard written in full under a hidden temp name, waiting to be published. */
export interface StagedShard {
  /** The temp file (see {@link tempPathFor}). */
  readonly staged: string;
  /** Its final name. */
  readonly path: string;
  readonly count: number;
}

/**
 * Publishes a stage's staged shards under their final names (each with {@link commitFile}), once
 * every shard has succeeded. If one fails, the ones already published are removed again (files and
 * markers) and so are the remaining temp files, so a failed publish leaves no shard visible.
 */
export async function publishShards(shards: readonly StagedShard[], fingerprint: string): Promise<CommittedShard[]> {
  const published: string[] = [];
  // Settle every commit before judging, so none finishes after a clean-up.
  const settled = await Promise.allSettled(
    shards.map(async (s) => {
      await commitFile(s.staged, s.path, s.count, fingerprint);
      published.push(s.path);
      return { path: s.path, count: s.count, bytes: (await stat(s.path)).size };
    }),
  );
  const failed = settled.find((r) => r.status === "rejected");
  if (failed === undefined) return settled.map((r) => (r as PromiseFulfilledResult<CommittedShard>).value);
  await Promise.allSettled(shards.map((s) => unlink(s.staged)));
  await Promise.allSettled(published.flatMap((p) => [unlink(p), unlink(markerPath(p))]));
  throw failed.reason;
}

/** Records `finalPath` (already in place, committed by another writer) as a committed shard of `count` records made by the run `fingerprint`. */
export async function writeCommitMarker(finalPath: string, count: number, fingerprint: string): Promise<void> {
  const st = await stat(finalPath);
  await writeAtomic(markerPath(finalPath), JSON.stringify({ path: finalPath, count, bytes: st.size, mtimeMs: st.mtimeMs, fingerprint }));
}

/**
 * The committed shard at `finalPath`, or `undefined` if there is none, it does not match its
 * marker's size and modification time (a file edited or replaced since), or (when `fingerprint`
 * is given) another plan made it: `skipExisting` must never take a different pipeline's output
 * for this one's.
 */
export async function readCommitted(finalPath: string, fingerprint?: string): Promise<CommittedShard | undefined> {
  try {
    const marker = JSON.parse(await readFile(markerPath(finalPath), "utf8")) as CommittedShard & { fingerprint?: unknown; mtimeMs?: unknown };
    const st = await stat(finalPath);
    if (st.size !== marker.bytes || st.mtimeMs !== marker.mtimeMs || typeof marker.count !== "number") return undefined;
    if (fingerprint !== undefined && marker.fingerprint !== fingerprint) return undefined;
    return { path: finalPath, count: marker.count, bytes: marker.bytes };
  } catch {
    return undefined;
  }
}

/** The directory that holds all `paths` (where `_SUCCESS` goes). */
export function commonDir(paths: readonly string[]): string {
  let dir = path.dirname(paths[0]);
  for (const p of paths) while (!(p.startsWith(dir + path.sep) || path.dirname(p) === dir)) dir = path.dirname(dir);
  return dir;
}

/** Writes `_SUCCESS` (JSON: the shards, their counts and sizes) beside the outputs, last. */
export async function writeSuccessManifest(shards: readonly CommittedShard[], fingerprint: string): Promise<string> {
  const dir = commonDir(shards.map((s) => s.path));
  const file = path.join(dir, "_SUCCESS");
  const manifest = {
    fingerprint,
    total: shards.reduce((a, s) => a + s.count, 0),
    shards: shards.map((s) => ({ path: path.relative(dir, s.path), count: s.count, bytes: s.bytes })),
  };
  await writeAtomic(file, JSON.stringify(manifest, null, 2) + "\n");
  return file;
}

/** Removes temp files of `finalPaths` left by attempts that died (hidden, so readers never saw them). */
export async function removeStaleTemps(finalPaths: readonly string[]): Promise<void> {
  const byDir = new Map<string, Set<string>>(); // dir → suffixes of its temp names
  for (const p of finalPaths) {
    const set = byDir.get(path.dirname(p)) ?? new Set<string>();
    set.add(`.${path.basename(p)}`);
    byDir.set(path.dirname(p), set);
  }
  for (const [dir, prefixes] of byDir) {
    const names = await readdir(dir).catch(() => [] as string[]);
    await Promise.all(
      names.filter((n) => n.startsWith(".tmp-") && [...prefixes].some((suffix) => n.endsWith(suffix))).map((n) => unlink(path.join(dir, n)).catch(() => undefined)),
    );
  }
}

/**
 * Removes what an earlier run left at `finalPaths` (files, markers, and the `_SUCCESS` in
 * `successDir`, by default their common directory) so this run's shards can commit: within a run
 * a committed name is never replaced, so stale outputs go first. `_SUCCESS` goes before the
 * files, so a reader never takes a half-replaced output as complete.
 */
export async function clearPreviousOutputs(finalPaths: readonly string[], successDir?: string): Promise<void> {
  if (finalPaths.length === 0) return;
  await unlink(path.join(successDir ?? commonDir(finalPaths), "_SUCCESS")).catch(() => undefined);
  await Promise.all(finalPaths.flatMap((p) => [unlink(p).catch(() => undefined), unlink(markerPath(p)).catch(() => undefined)]));
}
