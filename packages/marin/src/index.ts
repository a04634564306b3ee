// @marin/marin — pipelines: steps, the executor, standard steps. The one public entry of the package.
export { MarinError, MARIN_ERROR_CODES } from "./errors.ts";
export type { MarinErrorCode } from "./errors.ts";
