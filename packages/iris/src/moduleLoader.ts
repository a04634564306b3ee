// Imports a user's module (a task entrypoint, a pipeline, an experiment) whatever it is written in:
// JavaScript loads as it is; TypeScript loads through tsx, registered on first need.

let tsxRegistered: Promise<void> | undefined;

/** File names Node cannot load without a TypeScript loader. */
const TYPESCRIPT = /\.(ts|mts|cts|tsx)$/;

/**
 * `import(url)`, registering tsx (a dependency of `@marin/iris`) once for the whole process first
 * when `url` is a TypeScript file and iris itself runs built — as installed packages do, in a
 * process that may have no TypeScript loader. (It must come before the first attempt: Node caches
 * a failed import of a URL.) From source, iris always runs under a TypeScript loader (its source
 * loader, src/sourceLoader/, or Vitest), so none is added.
 */
export async function importModule(url: string): Promise<Record<string, unknown>> {
  if (TYPESCRIPT.test(new URL(url).pathname) && ownExtension(import.meta.url) === ".js") {
    tsxRegistered ??= import("tsx/esm/api").then(({ register }) => void register());
    await tsxRegistered;
  }
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
