// The one server-sent-events writer of the HTTP faces: headers, a heartbeat comment, JSON events,
// cleanups when either side closes.
import type http from "node:http";

/** A comment line this often keeps proxies and the browser from timing the stream out. */
const HEARTBEAT_MS = 15_000;
/** An open server-sent-events response. */
export class SseStream {
  private readonly res: http.ServerResponse;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly cleanups: (() => void)[] = [];
  closed = false;

  constructor(req: http.IncomingMessage, res: http.ServerResponse) {
    this.res = res;
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache, no-transform", connection: "keep-alive", "x-accel-buffering": "no" });
    res.write(": iris\n\n");
    this.heartbeat = setInterval(() => res.write(": keep-alive\n\n"), HEARTBEAT_MS);
    this.heartbeat.unref();
    req.on("close", () => this.close());
    res.on("close", () => this.close());
  }

  /** Sends one event with JSON data. */
  send(event: string, data: unknown): void {
    if (this.closed) return;
    this.res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Runs `fn` when the stream closes (either side). */
  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.cleanups.push(fn);
  }

  /** Ends the stream. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const f of this.cleanups.splice(0)) f();
    this.res.end();
  }
}
