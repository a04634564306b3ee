// The one bounded body reader of the HTTP faces: a body over its limit is refused (413) by the
// caller, never buffered past the limit.

/** A body over its limit (the declared Content-Length or the bytes read). */
export class BodyTooLargeError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`body: larger than the limit of ${limit} bytes`);
    this.limit = limit;
  }
}

/**
 * Reads a whole request body as UTF-8 text; rejects with {@link BodyTooLargeError} as soon as the
 * declared length or the bytes read pass `limit` (the rest is not read).
 */
export function readBody(req: import("node:http").IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > limit) return reject(new BodyTooLargeError(limit));
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (d: Buffer) => {
      if (over) return;
      size += d.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(d);
    });
    req.on("end", () => {
      if (!over) resolve(Buffer.concat(chunks).toString("utf8"));
    });
    req.on("error", (e) => {
      if (!over) reject(e);
    });
  });
}
