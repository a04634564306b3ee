// The threads backend: a piscina pool, one worker thread per core. Workers import the pipeline's
// module (closures cannot be sent), rebuild the plan and check its fingerprint.
import { Piscina } from "piscina";
import type { PipelineOrigin } from "../dataset.ts";
import { cores } from "../dataset.ts";
import { ZephyrError } from "../errors.ts";
import { originFingerprint } from "../plan/fingerprint.ts";
import type { Plan } from "../plan/planner.ts";
import { withRetries } from "./backends.ts";
import type { Backend } from "./backends.ts";
import { reviveError } from "./remoteTask.ts";
import type { RemoteReply, RemoteTask } from "./remoteTask.ts";

const WORKER = new URL("./threadWorker.mjs", import.meta.url).href;

let shared: { pool: Piscina; size: number } | undefined;
/** Runs using the shared pool now; the pool is closed once none has for `idleMs`. */
let active = 0;
let idleTimer: NodeJS.Timeout | undefined;
let idleMs = 60_000;

// One pool per process, reused across runs: a worker's first task pays for loading TypeScript
// (~1 s of CPU), so the pool stays a minute after the last run. piscina never retires workers
// down to minThreads (= maxThreads here), so zephyr closes the idle pool itself; idle workers are
// unref'd by piscina meanwhile, so they never keep a finished program alive.
function poolOf(size: number): Piscina {
  clearTimeout(idleTimer);
  idleTimer = undefined;
  if (shared && shared.size === size) return shared.pool;
  if (shared) void shared.pool.destroy();
  // minThreads = maxThreads: every worker starts loading at once, while the coordinator still
  // plans and lists files.
  const pool = new Piscina({ filename: WORKER, minThreads: size, maxThreads: size, concurrentTasksPerWorker: 1 });
  shared = { pool, size };
  return pool;
}

function release(): void {
  active--;
  if (active > 0 || !shared) return;
  clearTimeout(idleTimer);
  idleTimer = setTimeout(() => {
    idleTimer = undefined;
    if (active === 0) void closeThreadPool();
  }, idleMs).unref();
}

/** Closes the shared pool now (tests and short scripts that want a prompt exit). */
export async function closeThreadPool(): Promise<void> {
  clearTimeout(idleTimer);
  idleTimer = undefined;
  const s = shared;
  shared = undefined;
  await s?.pool.destroy();
}

/** Sets how long the shared pool outlives its last run (tests shorten it). */
export function setThreadPoolIdleMs(ms: number): void {
  idleMs = ms;
}

/** Worker threads the shared pool holds now (0 when there is no pool). */
export function threadPoolThreads(): number {
  return shared?.pool.threads.length ?? 0;
}

/** Creates the threads backend for `plan`, defined by `origin`. */
export function threadsBackend(origin: PipelineOrigin, plan: Plan, threads?: number): Backend {
  const size = threads ?? cores();
  if (!Number.isInteger(size) || size <= 0) throw new ZephyrError("INVALID_ARGUMENT", `threads: expected a positive integer, got ${threads}`);
  const pool = poolOf(size);
  active++;
  const fingerprint = originFingerprint(plan.fingerprint, origin);
  let closed = false;
  return {
    runStage(stage, specs, hooks) {
      return Promise.all(
        specs.map((spec) =>
          withRetries(spec, stage, hooks, async (s) => {
            const task: RemoteTask = { origin, fingerprint, spec: s };
            const reply = (await pool.run(task)) as RemoteReply;
            if (!reply.ok) throw reviveError(reply.error);
            return reply.result;
          }),
        ),
      );
    },
    close: async () => {
      if (closed) return;
      closed = true;
      release();
    },
  };
}
