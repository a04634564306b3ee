// @marin/iris/testing: helpers for the tests of packages built on iris (and of iris itself).
export { waitFor } from "./worker/testing/waitFor.ts";
export { SOURCE_LOADER, sourceNode } from "./process/sourceLoader.ts";
export { skipUnlessSlurm, slurmAvailability, startSlurm } from "./testkit/slurm.ts";
export type { SlurmAvailability, StartSlurmOptions, TestSlurm } from "./testkit/slurm.ts";
