// The name rules of jobs and endpoints: full names (`/user/job[/child…]`), their segments and
// sizes, endpoint registrations' sizes, and what lies in a job's tree.
import { IrisError } from "./errors.ts";
import { LIMITS, utf8Bytes } from "./jobLimits.ts";

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Checks a full job name: `/user/job[/child…]`, segments of letters, digits, `.`, `_`, `-`, and
 * no purely numeric segment after the user (those name tasks).
 */
export function checkJobName(name: string): string | undefined {
  if (name.length > LIMITS.nameChars) return `name: expected at most ${LIMITS.nameChars} characters, got ${name.length}`;
  if (!name.startsWith("/")) return `name: expected a full name starting with "/", got "${name}"`;
  const segs = name.slice(1).split("/");
  if (segs.length < 2) return `name: expected /<user>/<job>, got "${name}"`;
  for (const [i, s] of segs.entries()) {
    if (s.length > LIMITS.segmentChars) return `name: segment "${s.slice(0, 20)}…" is longer than ${LIMITS.segmentChars} characters`;
    if (!SEGMENT.test(s)) return `name: invalid segment "${s}" in "${name}" (letters, digits, . _ -)`;
    if (i > 0 && /^\d+$/.test(s)) return `name: segment "${s}" in "${name}" may not be a number (numbers name tasks)`;
  }
  return undefined;
}

/**
 * Checks a full endpoint name (`/user/root/name…`): at most {@link LIMITS.nameChars} characters,
 * segments of letters, digits, `.`, `_`, `-` (and `:`); an error text or undefined.
 */
export function checkEndpointName(name: string): string | undefined {
  if (name.length > LIMITS.nameChars) return `endpoint name: expected at most ${LIMITS.nameChars} characters, got ${name.length}`;
  const segs = name.slice(1).split("/");
  if (!name.startsWith("/") || segs.length < 2) return `endpoint name: expected /<user>/<job>/<name>, got "${name}"`;
  for (const s of segs) {
    if (s.length > LIMITS.segmentChars || !ENDPOINT_SEGMENT.test(s))
      return `endpoint name: invalid segment "${s.slice(0, 40)}" (letters, digits, . _ - :, at most ${LIMITS.segmentChars})`;
  }
  return undefined;
}

const ENDPOINT_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** Checks the sizes of an endpoint registration (name, address, metadata): INVALID_ARGUMENT. */
export function checkEndpointRequest(req: { name: string; address: string; metadata: Record<string, string> }): void {
  const bad = (m: string): never => {
    throw new IrisError("INVALID_ARGUMENT", m);
  };
  if (!req.name) bad("endpoint name: expected a non-empty name");
  if (req.name.length > LIMITS.nameChars) bad(`endpoint name: expected at most ${LIMITS.nameChars} characters, got ${req.name.length}`);
  if (!req.address) bad("endpoint address: expected a non-empty address");
  if (req.address.length > LIMITS.addressChars) bad(`endpoint address: expected at most ${LIMITS.addressChars} characters, got ${req.address.length}`);
  const entries = Object.entries(req.metadata);
  if (entries.length > LIMITS.metadataEntries) bad(`endpoint metadata: expected at most ${LIMITS.metadataEntries} entries, got ${entries.length}`);
  const bytes = entries.reduce((n, [k, v]) => n + utf8Bytes(k) + utf8Bytes(v), 0);
  if (bytes > LIMITS.metadataBytes) bad(`endpoint metadata: expected at most ${LIMITS.metadataBytes} bytes, got ${bytes}`);
}

/** Whether job name `name` is `root` or below it (`/u/a` covers `/u/a` and `/u/a/b`, not `/u/ab`). */
export function inTree(root: string, name: string): boolean {
  return name === root || name.startsWith(root.endsWith("/") ? root : `${root}/`);
}
