// @marin/iris — the distributed job runtime. The one public entry of the package.
export { IrisError, IRIS_ERROR_CODES, grpcStatusOf, irisCodeOf } from "./errors.ts";
export type { IrisErrorCode } from "./errors.ts";
export { assertNever, invariant } from "./internal/assert.ts";
