// Zod issues as one line for people: `resources.cpuMillis: expected …; name: …`.
import type { z } from "zod";

/** One zod issue (zod's own type, re-exported so callers need not reach into `z.core`). */
export type ZodIssue = z.core.$ZodIssue;
/** A path into the checked value, symbols dropped. */
export type IssuePath = (string | number)[];

export interface FormatIssuesOptions {
  /** Segments put before every issue's own path (`trainer`, or `["data", 0]`). */
  prefix?: string | readonly (string | number)[];
  /** What an issue at the root is called (default `(root)`). */
  root?: string;
  /** Between issues (default `; `). */
  separator?: string;
  /** At most this many issues (default all). */
  limit?: number;
  /** Drop zod's `Invalid input: ` lead-in from messages. */
  trimInvalidInput?: boolean;
  /**
   * Writes a path (default: segments joined with `.`); `[2]` style indices, say. Receives the
   * full path (prefix included); an empty path is named by `root`, never passed here.
   */
  path?: (path: IssuePath) => string;
  /**
   * The value that was checked: each issue then ends with `, got <value>` (the value at its path,
   * as `show` writes it; default JSON). Not added for unknown keys, nor where the value is
   * missing unless `missing` names it (`, got missing`).
   */
  input?: unknown;
  show?: (value: unknown) => string;
  missing?: string;
  /** A line of the caller's own for an issue (unknown keys, say); undefined: the default line. */
  line?: (issue: ZodIssue, path: IssuePath) => string | undefined;
}

/** An issue's path without symbols. */
export function issuePath(issue: ZodIssue): IssuePath {
  return issue.path.filter((p): p is string | number => typeof p !== "symbol");
}

/** The value at `path` inside `input` (undefined where a step is missing). */
export function valueAtPath(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const k of path) v = v !== null && typeof v === "object" ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

/**
 * Formats zod issues (a `ZodError` or its `issues`) for people, each naming the path of the field
 * it is about: `trainer.numTrainSteps: Too small: expected number to be >0, got -3`.
 */
export function formatZodIssues(issues: z.ZodError | readonly ZodIssue[], opts: FormatIssuesOptions = {}): string {
  const list = "issues" in issues ? issues.issues : issues;
  const prefix = opts.prefix === undefined ? [] : typeof opts.prefix === "string" ? (opts.prefix === "" ? [] : [opts.prefix]) : [...opts.prefix];
  const writePath = opts.path ?? ((p: IssuePath) => p.map(String).join("."));
  const lines = (opts.limit === undefined ? list : list.slice(0, opts.limit)).map((issue) => {
    const own = issuePath(issue);
    const full = [...prefix, ...own];
    const custom = opts.line?.(issue, full);
    if (custom !== undefined) return custom;
    const message = opts.trimInvalidInput ? issue.message.replace(/^Invalid input: /, "") : issue.message;
    let got = "";
    if ("input" in opts && issue.code !== "unrecognized_keys") {
      const v = valueAtPath(opts.input, own);
      if (v !== undefined) got = `, got ${(opts.show ?? JSON.stringify)(v)}`;
      else if (opts.missing !== undefined) got = `, got ${opts.missing}`;
    }
    return `${full.length === 0 ? (opts.root ?? "(root)") : writePath(full)}: ${message}${got}`;
  });
  return lines.join(opts.separator ?? "; ");
}
