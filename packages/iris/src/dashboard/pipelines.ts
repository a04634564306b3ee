// Pipeline runs the dashboard draws as DAGs: a runner (marin) PUTs its run's steps and their states
// to `/api/pipelines/<run id>`; the controller keeps the latest record of each run in memory.
import { z } from "zod";
import { BodyTooLargeError, readBody } from "../http/body.ts";
import { refuse, reply } from "../http/respond.ts";
import type { HttpRouter } from "../http/router.ts";

/** States a pipeline step shows. */
export const PIPELINE_STEP_STATES = ["planned", "waiting", "running", "publishing", "cached", "done", "failed", "dep_failed", "cancelled", "not_selected"] as const;

const stepSchema = z.object({
  name: z.string().min(1).max(500),
  id: z.string().max(600),
  outputPath: z.string().max(4096),
  deps: z.array(z.string().max(500)).max(1000),
  state: z.enum(PIPELINE_STEP_STATES),
  startedAtMs: z.number().optional(),
  durationMs: z.number().nonnegative().optional(),
  error: z.string().max(20_000).optional(),
  /** The `marin explain` text of the step (why it runs or is skipped). */
  explain: z.string().max(20_000).optional(),
  /** The step's latest progress line (training: step, loss, ETA). */
  progress: z.string().max(2000).optional(),
  /** The iris job that runs the step, when it runs as one (its page has the training charts). */
  job: z.string().max(1000).optional(),
});

/** A pipeline run as the dashboard shows it (`PUT /api/pipelines/<runId>`'s body). */
export const PipelineRunSchema = z.object({
  runId: z.string().regex(/^[A-Za-z0-9._-]{1,200}$/, "expected letters, digits, '.', '_' or '-'"),
  prefix: z.string().max(4096),
  state: z.enum(["running", "finished"]),
  ok: z.boolean().optional(),
  startedAtMs: z.number(),
  finishedAtMs: z.number().optional(),
  steps: z.array(stepSchema).max(1000),
});

/** One pipeline run record. */
export type PipelineRun = z.infer<typeof PipelineRunSchema>;
/** One step of a {@link PipelineRun}. */
export type PipelineStep = PipelineRun["steps"][number];

/** Runs kept (the oldest is dropped first). */
const MAX_RUNS = 100;
/** Bytes a PUT body may have. */
const MAX_BODY = 4 * 1024 * 1024;

/** The latest record of each run, in memory, with change listeners (the pipelines stream). */
export class PipelineStore {
  private readonly runs = new Map<string, PipelineRun>();
  private readonly listeners = new Set<() => void>();

  /** Stores (replaces) a run's record. */
  put(run: PipelineRun): void {
    this.runs.delete(run.runId);
    this.runs.set(run.runId, run);
    while (this.runs.size > MAX_RUNS) this.runs.delete(this.runs.keys().next().value!);
    for (const l of [...this.listeners]) l();
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

/** `GET /api/pipelines` (every run) and `PUT /api/pipelines/<runId>` (a runner's record); policy `user`. */
export function addPipelineRoutes(router: HttpRouter, opts: { pipelines: PipelineStore }): void {
  router.add({ name: "GET /api/pipelines", methods: ["GET"], path: "/api/pipelines", auth: "user", handler: ({ res }) => reply(res, 200, { runs: opts.pipelines.list() }) });
  router.add({
    name: "PUT /api/pipelines/<runId>",
    methods: ["PUT"],
    path: /^\/api\/pipelines\/([^/]+)$/,
    example: "/api/pipelines/run-1",
    auth: "user",
    handler: async ({ req, res, match }) => {
      const id = match[1]!;
      let parsed: unknown;
      try {
        parsed = JSON.parse(await readBody(req, MAX_BODY));
      } catch (e) {
        if (e instanceof BodyTooLargeError) return refuse(res, 413, "RESOURCE_EXHAUSTED", e.message);
        return reply(res, 400, { code: "INVALID_ARGUMENT", message: `body: expected a pipeline run as JSON (${(e as Error).message})` });
      }
      const r = PipelineRunSchema.safeParse(parsed);
      if (!r.success) {
        return reply(res, 400, { code: "INVALID_ARGUMENT", message: `pipeline run: ${r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}` });
      }
      let decoded: string;
      try {
        decoded = decodeURIComponent(id);
      } catch {
        decoded = id;
      }
      if (r.data.runId !== decoded) return reply(res, 400, { code: "INVALID_ARGUMENT", message: `runId: the body's ${r.data.runId} is not the path's ${id}` });
      opts.pipelines.put(r.data);
      reply(res, 200, {});
    },
  });
}
