// The dashboard's live streams (server-sent events): the cluster overview, one job (WatchJob), its
// log lines (StreamLogs with follow), a task's metrics and the pipeline records. The gRPC handlers
// run in-process with the caller's credentials, exactly as the JSON API calls the unary ones.
import { EventEmitter } from "node:events";
import * as grpc from "@grpc/grpc-js";
import type { ControllerServiceHandlers } from "../internal/generated/iris/v1/ControllerService.ts";
import { SseStream } from "../http/sse.ts";
import { reply } from "../http/respond.ts";
import type { HttpRouter } from "../http/router.ts";
import type { PipelineStore } from "./pipelines.ts";

/** Subscribes to every job (instance id) and worker change; returns the unsubscribe. */
export type ChangeSource = (l: (kind: "job" | "worker", id: string) => void) => () => void;

/** What the stream routes need. */
export interface StreamRouteOptions {
  handlers: ControllerServiceHandlers;
  onChange: ChangeSource;
  pipelines: PipelineStore;
}

/** The least time between two snapshots of a throttled stream (changes in between are merged). */
const THROTTLE_MS = 200;
/** The overview is also resent this often (worker heartbeats change no state). */
const OVERVIEW_REFRESH_MS = 5_000;

function metadataOf(authorization: string): grpc.Metadata {
  const md = new grpc.Metadata();
  if (authorization) md.set("authorization", authorization);
  return md;
}

class CallError extends Error {
  readonly code: number;
  constructor(err: Partial<grpc.StatusObject>) {
    super(err.details ?? "call failed");
    this.code = err.code ?? grpc.status.INTERNAL;
  }
}

/** Calls a unary handler in-process with the caller's credentials. */
export function callUnary<Res>(handlers: ControllerServiceHandlers, method: string, request: unknown, authorization: string): Promise<Res> {
  return new Promise((resolve, reject) => {
    const h = handlers[method] as grpc.handleUnaryCall<unknown, unknown>;
    h({ request, metadata: metadataOf(authorization) } as grpc.ServerUnaryCall<unknown, unknown>, (err, value) =>
      err ? reject(new CallError(err as Partial<grpc.StatusObject>)) : resolve(value as Res),
    );
  });
}

/**
 * Runs a server-stream handler in-process: each `write` is handed to `onData`; `onEnd` gets the
 * error (if any) once. Returns the cancel function (what a gone client triggers).
 */
function callStream(
  handlers: ControllerServiceHandlers,
  method: string,
  request: unknown,
  authorization: string,
  onData: (v: unknown) => void,
  onEnd: (err?: Partial<grpc.StatusObject>) => void,
): () => void {
  const call = new EventEmitter() as EventEmitter & Record<string, unknown>;
  let ended = false;
  const end = (err?: Partial<grpc.StatusObject>): void => {
    if (ended) return;
    ended = true;
    onEnd(err);
  };
  Object.assign(call, {
    request,
    metadata: metadataOf(authorization),
    cancelled: false,
    write: (v: unknown) => {
      if (!ended) onData(v);
      return true;
    },
    end: () => end(),
  });
  call.on("error", (e: Partial<grpc.StatusObject>) => end(e));
  (handlers[method] as (c: unknown) => void)(call);
  return () => {
    if (ended) return;
    ended = true;
    call.cancelled = true;
    call.emit("cancelled");
  };
}

/** Calls `fn` at most every THROTTLE_MS while `trigger` is called (the last trigger always runs). */
function throttled(fn: () => Promise<void>): () => void {
  let running = false;
  let again = false;
  let last = 0;
  const run = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    const wait = Math.max(0, last + THROTTLE_MS - Date.now());
    setTimeout(() => {
      last = Date.now();
      fn()
        .catch(() => undefined)
        .finally(() => {
          running = false;
          if (again) {
            again = false;
            run();
          }
        });
    }, wait);
  };
  return run;
}

function statusName(code: number): string {
  return grpc.status[code] ?? "UNKNOWN";
}

/** Ends the event stream of a gRPC call: a `failure` event naming the status, or `end`. */
function endStream(s: SseStream, err?: Partial<grpc.StatusObject>): void {
  if (err) s.send("failure", { code: statusName(err.code ?? grpc.status.INTERNAL), message: err.details ?? "" });
  else s.send("end", {});
  s.close();
}

