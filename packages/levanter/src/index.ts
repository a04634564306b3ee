// @marin/levanter — language-model training on TensorFlow.js. The one public entry of the package
// (the token-cache layout and data-parallel sharding live on the `@marin/levanter/sharding` subpath).
export { LevanterError, LEVANTER_ERROR_CODES } from "./errors.ts";
export type { LevanterErrorCode } from "./errors.ts";
