// Imports a user's module (a task entrypoint, a pipeline, an experiment) whatever it is written in:
// JavaScript loads as it is; TypeScript loads through tsx, registered on first need.

let tsxRegistered: Promise<void> | undefined;

/** Whether `e` is Node refusing a file for its extension (a `.ts` file without a TypeScript loader). */
function isUnknownExtension(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { code?: unknown }).code === "ERR_UNKNOWN_FILE_EXTENSION";
}

/**
 * `import(url)`, and when Node cannot load the file for its extension (TypeScript in a process
 * started without a loader, as the built packages run), registers tsx (a dependency of
 * `@marin/iris`) once for the whole process and imports it again. A process that already has a
 * TypeScript loader (the workspace's source runs) never starts a second one.
 */
export async function importModule(url: string): Promise<Record<string, unknown>> {
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (e) {
    if (!isUnknownExtension(e)) throw e;
  }
  tsxRegistered ??= import("tsx/esm/api").then(({ register }) => void register());
  await tsxRegistered;
  return (await import(url)) as Record<string, unknown>;
}

/**
 * The file extension of the module at `importMetaUrl`: `.ts` when this package runs from source,
 * `.js` when it runs built. Lets code name a sibling module that a child process or thread loads
 * by path (`new URL(\`./task${ownExtension(import.meta.url)}\`, import.meta.url)`).
 */
export function ownExtension(importMetaUrl: string): ".ts" | ".js" {
  return importMetaUrl.endsWith(".ts") ? ".ts" : ".js";
}
