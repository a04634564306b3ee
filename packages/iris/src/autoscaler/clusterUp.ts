// `iris cluster up --config FILE`: the controller of the config's `controller:` section with the
// autoscaler of its `scaleGroups:` attached, in the foreground. Also `startCluster()` for tests
// and embedding.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Controller, bindRefusal } from "../controller/controller.ts";
import { Autoscaler } from "./autoscaler.ts";
import { ClusterConfigError, loadClusterConfig, type ClusterConfig } from "./config.ts";
import { ControllerCredentialIssuer } from "./credentials.ts";
import type { WorkerCredentialIssuer } from "./provider.ts";
import { clusterIdOf, createProviders, type ProviderContext } from "./providers.ts";

/** A running cluster: the controller and its autoscaler. */
export interface RunningCluster {
  controller: Controller;
  autoscaler: Autoscaler;
  /** The folder of controller.db (a temporary one when the config has no db). */
  stateDir: string;
  clusterId: string;
  /** Stops the autoscaler (draining and stopping its workers unless `keepWorkers`), then the controller. */
  stop(opts?: { keepWorkers?: boolean }): Promise<void>;
}

/** Options of {@link startCluster} beyond the config (tests). */
export interface StartClusterOptions {
  /** Autoscaler round interval (default 2 s). */
  intervalMs?: number;
  log?: (line: string) => void;
  /** Options of the local provider. */
  local?: ProviderContext["local"];
  /** Replaces the credential issuer (default: the controller's per-worker credentials). */
  credentials?: WorkerCredentialIssuer;
}

/** Starts the controller and attaches the autoscaler; its first round runs at once. */
export async function startCluster(config: ClusterConfig, opts: StartClusterOptions = {}): Promise<RunningCluster> {
  const c = config.controller;
  const tmp = c.db === undefined ? mkdtempSync(path.join(os.tmpdir(), "iris-cluster-")) : undefined;
  const dbPath = c.db ?? path.join(tmp!, "controller.sqlite");
  const stateDir = path.dirname(path.resolve(dbPath));
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const controller = await Controller.start({
    port: c.port,
    host: c.host,
    dbPath,
    token: c.token,
    ...(c.authFile ? { authFile: c.authFile } : {}),
    ...(c.insecure ? { insecure: true } : {}),
    ...(c.tlsCert && c.tlsKey ? { tls: { cert: readFileSync(c.tlsCert), key: readFileSync(c.tlsKey) } } : {}),
    log,
    ...(c.workerTimeoutMs !== undefined ? { workerTimeoutMs: c.workerTimeoutMs } : {}),
    ...(c.schedulingTimeoutMs !== undefined ? { schedulingTimeoutMs: c.schedulingTimeoutMs } : {}),
    ...(c.httpPort !== undefined ? { httpPort: c.httpPort } : {}),
    ...(c.bundleKeep !== undefined ? { bundleKeep: c.bundleKeep } : {}),
    ...(c.noAuth ? { noAuth: true } : {}),
    ...(c.proxyPort !== undefined ? { proxyPort: c.proxyPort } : {}),
  });
  try {
    const clusterId = clusterIdOf(stateDir);
    const providers = createProviders(config.scaleGroups, { clusterId, stateDir, log, ...(opts.local ? { local: opts.local } : {}) });
    const autoscaler = new Autoscaler({
      groups: config.scaleGroups,
      providers,
      state: {
        autoscalerSnapshot: () => controller.state.autoscalerSnapshot(),
        setAutoscalerView: (view) => controller.state.jobs.setAutoscalerView(view),
        drainWorker: (workerId) => controller.state.workers.drainWorker(workerId).preempted,
        deregisterWorker: (workerId) => controller.state.workers.deregisterWorker(workerId),
      },
      credentials: opts.credentials ?? new ControllerCredentialIssuer(controller.workerCredentials, controller.auth.enabled),
      controllerAddress: c.advertise ?? controller.address,
      stateDir,
      ...(opts.intervalMs !== undefined ? { intervalMs: opts.intervalMs } : {}),
      log,
    });
    controller.attachCluster({ status: () => autoscaler.status(), down: () => autoscaler.drainAndStopAll() });
    // New or changed jobs bring the next round forward (scale-up latency).
    controller.onChange((kind) => {
      if (kind === "job") autoscaler.nudge();
    });
    autoscaler.start();
    let stopped = false;
    return {
      controller,
      autoscaler,
      stateDir,
      clusterId,
      async stop(o = {}) {
        if (stopped) return;
        stopped = true;
        try {
          await autoscaler.stop(o);
        } finally {
          await controller.stop();
          if (tmp) rmSync(tmp, { recursive: true, force: true });
        }
      },
    };
  } catch (e) {
    await controller.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}

/** The action of `iris cluster up`: resolves to the exit code (2 for a bad config). */
export async function runClusterUp(
  a: { configFile: string; keepWorkers: boolean },
  io: { out(text: string): void; err(text: string): void },
  untilSignal: () => Promise<NodeJS.Signals>,
): Promise<number> {
  let config: ClusterConfig;
  try {
    config = loadClusterConfig(a.configFile);
  } catch (e) {
    if (e instanceof ClusterConfigError) {
      io.err(`iris cluster up: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const c = config.controller;
  // As `iris controller`: a non-loopback bind needs credentials (or insecure); a loopback one
  // without any mints its own admin token.
  const refusal = bindRefusal(c.host, Boolean(c.token) || Boolean(c.authFile), c.insecure);
  if (refusal !== undefined) {
    io.err(`iris cluster up: ${refusal}\n`);
    return 2;
  }
  const cluster = await startCluster(config, { log: (l) => io.err(`${l}\n`) });
  const groups = config.scaleGroups.map((g) => `${g.name} (${g.provider}, ${g.minWorkers}..${g.maxWorkers})`).join(", ");
  io.out(
    `iris cluster listening on ${cluster.controller.address} (db ${path.join(cluster.stateDir, path.basename(c.db ?? "controller.sqlite"))}, ` +
      `auth ${cluster.controller.auth.enabled ? "on" : "off"}, workers dial ${c.advertise ?? cluster.controller.address}; groups: ${groups})\n` +
      `  ${cluster.controller.authNotice()}\n` +
      `  export IRIS_CONTROLLER_ADDRESS=${cluster.controller.address}\n` +
      (cluster.controller.httpAddress ? `  dashboard: ${cluster.controller.loginUrl()}\n` : ""),
  );
  const sig = await untilSignal();
  io.err(`iris cluster up: ${sig}: ${a.keepWorkers ? "leaving the workers running (--keep-workers)" : "draining and stopping the workers"}\n`);
  await cluster.stop({ keepWorkers: a.keepWorkers });
  return 0;
}
