// The controller's JSON API on the HTTP router: `POST /api/<Method>` runs the unary
// ControllerService handler of that name on the JSON body (the caller's credentials passed on),
// and `GET /metrics` is Prometheus text. The token is checked (by the router) before any body is
// read, bodies are capped (LIMITS.httpBodyBytes), and a body's JSON must have the request's exact
// types (jsonProto.ts).
import * as grpc from "@grpc/grpc-js";
import http from "node:http";
import https from "node:https";
import type { ControllerServiceHandlers } from "../internal/generated/iris/v1/ControllerService.ts";
import { loadIrisProto } from "../internal/rpc.ts";
import { LIMITS } from "../jobSpec.ts";
import { BodyTooLargeError, readBody } from "./body.ts";
import { checkJsonMessage } from "./jsonProto.ts";
import type { MessageDescriptor } from "./jsonProto.ts";
import { httpStatusOf, refuse, reply } from "./respond.ts";
import type { HttpRouter } from "./router.ts";

export { checkJsonMessage } from "./jsonProto.ts";

/** What {@link addApiRoutes} needs from the controller. */
export interface ApiRouteOptions {
  handlers: ControllerServiceHandlers;
  /** The Prometheus text of `GET /metrics`. */
  metricsText: () => string;
}

/** The unary ControllerService methods (those `POST /api/<Method>` serves). */
export function unaryMethodNames(): string[] {
  const service = loadIrisProto().ControllerService.service;
  return Object.entries(service)
    .filter(([, d]) => !d.requestStream && !d.responseStream)
    .map(([name]) => name);
}

/** Adds `POST /api/<Method>` (one route per unary RPC; the role table decides per method) and `GET /metrics`. */
export function addApiRoutes(router: HttpRouter, opts: ApiRouteOptions): void {
  const { handlers } = opts;
  const service = loadIrisProto().ControllerService.service;
  router.add({
    name: "GET /metrics",
    methods: ["GET"],
    path: "/metrics",
    auth: "user",
    permission: "GET /metrics",
    handler: ({ res }) => reply(res, 200, opts.metricsText(), "text/plain; version=0.0.4"),
  });
  for (const method of unaryMethodNames()) {
    router.add({
      name: `POST /api/${method}`,
      methods: ["POST"],
      path: `/api/${method}`,
      auth: "user",
      handler: async ({ req, res, credentials }) => {
        let body: string;
        try {
          body = await readBody(req, LIMITS.httpBodyBytes);
        } catch (e) {
          if (e instanceof BodyTooLargeError) return refuse(res, 413, "RESOURCE_EXHAUSTED", e.message);
          throw e;
        }
        let request: unknown;
        try {
          // Types checked strictly first (a wrong type is refused, never coerced), then through
          // protobuf and back: the handler sees exactly what a gRPC call would decode.
          const def = service[method as keyof typeof service];
          const json: unknown = body.trim() === "" ? {} : JSON.parse(body);
          const typeErr = checkJsonMessage(json, (def as unknown as { requestType: { type: MessageDescriptor } }).requestType.type, "body");
          if (typeErr) return reply(res, 400, { code: "INVALID_ARGUMENT", message: typeErr });
          request = def.requestDeserialize(def.requestSerialize(json));
        } catch (e) {
          return reply(res, 400, { code: "INVALID_ARGUMENT", message: `body: expected the JSON of the ${method} request (${(e as Error).message})` });
        }
        const metadata = new grpc.Metadata();
        if (credentials.authorization) metadata.set("authorization", credentials.authorization);
        const handler = handlers[method] as grpc.handleUnaryCall<unknown, unknown>;
        handler({ request, metadata } as grpc.ServerUnaryCall<unknown, unknown>, (err, value) => {
          if (err) {
            const code = (err as Partial<grpc.StatusObject>).code ?? grpc.status.INTERNAL;
            return reply(res, httpStatusOf(code), { code: grpc.status[code], message: (err as Partial<grpc.StatusObject>).details ?? String(err) });
          }
          reply(res, 200, value);
        });
      },
    });
  }
}

/** Starts an HTTP(S) server answering with `router`; resolves with it once bound. */
export async function listenHttp(
  router: HttpRouter,
  opts: { host: string; port: number; tls?: { cert: string | Buffer; key: string | Buffer } | undefined },
): Promise<http.Server> {
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => router.handle(req, res);
  const server = opts.tls ? https.createServer({ cert: opts.tls.cert, key: opts.tls.key }, onRequest) : http.createServer(onRequest);
  server.headersTimeout = 30_000;
  server.requestTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return server;
}
