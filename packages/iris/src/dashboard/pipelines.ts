// Pipeline runs the dashboard draws as DAGs: a runner (marin) PUTs its run's record (nodes and
// their states, `../pipelineRecord.ts`) to `/api/pipelines/<run id>`; the controller keeps the
// latest record of each run in memory, with its owner (whoever created it): only the owner or an
// admin may change it.
import { inTree } from "../jobSpec.ts";
import { PipelineRecordSchema } from "../pipelineRecord.ts";
import type { PipelineRecord } from "../pipelineRecord.ts";

/** A caller as the pipeline routes see it (the controller's principal: a task token carries its job). */
export interface Principal {
  user: string;
  role: string;
  job?: string;
  worker?: string;
}
import { BodyTooLargeError, readBody } from "../http/body.ts";
import { refuse, reply } from "../http/respond.ts";
import type { HttpRouter } from "../http/router.ts";
import { formatZodIssues } from "../toolkit/zodIssues.ts";

/** One pipeline run record (the dashboard's name for iris's {@link PipelineRecord}). */
export type PipelineRun = PipelineRecord;

/** Runs kept in all (past it, the oldest run of the owner with the most runs is dropped). */
const MAX_RUNS = 100;
/** Runs kept per owner user (past it, that owner's oldest run is dropped). */
const MAX_RUNS_PER_OWNER = 20;

/** Who created a pipeline record: a user, or a task of job `job` (acting for the job's user). */
export interface PipelineOwner {
  user: string;
  job?: string;
}

/**
 * The owner of a record `p` creates, or why `p` may not write pipeline records at all (workers).
 */
export function pipelineOwnerOf(p: Principal): PipelineOwner | string {
  if (p.role === "worker") return "a worker token may not write pipeline records";
  return p.role === "task" && p.job !== undefined ? { user: p.user, job: p.job } : { user: p.user };
}

/**
 * Why `p` may not change a pipeline record owned by `owner`, or undefined when it may: admins
 * any; users their own (also those their jobs' tasks created); task tokens the records created by
 * their job's tree (the run's own job, e.g. a retried attempt of it); workers none.
 */
export function pipelineWriteRefusal(p: Principal, owner: PipelineOwner): string | undefined {
  if (p.role === "admin") return undefined;
  if (p.role === "user" && p.user === owner.user) return undefined;
  if (p.role === "task" && owner.job !== undefined && p.job !== undefined && inTree(owner.job, p.job)) return undefined;
  if (p.role === "worker") return "a worker token may not write pipeline records";
  const whose = owner.job !== undefined ? `job ${owner.job} of ${owner.user}` : owner.user;
  return `${p.role} ${p.user} may not change this pipeline record: it belongs to ${whose}`;
}
/** Bytes a PUT body may have. */
const MAX_BODY = 4 * 1024 * 1024;

/** The latest record of each run, in memory, with change listeners (the pipelines stream). */
export class PipelineStore {
  private readonly runs = new Map<string, PipelineRun>();
  private readonly owners = new Map<string, PipelineOwner>();
  private readonly listeners = new Set<() => void>();

  /** The owner of run `runId`'s record, if it is kept. */
  ownerOf(runId: string): PipelineOwner | undefined {
    return this.owners.get(runId);
  }

  /**
   * Stores (replaces) a run's record; `owner` is kept from the first put of the run (callers
   * check {@link pipelineWriteRefusal} first). Bounded per owner and in all, so that one writer
   * cannot push out everyone else's runs.
   */
  put(run: PipelineRun, owner: PipelineOwner = { user: "admin" }): void {
    const kept = this.owners.get(run.runId) ?? owner;
    this.runs.delete(run.runId);
    this.runs.set(run.runId, run);
    this.owners.set(run.runId, kept);
    const mine = [...this.owners].filter(([, o]) => o.user === kept.user).map(([id]) => id);
    for (const id of mine.slice(0, Math.max(0, mine.length - MAX_RUNS_PER_OWNER))) this.drop(id);
    while (this.runs.size > MAX_RUNS) {
      const count = new Map<string, number>();
      for (const o of this.owners.values()) count.set(o.user, (count.get(o.user) ?? 0) + 1);
      const biggest = [...count].sort((a, b) => b[1] - a[1])[0]![0];
      this.drop([...this.owners].find(([, o]) => o.user === biggest)![0]);
    }
    for (const l of [...this.listeners]) l();
  }

  private drop(runId: string): void {
    this.runs.delete(runId);
    this.owners.delete(runId);
  }

  /** Every run, newest first. */
  list(): PipelineRun[] {
    return [...this.runs.values()].sort((a, b) => b.startedAtMs - a.startedAtMs);
  }

  /** Calls `l` after each change; returns the unsubscribe. */
  subscribe(l: () => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** `GET /api/pipelines` (every run) and `PUT /api/pipelines/<runId>` (a runner's record); policy `user`. */
export function addPipelineRoutes(router: HttpRouter, opts: { pipelines: PipelineStore }): void {
  router.add({ name: "GET /api/pipelines", methods: ["GET"], path: "/api/pipelines", auth: "user", handler: ({ res }) => reply(res, 200, { runs: opts.pipelines.list() }) });
  router.add({
    name: "PUT /api/pipelines/<runId>",
    methods: ["PUT"],
    path: /^\/api\/pipelines\/([^/]+)$/,
    example: "/api/pipelines/run-1",
    auth: "user",
    handler: async ({ req, res, match, principal }) => {
      const id = match[1]!;
      // Who may write is checked before the body is read (the controller's authenticator gives
      // its own principals, task tokens with their job).
      const p = principal as Principal;
      const owner = pipelineOwnerOf(p);
      const existing = opts.pipelines.ownerOf(safeDecode(id));
      const refusal = typeof owner === "string" ? owner : existing !== undefined ? pipelineWriteRefusal(p, existing) : undefined;
      if (refusal !== undefined) return reply(res, 403, { code: "PERMISSION_DENIED", message: refusal });
      let parsed: unknown;
      try {
        parsed = JSON.parse(await readBody(req, MAX_BODY));
      } catch (e) {
        if (e instanceof BodyTooLargeError) return refuse(res, 413, "RESOURCE_EXHAUSTED", e.message);
        return reply(res, 400, { code: "INVALID_ARGUMENT", message: `body: expected a pipeline run as JSON (${(e as Error).message})` });
      }
      const r = PipelineRecordSchema.safeParse(parsed);
      if (!r.success) {
        return reply(res, 400, { code: "INVALID_ARGUMENT", message: `pipeline run: ${formatZodIssues(r.error)}` });
      }
      const decoded = safeDecode(id);
      if (r.data.runId !== decoded) return reply(res, 400, { code: "INVALID_ARGUMENT", message: `runId: the body's ${r.data.runId} is not the path's ${id}` });
      // Checked again: another writer may have created the run while the body was read.
      const now = opts.pipelines.ownerOf(r.data.runId);
      const late = now !== undefined ? pipelineWriteRefusal(p, now) : undefined;
      if (late !== undefined) return reply(res, 403, { code: "PERMISSION_DENIED", message: late });
      opts.pipelines.put(r.data, owner as PipelineOwner);
      reply(res, 200, {});
    },
  });
}
