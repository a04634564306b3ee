// defineStep, outputOf and ignore: how an experiment declares steps, their configs and dependencies.
import type { z } from "zod";
import { MarinError } from "../errors.ts";

/** Compute resources a step asks for; a step that has them runs as an iris job. Never part of identity. */
export interface StepResources {
  cpuMillis?: number;
  memoryBytes?: number;
  devices?: { kind: string; count: number }[];
}

/** What a step's `fn` receives when it runs. */
export interface StepContext<C> {
  /** The step's name. */
  readonly name: string;
  /** `<name>-<hash>`: the step's identity. */
  readonly id: string;
  /** The resolved config: `outputOf` references are absolute paths, `ignore` wrappers are gone. */
  readonly config: C;
  /**
   * Where the step writes its outputs: a staging folder the executor publishes to `finalPath`
   * (one rename per top-level entry) only after `fn` resolves, so that a crash never leaves a
   * half-written output marked SUCCESS.
   */
  readonly outputPath: string;
  /** Where the outputs live once published: `<prefix>/<name>-<hash>`. */
  readonly finalPath: string;
  /** The run's prefix. */
  readonly prefix: string;
  /** Fires when the run is cancelled or this runner lost the step's lease: stop writing and throw. */
  readonly signal: AbortSignal;
  /** Appends a line to the step's log (and to the live view when verbose). */
  log(message: string): void;
  /**
   * Reports progress (`step 5/20 · loss 2.1 · 900 tok/s · ETA 1m02s`): shown beside the running step
   * in the live view. In an iris job it goes to the task's status report (iris keeps it with the attempt).
   */
  reportStatus(text: string, metrics?: Record<string, number>): void;
}

/** A step's body: writes under `ctx.outputPath`, may return a small JSON summary (shown at the end of a run). */
export type StepFn<C> = (ctx: StepContext<C>) => unknown;

const OUTPUT_REF = Symbol.for("marin.outputRef");
const IGNORED = Symbol.for("marin.ignored");
const STEP = Symbol.for("marin.step");

/** A reference to another step's output (see {@link outputOf}). */
export interface OutputRef {
  readonly [OUTPUT_REF]: true;
  readonly step: Step<any>;
  readonly subPath: string | undefined;
}

/** A config value excluded from identity (see {@link ignore}). */
export interface Ignored<T> {
  readonly [IGNORED]: true;
  readonly value: T;
}

/** The type a config takes once resolved: references become path strings, ignore wrappers unwrap. */
export type Resolved<T> = T extends OutputRef
  ? string
  : T extends Ignored<infer V>
    ? Resolved<V>
    : T extends readonly (infer E)[]
      ? Resolved<E>[]
      : T extends object
        ? { [K in keyof T]: Resolved<T[K]> }
        : T;

/** What {@link defineStep} takes. */
export interface StepDefinition<C> {
  /** Path-like name (`tiny-brown/tokenize`): segments of letters, digits, `.`, `_`, `-`. */
  name: string;
  /** Plain data (objects, arrays, strings, finite numbers, booleans, null), `outputOf(...)`, `ignore(...)`. */
  config: C;
  fn: StepFn<Resolved<C>>;
  /** Bump to invalidate outputs when the code changes in a way the config does not show. */
  version?: string;
  /** When given, the step runs as an iris job with these resources. */
  resources?: StepResources;
  /** Validates the resolved config before the step is planned. */
  schema?: z.ZodType<unknown>;
  /** Keep the staging folder across failed attempts so that the step can resume (training checkpoints). */
  resumable?: boolean;
  /** One line for people. */
  description?: string;
}

/** A defined step: inert data until an executor plans and runs it. */
export interface Step<C = unknown> {
  readonly [STEP]: true;
  readonly name: string;
  readonly config: C;
  readonly fn: StepFn<Resolved<C>>;
  readonly version: string | undefined;
  readonly resources: StepResources | undefined;
  readonly schema: z.ZodType<unknown> | undefined;
  readonly resumable: boolean;
  readonly description: string | undefined;
}

const NAME_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/**
 * Defines a pipeline step. Defining runs nothing; dependencies are exactly the `outputOf(step)`
 * references inside `config`.
 *
 * @example
 * const data = defineStep({ name: "data", config: { n: 100 }, fn: async (ctx) => writeNumbers(ctx) });
 * const stats = defineStep({ name: "stats", config: { input: outputOf(data, "numbers.json") }, fn: ... });
 */
export function defineStep<C>(def: StepDefinition<C>): Step<C> {
  if (typeof def.name !== "string" || !def.name.split("/").every((s) => NAME_SEGMENT.test(s))) {
    throw new MarinError("INVALID_CONFIG", `step name ${JSON.stringify(def.name)}: expected path segments of letters, digits, '.', '_' or '-' separated by '/'`);
  }
  if (typeof def.fn !== "function") throw new MarinError("INVALID_CONFIG", `step ${def.name}: fn must be a function`);
  if (def.version !== undefined && typeof def.version !== "string") {
    throw new MarinError("INVALID_CONFIG", `step ${def.name}: version must be a string`);
  }
  return Object.freeze({
    [STEP]: true as const,
    name: def.name,
    config: def.config,
    fn: def.fn,
    version: def.version,
    resources: def.resources,
    schema: def.schema,
    resumable: def.resumable ?? false,
    description: def.description,
  });
}

/**
 * References `step`'s output folder (or `subPath` inside it) from another step's config: the only
 * way to declare a dependency. Resolves to an absolute path when the step runs; identity sees the
 * dependency's `<name>-<hash>`, never the path, so the prefix never enters identity.
 */
export function outputOf(step: Step<any>, subPath?: string): OutputRef {
  if (!isStep(step)) throw new MarinError("INVALID_CONFIG", "outputOf: expected a step made by defineStep");
  if (subPath !== undefined && (subPath.startsWith("/") || subPath.split("/").includes(".."))) {
    throw new MarinError("INVALID_CONFIG", `outputOf(${step.name}, ${JSON.stringify(subPath)}): sub-path must be relative and stay inside the output`);
  }
  return Object.freeze({ [OUTPUT_REF]: true as const, step, subPath: subPath === "" ? undefined : subPath });
}

/**
 * Excludes a config value from identity: changing it neither changes the output path nor reruns
 * the step (logging levels, worker counts). Everything not wrapped counts.
 */
export function ignore<T>(value: T): Ignored<T> {
  return Object.freeze({ [IGNORED]: true as const, value });
}

/** Whether `v` is a step made by {@link defineStep}. */
export function isStep(v: unknown): v is Step<unknown> {
  return typeof v === "object" && v !== null && (v as Record<symbol, unknown>)[STEP] === true;
}

/** Whether `v` is an {@link outputOf} reference. */
export function isOutputRef(v: unknown): v is OutputRef {
  return typeof v === "object" && v !== null && (v as Record<symbol, unknown>)[OUTPUT_REF] === true;
}

/** Whether `v` is an {@link ignore} wrapper. */
export function isIgnored(v: unknown): v is Ignored<unknown> {
  return typeof v === "object" && v !== null && (v as Record<symbol, unknown>)[IGNORED] === true;
}
