// @marin/marin/status — reading what runs left at a prefix: each step's status file, its last run,
// and the steps under a prefix (what `marin status` and the dashboard show).
export { readStatus, STEP_STATES } from "./executor/stepFiles.ts";
export type { StepStatus, StepState } from "./executor/stepFiles.ts";
export { readLastRun } from "./executor/records.ts";
export type { StepRunInfo } from "./executor/records.ts";
export { listPrefix } from "./executor/prefixStatus.ts";
export type { PrefixEntry } from "./executor/prefixStatus.ts";
