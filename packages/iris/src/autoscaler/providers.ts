// Which provider a group's `provider:` names. A new engine adds one factory here (and the name to
// config.ts's enum); the autoscaler itself never changes.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { LocalProvider, type LocalProviderOptions } from "./localProvider.ts";
import type { ScaleGroupConfig, WorkerProvider } from "./provider.ts";
import { SlurmProvider } from "./slurmProvider.ts";

/** What every provider factory is given. */
export interface ProviderContext {
  /** This cluster's id (stable for its state directory): how a provider tells its workers from others'. */
  clusterId: string;
  /** The cluster's state directory (worker logs, credential files). */
  stateDir: string;
  /** Where a provider says what it does (quiet by default). */
  log: (line: string) => void;
  /** Options of the local provider (tests). */
  local?: LocalProviderOptions;
}

/** Builds a provider of one kind. */
export type ProviderFactory = (ctx: ProviderContext) => WorkerProvider;

/** The providers by `provider:` name. The slurm provider registers itself here. */
export const PROVIDER_FACTORIES = new Map<string, ProviderFactory>([
  ["local", (ctx) => new LocalProvider(ctx.local ?? {})],
  ["slurm", (ctx) => new SlurmProvider({ stateDir: ctx.stateDir, clusterId: ctx.clusterId })],
]);

/** One provider per kind the groups use. Throws for a kind nobody registered. */
export function createProviders(groups: readonly ScaleGroupConfig[], ctx: ProviderContext): Map<string, WorkerProvider> {
  const out = new Map<string, WorkerProvider>();
  for (const g of groups) {
    if (out.has(g.provider)) continue;
    const f = PROVIDER_FACTORIES.get(g.provider);
    if (!f) throw new Error(`scale group ${g.name}: provider "${g.provider}" is not available`);
    out.set(g.provider, f(ctx));
  }
  return out;
}

/**
 * The cluster's id, kept in `<stateDir>/cluster-id` (created on first use): a restart on the same
 * state directory (the folder of controller.db) is the same cluster.
 */
export function clusterIdOf(stateDir: string): string {
  const file = path.join(stateDir, "cluster-id");
  if (existsSync(file)) {
    const id = readFileSync(file, "utf8").trim();
    if (/^[a-z0-9-]{4,64}$/.test(id)) return id;
  }
  mkdirSync(stateDir, { recursive: true });
  const id = `iris-${randomBytes(6).toString("hex")}`;
  writeFileSync(file, `${id}\n`, { mode: 0o644 });
  return id;
}
