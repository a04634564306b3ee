// The controller's HTTP face: `POST /api/<Method>` runs the unary ControllerService handler of that
// name on the JSON body, `GET /metrics` is Prometheus text, and extra routes (the endpoint proxy,
// the dashboard) are tried first, in order. The token is checked before any body is read, bodies
// are capped (LIMITS.httpBodyBytes), and a body's JSON must have the request's exact types.
import * as grpc from "@grpc/grpc-js";
import http from "node:http";
import https from "node:https";
import type { ControllerServiceHandlers } from "../internal/generated/iris/v1/ControllerService.ts";
import { loadIrisProto } from "../internal/rpc.ts";
import { LIMITS } from "../jobSpec.ts";
import { mayCall } from "./auth.ts";
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
  /** Serve HTTPS with this PEM certificate chain and key. */
  tls?: { cert: string | Buffer; key: string | Buffer };
}

// ---- strict JSON → protobuf types ---------------------------------------------------------------

interface FieldDescriptor {
  name: string;
  label: string;
  type: string;
  typeName: string;
}
interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType: (MessageDescriptor & { options: { mapEntry?: boolean } | null })[];
}

const INT32_TYPES = new Set(["TYPE_INT32", "TYPE_SINT32", "TYPE_SFIXED32"]);
const UINT32_TYPES = new Set(["TYPE_UINT32", "TYPE_FIXED32"]);
const INT64_TYPES = new Set(["TYPE_INT64", "TYPE_SINT64", "TYPE_SFIXED64", "TYPE_UINT64", "TYPE_FIXED64"]);

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return `"${v.length > 40 ? `${v.slice(0, 40)}…` : v}"`;
  return typeof v === "object" ? "an object" : `${typeof v} ${String(v)}`;
}

function messageType(name: string, parent: MessageDescriptor | undefined): MessageDescriptor {
  const nested = parent?.nestedType.find((n) => n.name === name);
  if (nested) return nested;
  const t = (loadIrisProto() as unknown as Record<string, { type?: MessageDescriptor } | undefined>)[name]?.type;
  if (!t) throw new Error(`unknown message type ${name}`);
  return t;
}

function checkScalar(t: string, v: unknown, path: string): string | undefined {
  const want = (what: string): string => `${path}: expected ${what}, got ${describe(v)}`;
  if (t === "TYPE_STRING") return typeof v === "string" ? undefined : want("a string");
  if (t === "TYPE_BOOL") return typeof v === "boolean" ? undefined : want("true or false");
  if (t === "TYPE_DOUBLE" || t === "TYPE_FLOAT") return typeof v === "number" && Number.isFinite(v) ? undefined : want("a finite number");
  if (INT32_TYPES.has(t)) return typeof v === "number" && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31 ? undefined : want("a 32-bit integer");
  if (UINT32_TYPES.has(t)) return typeof v === "number" && Number.isInteger(v) && v >= 0 && v < 2 ** 32 ? undefined : want("a non-negative 32-bit integer");
  if (INT64_TYPES.has(t)) {
    if (typeof v === "number" && Number.isSafeInteger(v)) return undefined;
    if (typeof v === "string" && /^-?\d{1,19}$/.test(v) && Number.isSafeInteger(Number(v))) return undefined;
    return want("an integer");
  }
  if (t === "TYPE_BYTES") return typeof v === "string" ? undefined : want("base64 text");
  return want(`a value of ${t}`);
}

/**
 * Checks that a JSON value has exactly the shape of protobuf message `type`: no unknown fields,
 * every value of its field's type (no coercion: `"abc"` or `true` is not an int32). Returns
 * the first problem, naming its path, or undefined.
 */
export function checkJsonMessage(v: unknown, type: MessageDescriptor, path: string): string | undefined {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return `${path}: expected an object, got ${describe(v)}`;
  for (const [key, value] of Object.entries(v)) {
    const f = type.field.find((x) => x.name === key);
    if (!f) return `${path}.${key}: unknown field of ${type.name}`;
    if (value === null) continue;
    const at = `${path}.${key}`;
    const sub = f.type === "TYPE_MESSAGE" ? messageType(f.typeName, type) : undefined;
    if (f.label === "LABEL_REPEATED" && sub && (sub as { options?: { mapEntry?: boolean } | null }).options?.mapEntry) {
      if (typeof value !== "object" || Array.isArray(value)) return `${at}: expected an object (a map), got ${describe(value)}`;
      const vf = sub.field.find((x) => x.name === "value")!;
      for (const [k, x] of Object.entries(value as Record<string, unknown>)) {
        const err = vf.type === "TYPE_MESSAGE" ? checkJsonMessage(x, messageType(vf.typeName, sub), `${at}.${k}`) : checkScalar(vf.type, x, `${at}.${k}`);
        if (err) return err;
      }
      continue;
    }
    const items = f.label === "LABEL_REPEATED" ? value : [value];
    if (!Array.isArray(items)) return `${at}: expected an array, got ${describe(value)}`;
    for (const [i, x] of items.entries()) {
      const p = f.label === "LABEL_REPEATED" ? `${at}[${i}]` : at;
      const err = sub ? checkJsonMessage(x, sub, p) : checkScalar(f.type, x, p);
      if (err) return err;
    }
  }
  return undefined;
}

