// definePipeline: the way to run a Dataset on other threads or machines. JavaScript cannot ship
// closures, so a worker imports the module that defines the pipeline, rebuilds the same plan from
// the same JSON arguments, and checks the plan's fingerprint before it runs a shard.
import { Dataset } from "./dataset.ts";
import { ZephyrError } from "./errors.ts";
import { nextPipelineName, registerPipeline } from "./plan/registry.ts";

/** A pipeline factory: call it with its arguments to get the Dataset (runnable on any backend). */
export type Pipeline<A, T> = ((...args: undefined extends A ? [args?: A] : [args: A]) => Dataset<T>) & {
  /** The defining module's URL. */
  readonly url: string;
  /** The pipeline's name within its module. */
  readonly pipelineName: string;
};

/**
 * Defines a pipeline in a module so that the `threads` and `iris` backends can run it: workers
 * import `url`, call `build` with the same arguments, and refuse to run if the rebuilt plan's
 * fingerprint differs. `build` must be deterministic and `args` JSON data. Pipelines are named by
 * their order of definition in the module unless `options.name` is given.
 *
 * @example
 * // pipelines/clean.ts
 * export const clean = definePipeline(import.meta.url, (args: { input: string }) =>
 *   readJsonl<{ text: string }>(args.input).filter((r) => r.text.length > 40));
 * // elsewhere
 * await clean({ input: "raw/*.jsonl.gz" }).writeJsonl("out/clean-{shard}.jsonl.gz");
 */
export function definePipeline<A = undefined, T = unknown>(url: string, build: (args: A) => Dataset<T>, options: { name?: string } = {}): Pipeline<A, T> {
  if (typeof url !== "string" || !/^file:|^\//.test(url)) {
    throw new ZephyrError("INVALID_ARGUMENT", `definePipeline: expected import.meta.url (a file: URL) as the first argument, got ${JSON.stringify(url)}`);
  }
  // Every definition takes its ordinal, so later ones keep their default names when one is named.
  const ordinalName = nextPipelineName(url);
  const name = options.name ?? ordinalName;
  const built = (args: A): Dataset<T> => {
    const ds = build(args);
    if (!(ds instanceof Dataset)) throw new ZephyrError("INVALID_ARGUMENT", `definePipeline ${name}: the build function must return a Dataset`);
    return ds;
  };
  registerPipeline(url, name, (args) => built(args as A).logical);
  const factory = (args?: A): Dataset<T> =>
    new Dataset<T>(built(args as A).logical, { url, name, args: args === undefined ? null : (JSON.parse(JSON.stringify(args)) as unknown) });
  return Object.assign(factory, { url, pipelineName: name }) as unknown as Pipeline<A, T>;
}
