// The machine's core count: the default shard count of small in-memory sources and the default size of the thread pool.
import os from "node:os";

/** Number of CPU cores. */
export function cores(): number {
  return typeof os.availableParallelism === "function" ? os.availableParallelism() : os.cpus().length;
}
