// Answers of the HTTP faces: JSON (or text) replies, refusals that never read the body, and the
// HTTP status of a gRPC status code.
import * as grpc from "@grpc/grpc-js";
import type http from "node:http";

/** Writes a JSON (or text) response. */
export function reply(res: http.ServerResponse, code: number, body: unknown, type = "application/json", headers: http.OutgoingHttpHeaders = {}): void {
  res.writeHead(code, { ...headers, "content-type": type });
  res.end(type === "application/json" ? JSON.stringify(body) : String(body));
}

/**
 * Answers an error without reading the request's body, and closes the connection once the answer
 * is out (so that an unread body is dropped, not parsed as the next request).
 */
export function refuse(res: http.ServerResponse, status: number, code: string, message: string, type = "application/json"): void {
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
