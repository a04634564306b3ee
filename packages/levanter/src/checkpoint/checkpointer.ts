// The checkpoint policy: when to save (time and step rules) and which checkpoints to keep.
import { rm } from "node:fs/promises";
import path from "node:path";
import { z } from "@marin/iris/toolkit";
import { LevanterError } from "../errors.ts";
import { formatZodIssues } from "@marin/iris/toolkit";
import { checkpointDirName, findLatestCheckpoint, listCheckpoints, readCheckpointMetadata } from "./checkpointStore.ts";
import type { DamagedCheckpointPolicy, FoundCheckpoint } from "./checkpointStore.ts";

const stepPolicySchema = z.object({
  every: z.number().int().positive(),
  until: z.number().int().positive().optional(),
});

/**
 * The checkpoint policy as the trainer config spells it (embed it in a config schema; defaults
 * follow upstream Levanter). `keep` is a list of permanent step policies sorted by `until`, where
 * only the last may omit `until` (= forever), and `null` means none; `saveIntervalSeconds: null`
 * disables temporary saves.
 */
export const checkpointerConfigSchema = z
  .object({
    basePath: z.string().min(1),
    temporaryBasePath: z.string().min(1).optional(),
    saveIntervalSeconds: z.number().positive().nullable().default(900),
    keep: z
      .array(stepPolicySchema)
      .nullable()
      .default([{ every: 10_000 }])
      .transform((keep) => keep ?? []),
    keepLastTemporary: z.number().int().nonnegative().default(1),
    deleteOldTempCheckpoints: z.boolean().default(true),
  })
  .superRefine((cfg, ctx) => {
    cfg.keep.forEach((p, i) => {
      if (p.until === undefined && i !== cfg.keep.length - 1) {
        ctx.addIssue({ code: "custom", path: ["keep", i, "until"], message: "only the last policy may omit until" });
      }
      const prev = cfg.keep[i - 1]?.until;
      if (i > 0 && p.until !== undefined && prev !== undefined && p.until <= prev) {
        ctx.addIssue({ code: "custom", path: ["keep", i, "until"], message: `policies must be sorted by until (${p.until} after ${prev})` });
      }
    });
  });

/** Checkpoint policy, as written (defaults optional). */
export type CheckpointerConfigInput = z.input<typeof checkpointerConfigSchema>;
/** Checkpoint policy with defaults filled in. */
export type CheckpointerConfig = z.output<typeof checkpointerConfigSchema>;

/** Writes a checkpoint into `dir` (typically with {@link saveCheckpoint}); metadata.json last. */
export type SaveFn = (dir: string, isTemporary: boolean) => Promise<void>;

/** What {@link Checkpointer.onStep} saved. */
export interface SavedCheckpoint {
  step: number;
  path: string;
  isTemporary: boolean;
}

/**
 * Decides when to checkpoint and prunes old temporary checkpoints. Call {@link Checkpointer.onStep}
 * after every training step (awaiting it); it calls your `save` when a checkpoint is due:
 *
 * - step 0 is never saved unless forced;
 * - a step that matches the current `keep` policy (`step % every === 0` for the first policy with
 *   `step ≤ until`) saves a **permanent** checkpoint under `basePath`;
 * - otherwise, once `saveIntervalSeconds` have passed since the last save (or since construction,
 *   or step 0), a **temporary** one under `temporaryBasePath` (default `basePath`);
 * - `force` saves a permanent one; {@link Checkpointer.requestSave} asks for one at the next step
 *   (temporary unless the policy already makes it permanent; requests coalesce);
 * - any save resets the interval clock.
 *
 * Pruning, after each successful save: a permanent save deletes every temporary checkpoint the
 * checkpointer tracks (it supersedes them); a temporary save deletes all but the newest
 * `keepLastTemporary` (0: even the one just written). Tracked temporaries are this checkpointer's
 * own plus, when `deleteOldTempCheckpoints`, those an earlier process left in either root (found
 * just before its first save). Only directories whose metadata.json says `isTemporary` are ever
 * deleted.
 *
 * The clock is injected (`now`, milliseconds) so that tests drive it.
 *
 * @example
 * const ckpt = new Checkpointer({ basePath: "ckpt", saveIntervalSeconds: 600, keep: [{ every: 1000 }] });
 * await ckpt.onStep(step, (dir, isTemporary) => saveCheckpoint(dir, { step, isTemporary, arrays, state }).then(() => {}));
 */
export class Checkpointer {
  readonly config: CheckpointerConfig;
  readonly #now: () => number;
  #lastSaveMs: number;
  #saveRequested = false;
  /** Tracked temporary checkpoint paths, oldest step first. */
  #temporaries: { step: number; path: string }[] = [];
  #discovered: Promise<void> | undefined;

  constructor(config: CheckpointerConfigInput & { now?: () => number }) {
    const { now, ...rest } = config;
    const parsed = checkpointerConfigSchema.safeParse(rest);
    if (!parsed.success) throw new LevanterError("INVALID_CONFIG", `checkpointer: ${formatZodIssues(parsed.error)}`);
    this.config = parsed.data;
    this.#now = now ?? Date.now;
    this.#lastSaveMs = this.#now();
  }

