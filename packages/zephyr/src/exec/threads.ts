// The threads backend: a piscina pool, one worker thread per core. Workers import the pipeline's
// module (closures cannot be sent), rebuild the plan and check it against the run's identity.
import v8 from "node:v8";
import type { Worker } from "node:worker_threads";
import { Piscina } from "piscina";
import { ZephyrError } from "../errors.ts";
import type { Backend, RemoteReply, RemoteRun, RemoteTask, StageHooks, TaskResult } from "./contracts.ts";
import { cores } from "./cores.ts";
import { onCloseThreadPools } from "./poolRegistry.ts";
import { reviveError } from "./remoteError.ts";
import { withRetries } from "./retries.ts";

const WORKER = new URL("./threadWorker.mjs", import.meta.url).href;

interface SharedPool {
  readonly pool: Piscina;
  /** Runs using this pool now; it is closed once none has for `idleMs`. */
  active: number;
  idleTimer: NodeJS.Timeout | undefined;
}

// One pool per thread count, reused across runs: a worker's first task pays for loading
// TypeScript (~1 s of CPU), so a pool stays a minute after its last run. piscina never retires
// workers down to minThreads (= maxThreads here), so zephyr closes an idle pool itself; idle
// workers are unref'd by piscina meanwhile, so they never keep a finished program alive. Pools
// are keyed by size so that a run asking for another thread count never tears down a pool that
// a concurrent run is using.
const pools = new Map<number, SharedPool>();
// A worker allocates a short-lived object or string per record per operator; V8's default young
// generation (16 MiB semi-spaces) scavenges so often that GC took ~2 CPU s per worker per
// benchmark run. 64 MiB semi-spaces cost 192 MiB of address space per worker and cut scavenges.
const YOUNG_GENERATION_MB = 192;
// How a worker's heap starts (V8 reads these when it creates the thread's isolate; Node has no
// per-thread option for them). A fresh isolate starts with 1 MiB semi-spaces that grow only when
// much survives, so a cold worker scavenged 2-3x as often as a warm one. And V8 starts marking the
// old generation whenever its headroom is below the young generation's size: with ~9 MiB live
// and a ~80 MiB limit that was ~45 full collections per benchmark run. Starting at the full young
// size and a 128 MiB old limit cut GC pauses from ~1.1 to ~0.7 s per run (both workers).
const WORKER_HEAP_FLAGS = { "min-semi-space-size": YOUNG_GENERATION_MB / 3, "initial-old-space-size": 128 } as const;
let idleMs = 60_000;

/**
 * The parent's Node flags minus those that start a TypeScript loader (tsx, or iris's source
 * loader): a worker registers one itself (see threadWorker.mjs), and an inherited `--import tsx`
 * cost each worker ~150 ms of start-up without making TypeScript importable there (measured on
 * Node 20: the worker's probe import of a .ts file still failed). Other flags (heap sizes,
 * conditions, other loaders) are kept.
 */
export function workerExecArgv(parent: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  const startsLoader = (value: string): boolean => /(^|[/\\])tsx($|[/\\@])/.test(value) || /(^@marin\/iris\/source-loader$|[/\\]sourceLoader[/\\]register\.mjs$)/.test(value);
  for (let i = 0; i < parent.length; i++) {
    const a = parent[i];
    const m = /^(--import|--require|-r|--loader|--experimental-loader)(=(.*))?$/.exec(a);
    if (m === null) {
      out.push(a);
      continue;
    }
    const value = m[2] !== undefined ? m[3] : parent[i + 1];
    if (m[2] === undefined) i++;
    if (value !== undefined && startsLoader(value)) continue;
    out.push(a);
    if (m[2] === undefined && value !== undefined) out.push(value);
  }
  return out;
}

/**
 * Creates a pool with {@link WORKER_HEAP_FLAGS} set while its workers' isolates are made, then
 * puts the flags back to V8's defaults once every worker is online (so threads other code starts
 * later are not affected). A flag the user set themselves (command line or NODE_OPTIONS) is left
 * alone.
 */
