// @marin/zephyr — lazy datasets. The one public entry of the package.
export { ZephyrError, ZEPHYR_ERROR_CODES } from "./errors.ts";
export type { ZephyrErrorCode } from "./errors.ts";