  /** Where permanent checkpoints go. */
  get basePath(): string {
    return this.config.basePath;
  }

  /** Where temporary checkpoints go (the base path unless configured apart). */
  get temporaryBasePath(): string {
    return this.config.temporaryBasePath ?? this.config.basePath;
  }

  /** The roots that resume searches, permanent first. */
  get roots(): string[] {
    return [...new Set([this.basePath, this.temporaryBasePath])];
  }

  /** The every-N of the permanent policy in force at `step`, or undefined if none applies. */
  permanentEvery(step: number): number | undefined {
    return this.config.keep.find((p) => p.until === undefined || step <= p.until)?.every;
  }

  /** Asks for a checkpoint at the next {@link Checkpointer.onStep} (e.g. from a signal handler). */
  requestSave(): void {
    this.#saveRequested = true;
  }

  /**
   * Called after training step `step`: saves through `save` if a checkpoint is due (see the class
   * summary), then prunes temporaries. Returns what was saved, or undefined.
   */
  async onStep(step: number, save: SaveFn, opts: { force?: boolean } = {}): Promise<SavedCheckpoint | undefined> {
    const decision = this.decide(step, opts);
    if (decision === undefined) return undefined;
    await this.commit(decision, save);
    return decision;
  }

  /**
   * The first half of {@link Checkpointer.onStep}: whether step `step` saves, and where. It
   * advances the interval clock as a save would, so call {@link Checkpointer.commit} with the
   * result. Split out for data-parallel training, where rank 0 decides (its clock alone) and
   * broadcasts the decision, so clock skew cannot split the ranks.
   */
  decide(step: number, opts: { force?: boolean } = {}): SavedCheckpoint | undefined {
    if (!Number.isSafeInteger(step) || step < 0) throw new LevanterError("INVALID_CONFIG", `step: expected a non-negative integer, got ${step}`);
    const now = this.#now();
    let isTemporary: boolean;
    if (opts.force) {
      isTemporary = false;
    } else if (step === 0) {
      this.#lastSaveMs = now;
      return undefined;
    } else {
      const every = this.permanentEvery(step);
      const interval = this.config.saveIntervalSeconds;
      if (every !== undefined && step % every === 0) isTemporary = false;
      else if (this.#saveRequested || (interval !== null && now - this.#lastSaveMs >= interval * 1000)) isTemporary = true;
      else return undefined;
    }
    this.#lastSaveMs = now;
    this.#saveRequested = false;
    const dir = path.join(isTemporary ? this.temporaryBasePath : this.basePath, checkpointDirName(step));
    return { step, path: dir, isTemporary };
  }

  /**
   * The second half of {@link Checkpointer.onStep}: runs `save` for a decision from
   * {@link Checkpointer.decide}, checks that it completed (metadata.json present), then prunes.
   */
  async commit(decision: SavedCheckpoint, save: SaveFn): Promise<void> {
    await this.#discoverOldTemporaries();
    await save(decision.path, decision.isTemporary);
    const meta = await readCheckpointMetadata(decision.path);
    if (meta === undefined) {
      throw new LevanterError("INTERNAL", `checkpoint save for step ${decision.step} returned without writing ${decision.path}/metadata.json`);
    }
    await this.#prune(decision.step, decision.path, decision.isTemporary);
  }

  /**
   * The newest complete checkpoint across both roots (what a restarted run resumes from). A
   * damaged metadata.json is skipped with a warning naming it, or throws with `damaged: "error"`.
   */
  latest(opts: { maxStep?: number; damaged?: DamagedCheckpointPolicy } = {}): Promise<FoundCheckpoint | undefined> {
    return findLatestCheckpoint(this.roots, opts);
  }

  async #prune(step: number, savedPath: string, isTemporary: boolean): Promise<void> {
    const saved = path.resolve(savedPath);
    this.#temporaries = this.#temporaries.filter((t) => path.resolve(t.path) !== saved);
    if (isTemporary) this.#temporaries.push({ step, path: savedPath });
    this.#temporaries.sort((a, b) => a.step - b.step);
    const keep = isTemporary ? this.config.keepLastTemporary : 0;
    const doomed = this.#temporaries.slice(0, Math.max(0, this.#temporaries.length - keep));
    this.#temporaries = this.#temporaries.slice(doomed.length);
    for (const t of doomed) {
      // Never delete what is no longer temporary (a directory re-saved as permanent).
      const meta = await readCheckpointMetadata(t.path).catch(() => undefined);
      if (meta?.isTemporary) await rm(t.path, { recursive: true, force: true });
    }
  }

  #discoverOldTemporaries(): Promise<void> {
    this.#discovered ??= (async () => {
      if (!this.config.deleteOldTempCheckpoints) return;
      for (const root of this.roots) {
        // Quiet: latest() already warned about damaged directories; they are never deleted.
        for (const c of await listCheckpoints(root, { damaged: "skip" })) {
          if (c.metadata.isTemporary) this.#temporaries.push({ step: c.metadata.step, path: c.path });
        }
      }
      this.#temporaries.sort((a, b) => a.step - b.step);
    })();
    return this.#discovered;
  }
}
