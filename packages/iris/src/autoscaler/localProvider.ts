// The `local` provider: workers in this process on this machine, as `iris cluster local` runs
// them (real gRPC on loopback, real child processes for the attempts). What a local group is for:
// development, tests, and a single big machine whose worker pool should still grow and shrink.
// Its workers live and die with the controller process, so a restarted controller has nothing
// to adopt (`list()` starts empty) and `--keep-workers` cannot keep them.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Worker } from "../worker/worker.ts";
import type { ProvidedWorker, ProviderStartRequest, WorkerProvider } from "./provider.ts";
import { workerAttributes } from "./workerCommand.ts";

interface Entry {
  provided: ProvidedWorker;
  worker: Promise<Worker | undefined>;
}

/** Options of {@link LocalProvider}. */
export interface LocalProviderOptions {
  /** Extra worker options (tests: shorter kill grace, log limits). */
  workerOptions?: Partial<Parameters<typeof Worker.start>[0]>;
}

/** See the file comment. */
export class LocalProvider implements WorkerProvider {
  readonly kind = "local";
  private readonly entries = new Map<string, Entry>();
  private readonly opts: LocalProviderOptions;

  constructor(opts: LocalProviderOptions = {}) {
    this.opts = opts;
  }

  start(req: ProviderStartRequest): Promise<ProvidedWorker> {
    // The credential is read from its file, as `iris worker --credential-file` does.
    const token = readFileSync(req.credentialFile, "utf8").trim();
    const provided: ProvidedWorker = {
      providerId: req.workerId,
      group: req.group.name,
      workerId: req.workerId,
      state: "running",
      detail: "local worker starting",
      startedAtMs: Date.now(),
    };
    const worker = Worker.start({
      ...this.opts.workerOptions,
      controller: req.controllerAddress,
      workerId: req.workerId,
      ...(token !== "" ? { token } : {}),
      cpuMillis: req.group.worker.cpuMillis,
      memoryBytes: req.group.worker.memoryBytes,
      attributes: workerAttributes(req),
      stateRoot: path.join(req.stateDir, "workers"),
    }).then(
      (w) => {
        provided.detail = undefined;
        // A worker that ends on its own (drained, refused) is gone.
        void w.done.then(
          () => (provided.state = "ended"),
          () => (provided.state = "ended"),
        );
        return w;
      },
      (e: unknown) => {
        provided.state = "ended";
        provided.detail = `local worker failed to start: ${(e as Error).message}`;
        return undefined;
      },
    );
    this.entries.set(req.workerId, { provided, worker });
    return Promise.resolve({ ...provided });
  }

  list(): Promise<ProvidedWorker[]> {
    const out: ProvidedWorker[] = [];
    for (const [id, e] of this.entries) {
      out.push({ ...e.provided });
      // An ended worker is listed once more, then forgotten.
      if (e.provided.state === "ended") this.entries.delete(id);
    }
    return Promise.resolve(out);
  }

  async stop(providerId: string): Promise<void> {
    const e = this.entries.get(providerId);
    if (!e) return;
    this.entries.delete(providerId);
    const w = await e.worker;
    await w?.stop();
  }

  /** Local workers cannot outlive this process: closing stops them. */
  async close(): Promise<void> {
    await Promise.all([...this.entries.keys()].map((id) => this.stop(id)));
  }
}