/** Writes a JSON (or text) response. */
export function reply(res: http.ServerResponse, code: number, body: unknown, type = "application/json"): void {
  res.writeHead(code, { "content-type": type });
  res.end(type === "application/json" ? JSON.stringify(body) : String(body));
}

/**
 * Answers an error without reading the request's body, and closes the connection once the answer
 * is out (so that an unread body is dropped, not parsed as the next request).
 */
function refuse(res: http.ServerResponse, status: number, code: string, message: string, type = "application/json"): void {
  res.shouldKeepAlive = false;
  res.setHeader("connection", "close");
  if (type === "application/json") reply(res, status, { code, message });
  else reply(res, status, code, type);
  res.on("finish", () => res.req.socket.destroySoon?.());
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
    // Who is calling comes first: nothing of an unauthenticated request's body is read.
    // (The Bearer header or the dashboard's session cookie: httpAuth.ts.)
    const principal = principalOfRequest(auth, req);
    const authorization = authorizationOfRequest(auth, req);
    if (req.method === "GET" && url.pathname === "/metrics") {
      if (!principal) return refuse(res, 401, "UNAUTHENTICATED", "missing or invalid bearer token", "text/plain");
      if (!mayCall(principal, "GET /metrics")) return refuse(res, 403, "PERMISSION_DENIED", `a ${principal.role} token may not read /metrics`, "text/plain");
      return reply(res, 200, opts.metricsText(), "text/plain; version=0.0.4");
    }
    const m = /^\/api\/([A-Za-z]+)$/.exec(url.pathname);
    if (req.method !== "POST" || !m || !unaryNames.includes(m[1]!)) {
      return refuse(res, 404, "NOT_FOUND", `no route ${req.method} ${url.pathname}; POST /api/<${unaryNames.join("|")}> or GET /metrics`);
    }
    if (!principal) return refuse(res, 401, "UNAUTHENTICATED", "missing or invalid bearer token");
    const tooLarge = (): void =>
      refuse(res, 413, "RESOURCE_EXHAUSTED", `body: larger than the limit of ${LIMITS.httpBodyBytes} bytes`);
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > LIMITS.httpBodyBytes) return tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (d: Buffer) => {
      if (over) return;
      size += d.length;
      if (size > LIMITS.httpBodyBytes) {
        over = true;
        chunks.length = 0;
        tooLarge();
        return;
      }
      chunks.push(d);
    });
    req.on("error", () => undefined);
    req.on("end", () => {
      if (over) return;
      const body = Buffer.concat(chunks).toString("utf8");
      let request: unknown;
      try {
        // Types checked strictly first (a wrong type is refused, never coerced), then through
        // protobuf and back: the handler sees exactly what a gRPC call would decode.
        const def = service[m[1]! as keyof typeof service];
        const json: unknown = body.trim() === "" ? {} : JSON.parse(body);
        const typeErr = checkJsonMessage(json, (def as unknown as { requestType: { type: MessageDescriptor } }).requestType.type, "body");
        if (typeErr) return reply(res, 400, { code: "INVALID_ARGUMENT", message: typeErr });
        request = def.requestDeserialize(def.requestSerialize(json));
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
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const url = new URL(req.url ?? "/", "http://x");
    void (async () => {
      for (const route of routes) if (await route(req, res, url)) return;
      handleApi(req, res, url);
    })().catch((e: unknown) => {
      if (!res.headersSent) reply(res, 500, { code: "INTERNAL", message: e instanceof Error ? e.message : String(e) });
      else res.destroy();
    });
  };
  const server = opts.tls ? https.createServer({ cert: opts.tls.cert, key: opts.tls.key }, onRequest) : http.createServer(onRequest);
  server.headersTimeout = 30_000;
  server.requestTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return server;
}
