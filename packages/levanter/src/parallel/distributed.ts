// Joining the data-parallel gang of an iris job: rank and world from the task's identity, the
// secret from IRIS_GANG_SECRET, the listen port from IRIS_PORT_<NAME> on IRIS_ADVERTISE_HOST only,
// and rank 0's address published as an iris endpoint before anyone waits (see gang.ts).
import { getIrisCtx, type IrisContext } from "@marin/iris/client";
import { LevanterError } from "../errors.ts";
import { setLogContext } from "../internal/log.ts";
import { allGatherJson } from "./collectives.ts";
import { formGang, type Gang, type Rendezvous } from "./gang.ts";

/** Options of {@link initializeDistributed}. */
export interface DistributedOptions {
  /** Endpoint name of the coordinator (scoped to the job). Default `levanter_coordinator`. */
  endpointName?: string;
  /** Named iris port each rank listens on if the job requested it (else any free port). Default `dp`. */
  portName?: string;
  /** Start-up barrier: how long ranks wait for each other. Default 300 s (gang restarts can be slow). */
  timeoutMs?: number;
  /** A peer silent this long (no heartbeat, no data) fails the gang as `PEER_FAILED`. Default 10 s. */
  peerTimeoutMs?: number;
  /** The gang attempt's secret; default `IRIS_GANG_SECRET`, which iris sets for gang jobs. */
  secret?: string;
}

/** This process's place in the gang, and the gang itself. */
export interface Distributed {
  rank: number;
  world: number;
  /** `host:port` of the coordinator (rank 0); undefined when running alone. */
  coordinatorAddress: string | undefined;
  /** The formed gang (undefined when running alone): the collectives of `parallel/` take it. */
  gang: Gang | undefined;
  /** Every rank contributes a JSON value; every rank gets all values, by rank. */
  allGather<T>(value: T): Promise<T[]>;
  /**
   * Says goodbye to the peers and closes the links (and rank 0's endpoint). `waitForPeers` (a
   * run's clean end): first waits until every rank has said goodbye, so no rank leaves while
   * another still needs it; rejects when a peer fails before that.
   */
  close(opts?: { waitForPeers?: boolean; timeoutMs?: number }): Promise<void>;
}

/**
 * Joins the data-parallel gang of the current iris job: alone (rank 0 of 1) outside iris or in a
 * one-task job; otherwise every rank listens on the advertised host, rank 0 registers the
 * coordinator endpoint and waits for the others, and all connect to each other with links
 * authenticated by the gang attempt's secret. Fails `DISTRIBUTED` naming the ranks still missing
 * when the barrier times out, so the task exits and iris retries the gang.
 *
 * @example
 * const dist = await initializeDistributed();
 * const all = await dist.allGather({ rank: dist.rank, loss });
 */
export async function initializeDistributed(opts: DistributedOptions = {}): Promise<Distributed> {
  const ctx = getIrisCtx();
  if (!ctx || ctx.numTasks <= 1) {
    return { rank: 0, world: 1, coordinatorAddress: undefined, gang: undefined, allGather: async (v) => [v], close: async () => {} };
  }
  const secret = opts.secret ?? process.env.IRIS_GANG_SECRET;
  if (secret === undefined || secret === "") {
    throw new LevanterError(
      "DISTRIBUTED",
      `IRIS_GANG_SECRET is not set: rank ${ctx.taskIndex} of ${ctx.numTasks} cannot authenticate its peers (submit the job with gang: true to an iris controller that mints gang secrets)`,
    );
  }
  let port = 0;
  try {
    port = ctx.getPort(opts.portName ?? "dp");
  } catch {
    // no named port requested: any free port
  }
  const endpointName = opts.endpointName ?? "levanter_coordinator";
  const { taskIndex: rank, numTasks: world } = ctx;
  setLogContext({ rank });
  const gang = await formGang({
    rank,
    world,
    secret,
    host: ctx.advertiseHost,
    port,
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.peerTimeoutMs !== undefined ? { peerTimeoutMs: opts.peerTimeoutMs } : {}),
    rendezvous: irisRendezvous(ctx, endpointName),
  });
  return {
    rank,
    world,
    coordinatorAddress: gang.coordinator,
    gang,
    allGather: (value) => allGatherJson(gang, value),
    close: (o) => gang.close(o),
  };
}

/**
 * How the ranks of an iris job find each other: rank 0 registers its `host:port` as the job's
 * endpoint `endpointName` (with the world size and the attempt as metadata), the others resolve it.
 */
export function irisRendezvous(ctx: IrisContext, endpointName: string): Rendezvous {
  return {
    async register(address) {
      const registration = await ctx.registry.register(endpointName, address, { world: String(ctx.numTasks), attempt: String(ctx.attempt) });
      return () => registration.unregister();
    },
    async resolve(timeoutMs) {
      return (await ctx.resolver.resolve(endpointName, { timeoutMs })).address;
    },
  };
}