export function withWorkerHeapFlags<P extends { readonly threads: readonly Worker[] }>(create: () => P): P {
  const given = `${process.execArgv.join(" ")} ${process.env.NODE_OPTIONS ?? ""}`;
  const flags = Object.entries(WORKER_HEAP_FLAGS).filter(([name]) => !given.includes(name) && !given.includes(name.replaceAll("-", "_")));
  const restore = (): void => {
    for (const [name] of flags) v8.setFlagsFromString(`--${name}=0`);
  };
  for (const [name, mb] of flags) v8.setFlagsFromString(`--${name}=${mb}`);
  let pool: P;
  try {
    pool = create();
  } catch (e) {
    restore();
    throw e;
  }
  let pending = pool.threads.length;
  const settle = (): void => {
    if (--pending === 0) restore();
  };
  if (pending === 0) restore();
  for (const w of pool.threads) {
    let done = false;
    const once = (): void => {
      if (done) return;
      done = true;
      settle();
    };
    w.once("online", once);
    w.once("exit", once);
  }
  return pool;
}

function acquire(size: number): SharedPool {
  let p = pools.get(size);
  if (!p) {
    // minThreads = maxThreads: every worker starts loading at once, while the coordinator still
    // plans and lists files.
    const options = { filename: WORKER, minThreads: size, maxThreads: size, concurrentTasksPerWorker: 1, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } };
    const pool = withWorkerHeapFlags(() => {
      try {
        return new Piscina({ ...options, execArgv: workerExecArgv() });
      } catch (e) {
        // Flags given explicitly must be valid per thread; a process-wide one the parent runs
        // with (--trace-gc, --cpu-prof, …) is refused. Inheriting the parent's flags is not.
        if ((e as { code?: string }).code !== "ERR_WORKER_INVALID_EXEC_ARGV") throw e;
        return new Piscina(options);
      }
    });
    p = { pool, active: 0, idleTimer: undefined };
    pools.set(size, p);
  }
  clearTimeout(p.idleTimer);
  p.idleTimer = undefined;
  p.active++;
  return p;
}

function release(size: number, p: SharedPool): void {
  p.active--;
  if (p.active > 0 || pools.get(size) !== p) return;
  p.idleTimer = setTimeout(() => {
    if (p.active === 0 && pools.get(size) === p) {
      pools.delete(size);
      void p.pool.destroy();
    }
  }, idleMs).unref();
}

/**
 * Starts the pool of `size` threads now, if there is none, so that its workers load while the
 * caller still loads the coordinator and plans (a pool nobody uses closes after the idle time).
 */
export function prestartThreadPool(size: number): void {
  if (!Number.isInteger(size) || size <= 0 || pools.has(size)) return;
  release(size, acquire(size));
}

/** Closes the shared pools now (tests and short scripts that want a prompt exit). */
export async function closeThreadPool(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  for (const p of all) clearTimeout(p.idleTimer);
  await Promise.all(all.map((p) => p.pool.destroy()));
}

onCloseThreadPools(closeThreadPool);

/** Sets how long the shared pool outlives its last run (tests shorten it). */
export function setThreadPoolIdleMs(ms: number): void {
  idleMs = ms;
}

/** Worker threads the shared pools hold now (0 when there is none). */
export function threadPoolThreads(): number {
  let n = 0;
  for (const p of pools.values()) n += p.pool.threads.length;
  return n;
}

/** Creates the threads backend for the `definePipeline` run `run`. */
export function threadsBackend(run: RemoteRun, threads?: number): Backend {
  const size = threads ?? cores();
  if (!Number.isInteger(size) || size <= 0) throw new ZephyrError("INVALID_ARGUMENT", `threads: expected a positive integer, got ${threads}`);
  const shared = acquire(size);
  const pool = shared.pool;
  const { origin, identity } = run;
  let closed = false;
  return {
    async runStage(stage, specs, hooks) {
      // One lane per thread takes shards in order. After a failure no lane starts a shard or a
      // retry, and the stage rejects only once the shards in flight have ended: a failed run
      // leaves nothing running that could still commit output or read the scratch directory
      // the coordinator is about to remove.
      const results = new Array<TaskResult>(specs.length);
      let next = 0;
      let failure: { error: unknown } | undefined;
      const laneHooks: StageHooks = { ...hooks, isRetryable: (e) => failure === undefined && hooks.isRetryable(e) };
      const lane = async (): Promise<void> => {
        while (failure === undefined && next < specs.length) {
          const k = next++;
          try {
            results[k] = await withRetries(specs[k], stage, laneHooks, async (s) => {
              const task: RemoteTask = { origin, identity, spec: s };
              const reply = (await pool.run(task)) as RemoteReply;
              if (!reply.ok) throw reviveError(reply.error);
              return reply.result;
            });
          } catch (error) {
            failure ??= { error };
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(size, specs.length) }, lane));
      if (failure) throw failure.error;
      return results;
    },
    close: async () => {
      if (closed) return;
      closed = true;
      release(size, shared);
    },
  };
}
