// @marin/iris/testing: helpers for the tests of packages built on iris (and of iris itself).
export { waitFor } from "./worker/testing/waitFor.ts";
