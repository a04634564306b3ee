// The worker's cache of code bundles: fetch a bundle by hash from the controller (checked against
// its id), unpack it into `<cache>/<hex>/`, install its dependencies (`pnpm install
// --frozen-lockfile --offline`, online only when the store lacks a package), and hand back the
// directory attempts run from. Each bundle is built once per cache; concurrent attempts share the
// build.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import * as tar from "tar";
import type { WorkerControlServiceClient } from "../internal/rpc.ts";
import { toIrisError } from "../internal/rpc.ts";

/** The marker of a complete build inside a bundle's directory. */
const BUILT_MARKER = ".iris-bundle-built";
/** Lines of the build's output kept for the error of a failed build. */
const TAIL_LINES = 20;

/** A bundle that could not be fetched, unpacked or installed; the message ends with the log's tail. */
export class BundleBuildError extends Error {
  override readonly name = "BundleBuildError";
}

/** Options of {@link BundleCache}. */
export interface BundleCacheOptions {
  /** The pnpm to run (default: `pnpm` on PATH). */
  pnpm?: string;
  /** Extra flags for `pnpm install` (e.g. `--ignore-scripts`). */
  installFlags?: readonly string[];
}

/** A worker's bundle cache (one directory; never pruned by the worker). */
export class BundleCache {
  readonly dir: string;
  readonly #client: WorkerControlServiceClient;
  readonly #opts: BundleCacheOptions;
  readonly #building = new Map<string, Promise<string>>();

  constructor(dir: string, client: WorkerControlServiceClient, opts: BundleCacheOptions = {}) {
    this.dir = dir;
    this.#client = client;
    this.#opts = opts;
  }

  /**
   * The directory of bundle `id`, fetched and built first when the cache lacks it. `onLine`
   * receives the build's log lines (an attempt that waits for another's build sees one line).
   * Rejects with {@link BundleBuildError}.
   */
  ensure(id: string, onLine: (line: string) => void): Promise<string> {
    const dir = path.join(this.dir, id.replace(/^sha256:/, ""));
    if (fs.existsSync(path.join(dir, BUILT_MARKER))) {
      onLine(`bundle ${id} is cached at ${dir}`);
      return Promise.resolve(dir);
    }
    const running = this.#building.get(id);
    if (running !== undefined) {
      onLine(`waiting for the build of bundle ${id} started by another attempt`);
      return running;
    }
    const build = this.#build(id, dir, onLine).finally(() => this.#building.delete(id));
    this.#building.set(id, build);
    return build;
  }

  async #build(id: string, dir: string, onLine: (line: string) => void): Promise<string> {
    const tail: string[] = [];
    const log = (line: string): void => {
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      onLine(line);
    };
    const fail = (what: string, e?: unknown): BundleBuildError =>
      new BundleBuildError(`${what}${e === undefined ? "" : `: ${e instanceof Error ? e.message : String(e)}`}\n${tail.join("\n")}`);
    fs.mkdirSync(this.dir, { recursive: true });
    const nonce = randomBytes(4).toString("hex");
    const archive = `${dir}.${nonce}.tgz`;
    const work = `${dir}.${nonce}.build`;
    try {
      const t0 = Date.now();
      let bytes: number;
      try {
        bytes = await this.#fetch(id, archive);
      } catch (e) {
        throw fail(`cannot fetch bundle ${id}`, e);
      }
      log(`fetched bundle ${id} (${bytes} bytes) in ${Date.now() - t0} ms`);
      fs.mkdirSync(work, { recursive: true });
      try {
        await tar.x({ file: archive, cwd: work, strict: true });
      } catch (e) {
        throw fail(`cannot unpack bundle ${id}`, e);
      }
      if (fs.existsSync(path.join(work, "package.json")) && fs.existsSync(path.join(work, "pnpm-lock.yaml"))) {
        const t1 = Date.now();
        const flags = ["install", "--frozen-lockfile", ...(this.#opts.installFlags ?? [])];
        let r = await this.#run([...flags, "--offline"], work, log);
        if (r.code !== 0 && r.missingOffline) {
          log("some packages are not in the local store: installing online");
          r = await this.#run(flags, work, log);
        }
        if (r.code !== 0) throw fail(`pnpm install failed for bundle ${id} (${r.how})`);
        log(`installed the bundle's dependencies in ${Date.now() - t1} ms`);
      } else {
        log("no package.json with pnpm-lock.yaml at the bundle's root: nothing to install");
      }
      fs.writeFileSync(path.join(work, BUILT_MARKER), new Date().toISOString());
      try {
        fs.renameSync(work, dir);
      } catch {
        // Another worker on this cache finished the same bundle first: use its copy.
        if (!fs.existsSync(path.join(dir, BUILT_MARKER))) {
          fs.rmSync(dir, { recursive: true, force: true });
          fs.renameSync(work, dir);
        }
      }
      return dir;
    } catch (e) {
      throw e instanceof BundleBuildError ? e : fail(`cannot build bundle ${id}`, e);
    } finally {
      fs.rmSync(archive, { force: true });
      fs.rmSync(work, { recursive: true, force: true });
    }
  }

  /** Streams the bundle into `file`, checking its hash; resolves with its size. */
  #fetch(id: string, file: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const out = fs.createWriteStream(file);
      const hash = createHash("sha256");
      let bytes = 0;
      const call = this.#client.fetchBundle({ bundleId: id });
      call.on("data", (chunk: { data: Buffer }) => {
        hash.update(chunk.data);
        bytes += chunk.data.length;
        if (!out.write(chunk.data)) {
          call.pause();
          out.once("drain", () => call.resume());
        }
      });
      call.on("error", (e) => {
        out.destroy();
        reject(toIrisError(e));
      });
      call.on("end", () => {
        out.end(() => {
          const got = `sha256:${hash.digest("hex")}`;
          if (got !== id) reject(new Error(`the controller sent ${bytes} bytes hashing to ${got}`));
          else resolve(bytes);
        });
      });
    });
  }

  #run(args: string[], cwd: string, log: (line: string) => void): Promise<{ code: number; how: string; missingOffline: boolean }> {
    const pnpm = this.#opts.pnpm ?? "pnpm";
    log(`$ ${pnpm} ${args.join(" ")}`);
    return new Promise((resolve) => {
      let missingOffline = false;
      // CI=true: pnpm neither prompts nor draws progress bars.
      const child = spawn(pnpm, args, { cwd, env: { ...process.env, CI: "true" }, stdio: ["ignore", "pipe", "pipe"] });
      let rest = "";
      const onData = (b: Buffer): void => {
        const text = rest + b.toString("utf8");
        const lines = text.split("\n");
        rest = lines.pop() ?? "";
        for (const l of lines) {
          if (l.includes("ERR_PNPM_NO_OFFLINE")) missingOffline = true;
          log(l.replace(/\r$/, ""));
        }
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
      child.on("error", (e) => resolve({ code: -1, how: `cannot run ${pnpm}: ${e.message}`, missingOffline: false }));
      child.on("close", (code, signal) => {
        if (rest !== "") log(rest);
        resolve({ code: code ?? -1, how: signal ? `killed by ${signal}` : `exit code ${code}`, missingOffline });
      });
    });
  }
}