/** The SSE routes `GET /api/stream/<kind>` (policy `user`: the router checks auth before anything is written). */
export function addStreamRoutes(router: HttpRouter, opts: StreamRouteOptions): void {
  const { handlers } = opts;
  router.add({
    name: "GET /api/stream/<overview|job|logs|metrics|pipelines>",
    methods: ["GET"],
    path: { prefix: "/api/stream/" },
    auth: "user",
    handler: ({ req, res, url, credentials }) => void route(req, res, url, credentials.authorization ?? ""),
  });
  const route = (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse, url: URL, authorization: string): boolean => {
    const q = url.searchParams;
    const kind = url.pathname.slice("/api/stream/".length);
    const fail = (e: unknown, s: SseStream): void => {
      s.send("failure", { code: e instanceof CallError ? statusName(e.code) : "INTERNAL", message: e instanceof Error ? e.message : String(e) });
      s.close();
    };
    switch (kind) {
      case "overview": {
        const s = new SseStream(req, res);
        const snapshot = throttled(async () => {
          if (s.closed) return;
          try {
            const [jobs, workers, endpoints] = await Promise.all([
              callUnary<{ jobs: unknown[] }>(handlers, "ListJobs", { prefix: q.get("prefix") ?? "", pageSize: 1000, pageToken: "" }, authorization),
              callUnary<{ workers: unknown[] }>(handlers, "ListWorkers", {}, authorization),
              callUnary<{ endpoints: unknown[] }>(handlers, "ListEndpoints", { prefix: "", scopeJob: "" }, authorization),
            ]);
            s.send("overview", { jobs: jobs.jobs, workers: workers.workers, endpoints: endpoints.endpoints, timeMs: Date.now() });
          } catch (e) {
            fail(e, s);
          }
        });
        s.onClose(opts.onChange(() => snapshot()));
        const timer = setInterval(snapshot, OVERVIEW_REFRESH_MS);
        s.onClose(() => clearInterval(timer));
        snapshot();
        return true;
      }
      case "job": {
        const s = new SseStream(req, res);
        const cancel = callStream(
          handlers,
          "WatchJob",
          { name: q.get("name") ?? "", instanceId: q.get("instance") ?? "", taskPageSize: 1000, taskPageToken: "" },
          authorization,
          (st) => s.send("job", st),
          (err) => endStream(s, err),
        );
        s.onClose(cancel);
        return true;
      }
      case "logs": {
        const s = new SseStream(req, res);
        const task = q.get("task");
        const cancel = callStream(
          handlers,
          "StreamLogs",
          {
            name: q.get("name") ?? "",
            instanceId: q.get("instance") ?? "",
            follow: q.get("follow") !== "0",
            afterSeq: Number(q.get("after") ?? 0) || 0,
            taskIndex: task ? Number(task) : 0,
            filterTask: task !== null && task !== "",
          },
          authorization,
          (batch) => s.send("logs", batch),
          (err) => endStream(s, err),
        );
        s.onClose(cancel);
        return true;
      }
      case "metrics": {
        const taskId = q.get("task") ?? "";
        const attempt = Number(q.get("attempt") ?? 0) || 0;
        const jobName = taskId.slice(0, taskId.lastIndexOf("/"));
        const s = new SseStream(req, res);
        let instanceId = "";
        let sent = 0;
        let lastKey = "";
        const snapshot = throttled(async () => {
          if (s.closed) return;
          try {
            const m = await callUnary<{ statusText: string; attempt: number; points: { step: number; timeMs: number | string; metrics: Record<string, number> }[] }>(
              handlers,
              "GetTaskMetrics",
              { taskId, attempt },
              authorization,
            );
            // Points are appended in order (the oldest dropped past the bound): send those after the last one sent.
            const key = (p: { step: number; timeMs: number | string }) => `${p.timeMs}:${p.step}`;
            let from = 0;
            if (lastKey) {
              const i = m.points.findIndex((p) => key(p) === lastKey);
              from = i >= 0 ? i + 1 : 0;
            }
            const fresh = m.points.slice(from);
            if (fresh.length > 0 || sent === 0) {
              s.send("metrics", { statusText: m.statusText, attempt: m.attempt, points: fresh, reset: sent === 0 || (lastKey !== "" && from === 0) });
              sent += fresh.length || 1;
              if (fresh.length) lastKey = key(fresh[fresh.length - 1]!);
            }
          } catch (e) {
            fail(e, s);
          }
        });
        void callUnary<{ instanceId: string }>(handlers, "GetJob", { name: jobName, instanceId: "", taskPageSize: 1, taskPageToken: "" }, authorization).then(
          (st) => {
            instanceId = st.instanceId;
            s.onClose(opts.onChange((k, id) => k === "job" && id === instanceId && snapshot()));
            snapshot();
          },
          (e: unknown) => fail(e, s),
        );
        return true;
      }
      case "pipelines": {
        const s = new SseStream(req, res);
        const send = (): void => s.send("pipelines", { runs: opts.pipelines.list() });
        s.onClose(opts.pipelines.subscribe(send));
        send();
        return true;
      }
      default:
        reply(res, 404, { code: "NOT_FOUND", message: `no stream ${kind}; one of overview, job, logs, metrics, pipelines` });
        return true;
    }
  };
}
