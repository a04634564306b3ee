// How a process starts on the workspace's TypeScript source: `node --import <SOURCE_LOADER> file.ts`
// (see ../sourceLoader/register.mjs). Used where iris, running from source, starts a process that
// must run from source too (task runners, provided workers), and by tests that start the CLIs.

/** The `--import` value that runs TypeScript source (a `file:` URL, so any cwd resolves it). */
export const SOURCE_LOADER = new URL("../sourceLoader/register.mjs", import.meta.url).href;

/** `[node, --import, SOURCE_LOADER]`: prepend to a TypeScript file and its arguments. */
export function sourceNode(): string[] {
  return [process.execPath, "--import", SOURCE_LOADER];
}
