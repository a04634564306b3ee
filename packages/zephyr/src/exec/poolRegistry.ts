// The package entry's `closeThreadPool`, without loading piscina: worker threads import the
// package (through their pipeline module) but never start a pool, and each module they load costs
// start-up time. threads.ts registers its pools here when something loads it.
const closers = new Set<() => Promise<void>>();

/** Registers what closes a kind of shared pool (threads.ts, once loaded). */
export function onCloseThreadPools(close: () => Promise<void>): void {
  closers.add(close);
}

/** Closes the shared thread pools now (tests and short scripts that want a prompt exit). */
export async function closeThreadPool(): Promise<void> {
  await Promise.all([...closers].map((close) => close()));
}
