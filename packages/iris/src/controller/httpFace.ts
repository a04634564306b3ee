// The controller's HTTP face: `POST /api/<Method>` runs the unary ControllerService handler of that
// name on the JSON body, `GET /metrics` is Prometheus text, and extra routes (the endpoint proxy,
// the dashboard) are tried first, in order.
import * as grpc from "@grpc/grpc-js";
import http from "node:http";
import type { ControllerServiceHandlers } from "../internal/generated/iris/v1/ControllerService.ts";
import { loadIrisProto } from "../internal/rpc.ts";
import type { Authenticator } from "./auth.ts";
import { authorizationOfRequest, principalOfRequest } from "./httpAuth.ts";

/**
 * An extra HTTP route: returns true when it took the request (and answers it, now or later),
 * false to let the next route try.
 */
export type HttpRoute = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => boolean | Promise<boolean>;

/** What {@link serveHttp} needs from the controller. */
export interface HttpFaceOptions {
  host: string;
  port: number;
  handlers: ControllerServiceHandlers;
  auth: Authenticator;
  /** The Prometheus text of `GET /metrics`. */
  metricsText: () => string;
  /** Tried before the API routes. */
  routes?: HttpRoute[];
}

/** Writes a JSON (or text) response. */
export function reply(res: http.ServerResponse, code: number, body: unknown, type = "application/json"): void {
  res.writeHead(code, { "content-type": type });
  res.end(type === "application/json" ? JSON.stringify(body) : String(body));
}

/** The HTTP status of a gRPC status code. */
export function httpStatusOf(code: number): number {
  switch (code) {
    case grpc.status.UNAUTHENTICATED:
      return 401;
    case grpc.status.PERMISSION_DENIED:
      return 403;
    case grpc.status.NOT_FOUND:
      return 404;
    case grpc.status.INVALID_ARGUMENT:
      return 400;
    case grpc.status.ALREADY_EXISTS:
    case grpc.status.FAILED_PRECONDITION:
      return 409;
    case grpc.status.RESOURCE_EXHAUSTED:
      return 429;
    default:
      return 500;
  }
}

/** Starts the HTTP face; resolves with the listening server once bound. */
export async function serveHttp(opts: HttpFaceOptions): Promise<http.Server> {
  const { handlers, auth } = opts;
  const service = loadIrisProto().ControllerService.service;
  const unaryNames = Object.entries(service)
    .filter(([, d]) => !d.requestStream && !d.responseStream)
    .map(([name]) => name);
  const routes = opts.routes ?? [];
  const handleApi = (req: http.IncomingMessage, res: http.ServerResponse, url: URL): void => {
    if (req.method === "GET" && url.pathname === "/metrics") {
      if (!principalOfRequest(auth, req)) return reply(res, 401, "UNAUTHENTICATED", "text/plain");
      return reply(res, 200, opts.metricsText(), "text/plain; version=0.0.4");
    }
    const m = /^\/api\/([A-Za-z]+)$/.exec(url.pathname);
    if (req.method !== "POST" || !m || !unaryNames.includes(m[1]!)) {
      return reply(res, 404, { code: "NOT_FOUND", message: `no route ${req.method} ${url.pathname}; POST /api/<${unaryNames.join("|")}> or GET /metrics` });
    }
    // The Bearer header or the dashboard's session cookie (httpAuth.ts); the handler checks it.
    if (!principalOfRequest(auth, req)) return reply(res, 401, { code: "UNAUTHENTICATED", message: "missing or invalid bearer token or session cookie (or a state change from another origin)" });
    const authorization = authorizationOfRequest(auth, req);
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      let request: unknown;
      try {
        // Through protobuf and back: the handler sees exactly what a gRPC call would decode
        // (defaults filled, unknown fields dropped, types checked).
        const def = service[m[1]! as keyof typeof service];
        request = def.requestDeserialize(def.requestSerialize(body.trim() === "" ? {} : JSON.parse(body)));
      } catch (e) {
        return reply(res, 400, { code: "INVALID_ARGUMENT", message: `body: expected the JSON of the ${m[1]} request (${(e as Error).message})` });
      }
      const metadata = new grpc.Metadata();
      if (authorization) metadata.set("authorization", authorization);
      const handler = handlers[m[1]!] as grpc.handleUnaryCall<unknown, unknown>;
      handler({ request, metadata } as grpc.ServerUnaryCall<unknown, unknown>, (err, value) => {
        if (err) {
          const code = (err as Partial<grpc.StatusObject>).code ?? grpc.status.INTERNAL;
          return reply(res, httpStatusOf(code), { code: grpc.status[code], message: (err as Partial<grpc.StatusObject>).details ?? String(err) });
        }
        reply(res, 200, value);
      });
    });
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    void (async () => {
      for (const route of routes) if (await route(req, res, url)) return;
      handleApi(req, res, url);
    })().catch((e: unknown) => {
      if (!res.headersSent) reply(res, 500, { code: "INTERNAL", message: e instanceof Error ? e.message : String(e) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return server;
}
