// Where a data-parallel rank sits (rank of world) and what it reads.
import { LevanterError } from "../errors.ts";

/**
 * Where one data-parallel rank sits: `rank` of `world` processes, each holding a full replica of
 * the model (the only mesh levanter supports today: data parallelism, no model axes).
 */
export interface DataParallelMesh {
  readonly rank: number;
  readonly world: number;
}

/**
 * Checks and returns a {@link DataParallelMesh}; defaults to a single process (`rank 0 of 1`).
 *
 * @example dataParallelMesh({ rank: getIrisCtx()?.taskIndex, world: getIrisCtx()?.numTasks })
 */
export function dataParallelMesh(opts: { rank?: number | undefined; world?: number | undefined } = {}): DataParallelMesh {
  const world = opts.world ?? 1;
  const rank = opts.rank ?? 0;
  if (!Number.isInteger(world) || world < 1) {
    throw new LevanterError("INVALID_CONFIG", `world: expected a positive integer, got ${world}`);
  }
  if (!Number.isInteger(rank) || rank < 0 || rank >= world) {
    throw new LevanterError("INVALID_CONFIG", `rank: expected an integer in [0, ${world}), got ${rank}`);
  }
  return { rank, world };
}

/**
 * The contiguous slice `[start, start + size)` of a global batch that `rank` of `world` computes.
 * The global batch is fixed by the config, never by the cluster size, so the ranks' slices
 * concatenated in rank order are exactly the single-process batch.
 *
 * @example batchSlice(1, 4, 16) // → { start: 4, size: 4 }
 */
export function batchSlice(rank: number, world: number, globalBatchSize: number): { start: number; size: number } {
  const mesh = dataParallelMesh({ rank, world });
  if (!Number.isInteger(globalBatchSize) || globalBatchSize < 1) {
    throw new LevanterError("INVALID_CONFIG", `batchSize: expected a positive integer, got ${globalBatchSize}`);
  }
  if (globalBatchSize % mesh.world !== 0) {
    throw new LevanterError("INVALID_CONFIG", `batchSize: the global batch (${globalBatchSize}) must be divisible by the number of data-parallel ranks (${mesh.world})`);
  }
  const size = globalBatchSize / mesh.world;
  return { start: mesh.rank * size, size };
}
