// The pipeline-run record: the one contract between a runner that reports a run (marin's `marin
// run --dashboard`) and the controller's dashboard that draws it (`PUT /api/pipelines/<runId>`).
// iris owns it. Its vocabulary is generic: a run is a graph of named nodes, each with a state,
// the names of the nodes it depends on and, when it runs as one, the iris job that runs it.
//
// The JSON field names are the wire format and stay as they are: the node list is `steps` and a
// node's content address is `id`/`outputPath` (any string a runner uses to say where a node's
// result lives; marin writes its step's output path). Only the TypeScript names are generic.
import { z } from "./toolkit/zod.ts";

/**
 * States a node shows: `planned` (will run), `waiting` (on its dependencies or a lock),
 * `running`, `publishing` (writing its result), `cached` (its result exists: not run), `done`,
 * `failed`, `dep_failed` (a dependency failed), `cancelled`, `not_selected` (outside this run).
 */
export const PIPELINE_NODE_STATES = ["planned", "waiting", "running", "publishing", "cached", "done", "failed", "dep_failed", "cancelled", "not_selected"] as const;

/** One node of a pipeline run (a marin step). */
export const PipelineNodeSchema = z.object({
  /** Unique within the run; `deps` name other nodes by it. */
  name: z.string().min(1).max(500),
  /** The node's identity (marin: its content-addressed step id). */
  id: z.string().max(600),
  /** Where the node's result lives (marin: the step's output path). */
  outputPath: z.string().max(4096),
  /** Names of the nodes this one depends on (the graph's edges). */
  deps: z.array(z.string().max(500)).max(1000),
  state: z.enum(PIPELINE_NODE_STATES),
  startedAtMs: z.number().optional(),
  durationMs: z.number().nonnegative().optional(),
  error: z.string().max(20_000).optional(),
  /** Why the node runs or is skipped (marin: the `marin explain` text). */
  explain: z.string().max(20_000).optional(),
  /** The node's latest progress line (training: step, loss, ETA). */
  progress: z.string().max(2000).optional(),
  /** The iris job that runs the node, when it runs as one (its page has the training charts). */
  job: z.string().max(1000).optional(),
});

/** A pipeline run as the dashboard shows it (`PUT /api/pipelines/<runId>`'s body). */
export const PipelineRecordSchema = z.object({
  runId: z.string().regex(/^[A-Za-z0-9._-]{1,200}$/, "expected letters, digits, '.', '_' or '-'"),
  /** Where the run's results live (marin: the pipeline's prefix). */
  prefix: z.string().max(4096),
  state: z.enum(["running", "finished"]),
  /** Set when finished: whether every selected node succeeded. */
  ok: z.boolean().optional(),
  startedAtMs: z.number(),
  finishedAtMs: z.number().optional(),
  /** The run's nodes (the wire name is `steps`). */
  steps: z.array(PipelineNodeSchema).max(1000),
});

/** One pipeline run record. */
export type PipelineRecord = z.infer<typeof PipelineRecordSchema>;
/** One node of a {@link PipelineRecord}. */
export type PipelineNode = z.infer<typeof PipelineNodeSchema>;
/** A node's state. */
export type PipelineNodeState = (typeof PIPELINE_NODE_STATES)[number];
