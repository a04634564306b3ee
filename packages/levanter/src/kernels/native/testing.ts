// Comparisons and suite hooks shared by the native kernel tests (not a test file itself).
import { afterAll, beforeAll } from "vitest";
import { selectBackend } from "../../backend.ts";

/** In a describe block: silences levanter's logs for the suite, then restores them and the wasm backend. */
export function quietSuiteBackToWasm(): void {
  let previous: string | undefined;
  beforeAll(() => {
    previous = process.env.LEVANTER_LOG;
    process.env.LEVANTER_LOG = "silent";
  });
  afterAll(async () => {
    process.env.LEVANTER_LOG = previous;
    await selectBackend({ force: "wasm", threads: 1 });
  });
}

/** The largest absolute difference, relative to the largest |want| (at least 1e-3). */
export function relErr(got: Float32Array, want: Float32Array): number {
  let worst = 0;
  let scale = 1e-3;
  for (let j = 0; j < want.length; j++) scale = Math.max(scale, Math.abs(want[j]!));
  for (let j = 0; j < got.length; j++) worst = Math.max(worst, Math.abs(got[j]! - want[j]!));
  return worst / scale;
}

/** Whether two arrays hold the same bytes. */
export const sameBits = (a: Float32Array, b: Float32Array): boolean => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
