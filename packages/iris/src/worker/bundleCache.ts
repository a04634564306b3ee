// The worker's cache of code bundles: fetch a bundle by hash from the controller (checked against
// its id), unpack it into `<cache>/<hex>/`, install its dependencies (`pnpm install
// --frozen-lockfile --offline`, online only when the store lacks a package), and hand back the
// directory attempts run from. Each bundle is built once per cache; concurrent attempts share the
// build. After each build the cache keeps the `keep` most recently used bundles and removes older
// ones that no live process holds (several workers may share one cache directory).
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import * as tar from "tar";
import { z } from "../toolkit/zod.ts";
import type { WorkerControlServiceClient } from "../internal/rpc.ts";
import { beyondRetention } from "../internal/retention.ts";
import { toIrisError } from "../internal/rpc.ts";
import { processAlive, readProcStat } from "../process/processGroup.ts";

/** The marker of a complete build inside a bundle's directory. */
const BUILT_MARKER = ".iris-bundle-built";
/** Lines of the build's output kept for the error of a failed build. */
const TAIL_LINES = 20;
/** Inside a bundle's directory: one file per attempt running from it, naming that process. */
const HOLDERS = ".iris-holders";
/** Built bundles a cache keeps by default (the most recently used). */
export const DEFAULT_BUNDLE_CACHE_KEEP = 8;
/**
 * A bundle used this recently is never removed: another worker on the same cache may have just
 * found it and not yet recorded its hold.
 */
const RECENT_USE_MS = 60_000;

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
  /**
   * Built bundles to keep: after each build, older ones beyond this many (by last use) are removed
   * unless a live process holds them. 0 keeps every bundle. Default {@link DEFAULT_BUNDLE_CACHE_KEEP}.
   */
  keep?: number;
}

/** An attempt's hold on a bundle: the cache does not remove it while the holding process lives. */
export interface BundleHold {
  /** The process that runs from the bundle now (the attempt's runner once it is spawned). */
  setPid(pid: number): void;
  /** The attempt is over. */
  release(): void;
}

// A hold's file: the holding process, with its start time when /proc has it (a reused pid is
// someone else).
function holdText(pid: number): string {
  const startTicks = readProcStat(pid)?.startTicks;
  return JSON.stringify(startTicks === undefined ? { pid } : { pid, startTicks });
}

const holdSchema = z.object({ pid: z.number().int(), startTicks: z.string().optional() });

// A bundle's directory name: its id's hex digest.
const hexOf = (id: string): string => id.replace(/^sha256:/, "");

/** A worker's bundle cache (one directory, pruned to the `keep` most recently used bundles). */
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
    const dir = path.join(this.dir, hexOf(id));
    const marker = path.join(dir, BUILT_MARKER);
    if (fs.existsSync(marker)) {
      // The marker's time is the bundle's last use (what pruning orders by).
      try {
        const now = new Date();
        fs.utimesSync(marker, now, now);
      } catch {
        // Removed meanwhile by another worker's pruning: built again below on the next call.
      }
      onLine(`bundle ${id} is cached at ${dir}`);
      return Promise.resolve(dir);
    }
    const running = this.#building.get(id);
    if (running !== undefined) {
      onLine(`waiting for the build of bundle ${id} started by another attempt`);
      return running;
    }
    const build = this.#build(id, dir, onLine)
      .then((built) => {
        const removed = this.prune();
        if (removed.length > 0) onLine(`removed ${removed.length} older unused bundle(s) from the cache (it keeps ${this.#keep()})`);
        return built;
      })
      .finally(() => this.#building.delete(id));
    this.#building.set(id, build);
    return build;
  }

  /**
   * Records that process `pid` (default: this one) runs from the bundle at `dir` for `holder` (an
   * attempt's uid), so that no worker on this cache removes it meanwhile.
   */
  hold(dir: string, holder: string, pid: number = process.pid): BundleHold {
    const file = path.join(dir, HOLDERS, holder);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, holdText(pid));
    // A kept attempt that outlives this worker (to be adopted by the next one) is never released
    // here: its hold stays with its live process, and pruning clears it once that process is gone.
    return {
      setPid: (p) => fs.writeFileSync(file, holdText(p)),
      release: () => fs.rmSync(file, { force: true }),
    };
  }

  #keep(): number {
    return this.#opts.keep ?? DEFAULT_BUNDLE_CACHE_KEEP;
  }

  /**
   * Removes built bundles beyond the `keep` most recently used, except those a live process holds,
   * one being built here, and any used in the last minute; returns the removed directories. Stale
   * holds (their process is gone) are cleared on the way.
   */
  prune(now: number = Date.now()): string[] {
    const keep = this.#keep();
    if (keep <= 0 || !fs.existsSync(this.dir)) return [];
    const building = new Set([...this.#building.keys()].map(hexOf));
    const built: { dir: string; usedMs: number; name: string }[] = [];
    for (const name of fs.readdirSync(this.dir)) {
      // What a removal interrupted by a crash left behind.
      if (name.endsWith(".trash")) fs.rmSync(path.join(this.dir, name), { recursive: true, force: true });
      if (!/^[0-9a-f]{64}$/.test(name)) continue;
      const dir = path.join(this.dir, name);
      try {
        built.push({ dir, name, usedMs: fs.statSync(path.join(dir, BUILT_MARKER)).mtimeMs });
      } catch {
        // Not built (yet): not this pass's business.
      }
    }
    const removed: string[] = [];
    for (const b of beyondRetention(built, { keep, graceMs: RECENT_USE_MS, now, spare: (x) => building.has(x.name) || this.#held(x.dir) })) {
      // Renamed first, so that no one finds a half-removed bundle under its name.
      const trash = `${b.dir}.${randomBytes(4).toString("hex")}.trash`;
      try {
        fs.renameSync(b.dir, trash);
      } catch {
        continue;
      }
      fs.rmSync(trash, { recursive: true, force: true });
      removed.push(b.dir);
    }
    return removed;
  }

  // Whether a live process holds the bundle at `dir`; removes the holds of dead ones.
  #held(dir: string): boolean {
    const holders = path.join(dir, HOLDERS);
    let names: string[];
    try {
      names = fs.readdirSync(holders);
    } catch {
      return false;
    }
    let held = false;
    for (const n of names) {
      const file = path.join(holders, n);
      let text: string;
      try {
        text = fs.readFileSync(file, "utf8");
      } catch {
        continue; // released meanwhile
      }
      let hold: z.infer<typeof holdSchema> | undefined;
      try {
        hold = holdSchema.parse(JSON.parse(text));
      } catch {
        hold = undefined; // unreadable: no process to keep it for
      }
      if (hold && processAlive(hold.pid, hold.startTicks)) held = true;
      else fs.rmSync(file, { force: true });
    }
    return held;
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
      // CI=true: pnpm neither prompts nor draws progress bars. A worker started from a
      // `pnpm --silent` script inherits npm_config_loglevel=silent or npm_config_reporter=silent
      // (pnpm 10), which would leave the build log (and a BUILD_FAILED error's tail) empty: pnpm's
      // own defaults apply instead.
      const env: NodeJS.ProcessEnv = { ...process.env, CI: "true" };
      delete env.npm_config_loglevel;
      delete env.npm_config_reporter;
      const child = spawn(pnpm, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
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
