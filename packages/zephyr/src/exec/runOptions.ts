// The sinks' options are checked where they enter (zod), so a typo or a bad value fails before
// anything runs, with the field's path, instead of being ignored or failing deep in a worker.
import { formatZodIssues } from "@marin/iris/toolkit";
import { z } from "@marin/iris/toolkit";
import { ZephyrError } from "../errors.ts";

function positiveInt(what = "a positive integer") {
  return z
    .number({ error: `expected ${what}` })
    .int(`expected ${what}`)
    .positive(`expected ${what}`);
}

function nonNegativeInt() {
  return z.number({ error: "expected a non-negative integer" }).int("expected a non-negative integer").nonnegative("expected a non-negative integer");
}

const irisOptions = z.strictObject({
  // An IrisClient instance: only its presence is checked here; the backend uses it.
  client: z.custom<object>((v) => v !== null && typeof v === "object", { error: "expected an IrisClient" }).optional(),
  address: z.string({ error: "expected a host:port string" }).min(1, "expected a host:port string").optional(),
  token: z.string({ error: "expected a string" }).optional(),
  cpuMillis: positiveInt().optional(),
  memoryBytes: positiveInt().optional(),
  jobPrefix: z.string({ error: "expected a string" }).min(1, "expected a non-empty string").optional(),
  bundle: z.union([z.boolean(), z.string().min(1)], { error: "expected true/false or a directory in a git work tree" }).optional(),
});

/** Every option a sink accepts (DatasetRunOptions, WriteOptions, TokenCacheOptions and `withStats`). */
const sinkOptions = z.strictObject({
  backend: z.enum(["inline", "threads", "iris"], { error: 'expected "inline", "threads" or "iris"' }).optional(),
  threads: positiveInt().optional(),
  maxShardRetries: nonNegativeInt().optional(),
  memoryBudgetBytes: z.number({ error: "expected a positive number" }).positive("expected a positive number").finite("expected a positive number").optional(),
  scratchDir: z.string({ error: "expected a directory path" }).min(1, "expected a directory path").optional(),
  progress: z.boolean({ error: "expected true or false" }).optional(),
  iris: irisOptions.optional(),
  skipExisting: z.boolean({ error: "expected true or false" }).optional(),
  tokenizer: z.string({ error: "expected a string" }).optional(),
  vocabSize: positiveInt().optional(),
  withStats: z.boolean({ error: "expected true or false" }).optional(),
});

function show(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number" || typeof v === "boolean" || v === null || v === undefined) return String(v);
  return typeof v;
}

/**
 * Checks a sink's options; throws `INVALID_ARGUMENT` naming each bad field by its path
 * (`iris.cpuMillis: expected a positive integer, got -5`) and any unknown option.
 */
export function checkSinkOptions(options: unknown): void {
  const r = sinkOptions.safeParse(options ?? {});
  if (r.success) return;
  const text = formatZodIssues(r.error, {
    root: "options",
    input: options,
    show,
    missing: show(undefined),
    line: (issue, path) => {
      if (issue.code !== "unrecognized_keys") return undefined;
      const at = path.join(".");
      const known = Object.keys((at === "iris" ? irisOptions : sinkOptions).shape).join(", ");
      return `${at ? `${at}: ` : ""}unknown option${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => JSON.stringify(k)).join(", ")} (known: ${known})`;
    },
  });
  throw new ZephyrError("INVALID_ARGUMENT", text);
}
