// The controller's store of code bundles: content-addressed files (`<dir>/<hex>.tgz`) written from
// an upload stream (hashed as it arrives, checked against the id, then renamed into place) and
// read back in chunks for the workers that fetch them. A file's mtime is when the bundle was last
// used (stored, looked up by a client, named by a submitted job, fetched by a worker); pruning
// keeps the most recently used ones and every one a live job needs.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { IrisError } from "../errors.ts";
import { beyondRetention } from "../internal/retention.ts";
import { BUNDLE_ID } from "../jobSpec.ts";

/** Bytes of one FetchBundle chunk. */
export const BUNDLE_CHUNK_BYTES = 1024 * 1024;
/** Default largest bundle a controller stores (`ControllerOptions.maxBundleBytes`). */
export const DEFAULT_MAX_BUNDLE_BYTES = 1024 * 1024 * 1024;

/** Default number of bundles a controller keeps beyond those live jobs use (`ControllerOptions.bundleKeep`). */
export const DEFAULT_BUNDLE_KEEP = 32;
/** Default time a bundle stays after its last use whatever else happens (`ControllerOptions.bundleGraceMs`). */
export const DEFAULT_BUNDLE_GRACE_MS = 10 * 60_000;

const BUNDLE_FILE = /^([0-9a-f]{64})\.tgz$/;
const PART_FILE = /^[0-9a-f]{64}\.tgz\.[0-9a-f]+\.part$/;

/** What {@link BundleStore.prune} keeps. */
export interface PruneOptions {
  /** Bundles a job that has not ended names: never removed. */
  inUse: ReadonlySet<string>;
  /** Keep the `keep` most recently used bundles (0: keep every bundle, prune nothing). */
  keep: number;
  /** And any used within the last `graceMs` (a client between its upload and its submit). */
  graceMs: number;
  /** The time now, in ms since the epoch (the controller's clock). */
  now: number;
}

/** The bundles a controller holds, one file each under its directory. */
export class BundleStore {
  readonly dir: string;
  readonly maxBytes: number;
  /** Temporary files of the uploads in progress (never pruned). */
  readonly #writing = new Set<string>();

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
    const w = new BundleWriter(id, file, sizeBytes, () => this.#writing.delete(w.tmpFile));
    this.#writing.add(w.tmpFile);
    return w;
  }

  /** Marks a stored bundle used at `now` (its file's mtime); a missing one is ignored. */
  touch(id: string, now: number): void {
    try {
      fs.utimesSync(this.fileOf(id), now / 1000, now / 1000);
    } catch (e) {
      if (e instanceof IrisError) throw e;
    }
  }

  /**
   * Removes the bundles nothing needs: not in use by a live job, not among the `keep` most
   * recently used, and not used within `graceMs`; and partial uploads left by an earlier process
   * (older than `graceMs`). Returns the ids removed, most recently used first.
   */
  prune(o: PruneOptions): string[] {
    if (o.keep <= 0) return [];
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return [];
    }
    const bundles: { id: string; file: string; usedMs: number }[] = [];
    for (const name of names) {
      const file = path.join(this.dir, name);
      const m = BUNDLE_FILE.exec(name);
      if (!m && !PART_FILE.test(name)) continue;
      let usedMs: number;
      try {
        usedMs = fs.statSync(file).mtimeMs;
      } catch {
        continue; // removed meanwhile
      }
      if (m) bundles.push({ id: `sha256:${m[1]}`, file, usedMs });
      else if (!this.#writing.has(file) && o.now - usedMs >= o.graceMs) fs.rmSync(file, { force: true });
    }
    const stale = beyondRetention(bundles, { ...o, spare: (b) => o.inUse.has(b.id) });
    for (const b of stale) fs.rmSync(b.file, { force: true });
    return stale.map((b) => b.id);
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
  readonly #done: () => void;
  #written = 0;
  #closed = false;

  constructor(id: string, file: string, size: number, done: () => void = () => {}) {
    this.#id = id;
    this.#file = file;
    this.#size = size;
    this.#done = done;
    this.#tmp = `${file}.${randomBytes(4).toString("hex")}.part`;
    this.#fd = fs.openSync(this.#tmp, "w");
  }

  /** The temporary file the upload is written to. */
  get tmpFile(): string {
    return this.#tmp;
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
      throw new IrisError("INVALID_ARGUMENT", `bundle ${this.#id}: got ${this.#written} of ${this.#size} bytes hashing to sha256:${hex}; the upload was not stored`);
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
    this.#done();
  }
}
