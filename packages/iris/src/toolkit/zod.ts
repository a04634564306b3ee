// zod for the workspace's code: `import { z } from "@marin/iris/toolkit"` (inside iris, from this
// file), in place of `import { z } from "zod"`. It is zod's CommonJS build, loaded with
// require(): zod's ES-module build is 95 modules, and every process of the workspace paid for
// them at start-up (each ES module is resolved and linked on its own, and under a loader's hooks
// crosses to the hooks thread and back), about 140 ms of CPU per process against a require() of
// the same code (`node -e 'await import("zod")'` vs `require("zod")`, under the source loader).
// Types still come from zod itself: `z.infer`, `z.input`, `z.output`, `z.ZodType` and
// `z.ZodError` are declared below; anything else, `import type { … } from "zod"`.
import { createRequire } from "node:module";
import type * as Zod from "zod";

export const z: typeof Zod.z = (createRequire(import.meta.url)("zod") as typeof Zod).z;

// A types-only namespace merged with the value, so that `z.infer<typeof S>` works as with zod's own `z`.
// eslint-disable-next-line @typescript-eslint/no-namespace -- types only, erased
export declare namespace z {
  export type infer<T> = Zod.z.infer<T>;
  export type input<T> = Zod.z.input<T>;
  export type output<T> = Zod.z.output<T>;
  export type ZodType<O = unknown, I = unknown> = Zod.z.ZodType<O, I>;
  export type ZodError<T = unknown> = Zod.z.ZodError<T>;
}
