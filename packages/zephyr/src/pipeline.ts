// definePipeline: the way to run a Dataset on other threads or machines. JavaScript cannot ship
// closures, so a worker imports the module that defines the pipeline, rebuilds the same plan from
// the same JSON arguments, and checks the plan's fingerprint before it runs a shard.
import { Dataset } from "./dataset.ts";
import { ZephyrError } from "./errors.ts";

/** A pipeline factory: call it with its arguments to get the Dataset (runnable on any backend). */
export type Pipeline<A, T> = ((...args: undefined extends A ? [args?: A] : [args: A]) => Dataset<T>) & {
  /** The defining module's URL. */
  readonly url: string;
  /** The pipeline's name within its module. */
  readonly pipelineName: string;
};

type Build = (args: unknown) => Dataset<unknown>;

const registry = new Map<string, Build>();
const ordinals = new Map<string, number>();

function keyOf(url: string, name: string): string {
  return `${url}#${name}`;
}

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
  const ordinal = ordinals.get(url) ?? 0;
  ordinals.set(url, ordinal + 1);
  const name = options.name ?? `pipeline-${ordinal}`;
  registry.set(keyOf(url, name), build as Build);
  const factory = (args?: A): Dataset<T> => {
    const ds = build(args as A);
    if (!(ds instanceof Dataset)) throw new ZephyrError("INVALID_ARGUMENT", `definePipeline ${name}: the build function must return a Dataset`);
    return new Dataset<T>(ds.logical, { url, name, args: args === undefined ? null : (JSON.parse(JSON.stringify(args)) as unknown) });
  };
  return Object.assign(factory, { url, pipelineName: name }) as unknown as Pipeline<A, T>;
}

/** Imports the module at `url` (registering its pipelines) and rebuilds pipeline `name` from `args`. */
export async function rebuildPipeline(url: string, name: string, args: unknown): Promise<Dataset<unknown>> {
  if (!registry.has(keyOf(url, name))) await import(url);
  const build = registry.get(keyOf(url, name));
  if (!build) throw new ZephyrError("FINGERPRINT_MISMATCH", `module ${url} defines no pipeline named ${name} (was it renamed, or defined conditionally?)`);
  return build(args === null ? undefined : args);
}
