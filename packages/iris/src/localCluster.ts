// A controller and N workers in this process: real gRPC on loopback, real child processes. The
// embedded default for marin and what tests use.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { IrisClient, defaultIrisUser } from "./client/irisClient.ts";
import { Controller } from "./controller/controller.ts";
import { Worker } from "./worker/worker.ts";

/** Options of {@link LocalCluster.start}. */
export interface LocalClusterOptions {
  /** Number of workers (default 1). */
  workers?: number;
  /** Controller database; default a file in a temporary directory removed by `stop()`. */
  dbPath?: string;
  /**
   * The admin token every RPC (workers, client, tasks) must carry. Default: the controller mints
   * one (`cluster.token`) and records it in this user's credentials file (see credentials.ts), so
   * the CLI and other clients of this address find it.
   */
  token?: string;
  /** Auth off (every caller is the admin; logs a warning). */
  noAuth?: boolean;
  /** Where a minted token is recorded (default: the per-user credentials file; false: nowhere). */
  credentialsFile?: string | false;
  /** CPU capacity of each worker in millicores (default: the machine's cores split between the workers). */
  workerCpuMillis?: number;
  /** Memory capacity of each worker in bytes (default: the machine's memory split between the workers). */
  workerMemoryBytes?: number;
  /** Controller port (default: any free port). */
  port?: number;
  /** Worker liveness timeout (default 30 s). */
  workerTimeoutMs?: number;
  /** With no worker registered, how long a task waits before it is UNSCHEDULABLE (default 5 min). */
  schedulingTimeoutMs?: number;
  /** Also serve the controller's HTTP face (API, metrics, dashboard) on this port (0 = any free port; default: none). */
  httpPort?: number;
  /** The endpoint proxy's own port (default: any free port, with `httpPort`). */
  proxyPort?: number;
  /** Attributes of each worker, by index. */
  workerAttributes?: (index: number) => Record<string, string>;
}

/**
 * What each of `workers` local workers offers by default: this machine's cores
 * (`os.availableParallelism()`) and memory split evenly between them, so that together they
 * offer what the machine has, not N times it.
 */
export function localWorkerCapacity(workers: number): { cpuMillis: number; memoryBytes: number } {
  const n = Math.max(1, Math.floor(workers));
  return { cpuMillis: Math.floor((os.availableParallelism() * 1000) / n), memoryBytes: Math.floor(os.totalmem() / n) };
}

/**
 * A controller and `workers` workers in this process, on loopback.
 *
 * @example
 * const cluster = await LocalCluster.start({ workers: 2 });
 * const job = await cluster.client.submit({ entrypoint: { command: ["echo", "hi"] } });
 * await job.wait();
 * await cluster.stop();
 */
export class LocalCluster {
  /** "127.0.0.1:PORT" of the controller. */
  readonly address: string;
  /** A client connected to the controller (with the token). */
  readonly client: IrisClient;
  /** The cluster's admin token (given or minted); undefined with auth off. */
  readonly token: string | undefined;
  readonly controller: Controller;
  readonly workers: Worker[];
  private readonly tmpDir: string | undefined;
  private stopped = false;

  private constructor(controller: Controller, workers: Worker[], client: IrisClient, tmpDir: string | undefined, token: string | undefined) {
    this.controller = controller;
    this.workers = workers;
    this.client = client;
    this.address = controller.address;
    this.token = token;
    this.tmpDir = tmpDir;
  }

  /** Starts the controller, then the workers, and resolves once every worker has registered. */
  static async start(opts: LocalClusterOptions = {}): Promise<LocalCluster> {
    const tmpDir = opts.dbPath ? undefined : mkdtempSync(path.join(os.tmpdir(), "iris-local-"));
    const controller = await Controller.start({
      host: "127.0.0.1",
      port: opts.port ?? 0,
      dbPath: opts.dbPath ?? path.join(tmpDir!, "controller.sqlite"),
      token: opts.token,
      ...(opts.noAuth ? { noAuth: true } : {}),
      ...(opts.credentialsFile !== undefined ? { credentialsFile: opts.credentialsFile } : {}),
      ...(opts.proxyPort !== undefined ? { proxyPort: opts.proxyPort } : {}),
      ...(opts.workerTimeoutMs !== undefined ? { workerTimeoutMs: opts.workerTimeoutMs } : {}),
      ...(opts.schedulingTimeoutMs !== undefined ? { schedulingTimeoutMs: opts.schedulingTimeoutMs } : {}),
      ...(opts.httpPort !== undefined ? { httpPort: opts.httpPort } : {}),
    });
    const token = opts.token || controller.adminToken;
    const workers: Worker[] = [];
    const share = localWorkerCapacity(opts.workers ?? 1);
    try {
      for (let i = 0; i < (opts.workers ?? 1); i++) {
        workers.push(
          await Worker.start({
            controller: controller.address,
            token: token ?? "",
            cpuMillis: opts.workerCpuMillis ?? share.cpuMillis,
            memoryBytes: opts.workerMemoryBytes ?? share.memoryBytes,
            ...(opts.workerAttributes ? { attributes: opts.workerAttributes(i) } : {}),
          }),
        );
      }
      await Promise.all(workers.map((w) => w.registered));
    } catch (e) {
      await Promise.all(workers.map((w) => w.stop()));
      await controller.stop();
      if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
      throw e;
    }
    // The client names jobs itself (under IRIS_USER or the OS user), with or without a token.
    const client = IrisClient.connect(controller.address, { token: token ?? "", user: defaultIrisUser() });
    return new LocalCluster(controller, workers, client, tmpDir, token);
  }

  /** Stops the workers (killing their attempts), then the controller; removes the temp dir. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.client.close();
    await Promise.all(this.workers.map((w) => w.stop()));
    await this.controller.stop();
    if (this.tmpDir) rmSync(this.tmpDir, { recursive: true, force: true });
  }
}
