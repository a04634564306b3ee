// The documented bounds of what the controller accepts (LIMITS) and the measures they are checked
// with (UTF-8 bytes, JSON nesting depth). Part of the job spec's contract (see jobSpec.ts).

/**
 * The documented bounds of what the controller accepts (see the iris README's security section).
 * Over a bound: INVALID_ARGUMENT naming the field, or RESOURCE_EXHAUSTED for whole-message sizes
 * and quotas.
 */
export const LIMITS = {
  /** Bytes of a job spec's JSON (RESOURCE_EXHAUSTED above). */
  specBytes: 1024 * 1024,
  /** Tasks of one job. */
  replicas: 100_000,
  /** Named ports of one job. */
  portsPerJob: 64,
  /** Variables of a job's env, and their bytes (names + values). */
  envEntries: 1000,
  envBytes: 256 * 1024,
  /** Entries of a command's argv, and their bytes. */
  argvEntries: 10_000,
  argvBytes: 256 * 1024,
  /** Bytes of a module entrypoint's args JSON, and its nesting depth (arrays and objects). */
  argsBytes: 512 * 1024,
  argsDepth: 64,
  /** Characters of a full job or endpoint name, and of one segment. */
  nameChars: 512,
  segmentChars: 128,
  /** Constraints of a job, and values of an IN constraint; device kinds per job. */
  constraints: 100,
  constraintValues: 1000,
  devices: 16,
  /** Characters of other strings in a spec (constraint keys/values, module paths, cwd, …). */
  stringChars: 4096,
  /** Live endpoints one owner (a job, or a user outside any job) may hold (RESOURCE_EXHAUSTED). */
  endpointsPerOwner: 1000,
  /** Endpoint metadata entries and bytes; characters of an endpoint address. */
  metadataEntries: 64,
  metadataBytes: 16 * 1024,
  addressChars: 1024,
  /** A status text's characters and a status report's metrics. */
  statusTextChars: 64 * 1024,
  metricsPerReport: 1000,
  /** Bytes of an HTTP API request body (RESOURCE_EXHAUSTED / 413 above; read only after auth). */
  httpBodyBytes: 2 * 1024 * 1024,
  /** Bytes of one gRPC message the controller receives. */
  rpcMessageBytes: 16 * 1024 * 1024,
} as const;

/** Bytes of `s` as UTF-8. */
export function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

/**
 * The nesting depth of JSON text (arrays and objects), counted without parsing it, so that a
 * value nested millions deep is refused before anything recurses over it.
 */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max) max = depth;
    } else if (c === 93 || c === 125) depth--;
  }
  return max;
}

/** The depth of a JS value (arrays and objects), giving up once past `limit`. */
export function valueDepthOver(v: unknown, limit: number, depth = 0): boolean {
  if (typeof v !== "object" || v === null) return false;
  if (depth + 1 > limit) return true;
  for (const x of Array.isArray(v) ? v : Object.values(v)) if (valueDepthOver(x, limit, depth + 1)) return true;
  return false;
}
