// @marin/iris/toolkit: small helpers shared by every package (iris is the floor they all import).
// Each module stands alone and imports nothing else of iris.
export { z } from "./zod.ts";
export { formatZodIssues, issuePath, valueAtPath } from "./zodIssues.ts";
export type { FormatIssuesOptions, IssuePath, ZodIssue } from "./zodIssues.ts";
export { Backoff, backoffDelay, sleep } from "./backoff.ts";
export type { BackoffOptions } from "./backoff.ts";
export { syncDir, syncDirSync, tempPathBeside, writeFileAtomic, writeFileAtomicSync } from "./atomicWrite.ts";
export type { AtomicWriteOptions } from "./atomicWrite.ts";
export { Histogram, LabeledCounter, PrometheusText, labelText, sampleLine } from "./prometheus.ts";
export type { Labels, MetricType } from "./prometheus.ts";
export { describeIntegerRange, integerArg, integerFlag, toInteger } from "./cliInteger.ts";
export type { IntegerRange } from "./cliInteger.ts";
export { stripWordTags } from "./wordTags.ts";
