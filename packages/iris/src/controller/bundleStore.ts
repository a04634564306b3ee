// The controller's store of code bundles: content-addressed files (`<dir>/<hex>.tgz`) written from
// an upload stream (hashed as it arrives, checked against the id, then renamed into place) and
// read back in chunks for the workers that fetch them.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { IrisError } from "../errors.ts";
import { BUNDLE_ID } from "../jobSpec.ts";

/** Bytes of one FetchBundle chunk. */
export const BUNDLE_CHUNK_BYTES = 1024 * 1024;
/** Default largest bundle a controller stores (`ControllerOptions.maxBundleBytes`). */
export const DEFAULT_MAX_BUNDLE_BYTES = 1024 * 1024 * 1024;

/** The bundles a controller holds, one file each under its directory. */
export class BundleStore {
  readonly dir: string;
  readonly maxBytes: number;

  constructor(dir: string, maxBytes = DEFAULT_MAX_BUNDLE_BYTES) {
    this.dir = dir;
    this.maxBytes = maxBytes;
    fs.mkdirSync(dir, { recursive: true });
  }

  /** The file of a bundle (which may not exist); INVALID_ARGUMENT for a malformed id. */
  fileOf(id: string): string {
    if (!BUNDLE_ID.test(id)) throw new IrisError("INVALID_ARGUMENT", `bundle_id: expected sha256:<64 hex digits>, got ${JSON.stringify(id.slice(0, 80))}`);
    return path.join(this.dir, `${id.slice("sha256:".length)}.tgz`);
  }

  /** The size of a stored bundle, or undefined. */
  size(id: string): number | undefined {
    try {
      return fs.statSync(this.fileOf(id)).size;
    } catch (e) {
      if (e instanceof IrisError) throw e;
      return undefined;
    }
  }

  /**
   * Starts storing a bundle of `sizeBytes` bytes: RESOURCE_EXHAUSTED over the limit. The returned
   * writer takes the chunks in order; `finish` checks size and hash and moves the file into place.
   */
  begin(id: string, sizeBytes: number): BundleWriter {
    const file = this.fileOf(id);
    if (!Number.isInteger(sizeBytes) || sizeBytes < 0) throw new IrisError("INVALID_ARGUMENT", `size_bytes: expected a non-negative integer, got ${sizeBytes}`);
    if (sizeBytes > this.maxBytes) {
      throw new IrisError("RESOURCE_EXHAUSTED", `bundle ${id} is ${sizeBytes} bytes; this controller stores at most ${this.maxBytes}`);
    }
    return new BundleWriter(id, file, sizeBytes);
  }
}

/** One upload in progress: a temporary file hashed as it is written. */
export class BundleWriter {
  readonly #id: string;
  readonly #file: string;
  readonly #tmp: string;
  readonly #size: number;
  readonly #hash = createHash("sha256");
  readonly #fd: number;
  #written = 0;
  #closed = false;

  constructor(id: string, file: string, size: number) {
    this.#id = id;
    this.#file = file;
    this.#size = size;
    this.#tmp = `${file}.${randomBytes(4).toString("hex")}.part`;
    this.#fd = fs.openSync(this.#tmp, "w");
  }

  /** Appends a chunk; INVALID_ARGUMENT once more bytes arrive than were announced. */
  write(data: Buffer): void {
    if (this.#written + data.length > this.#size) {
      this.abort();
      throw new IrisError("INVALID_ARGUMENT", `bundle ${this.#id}: more than the announced ${this.#size} bytes`);
    }
    this.#hash.update(data);
    fs.writeSync(this.#fd, data);
    this.#written += data.length;
  }

  /** Checks size and hash and moves the bundle into place (an existing copy is kept). */
  finish(): void {
    this.#close();
    const hex = this.#hash.digest("hex");
    if (this.#written !== this.#size || `sha256:${hex}` !== this.#id) {
      fs.rmSync(this.#tmp, { force: true });
      throw new IrisError(
        "INVALID_ARGUMENT",
        `bundle ${this.#id}: got ${this.#written} of ${this.#size} bytes hashing to sha256:${hex}; the upload was not stored`,
      );
    }
    fs.renameSync(this.#tmp, this.#file);
  }

  /** Drops a partial upload. */
  abort(): void {
    this.#close();
    fs.rmSync(this.#tmp, { force: true });
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    fs.closeSync(this.#fd);
  }
}
