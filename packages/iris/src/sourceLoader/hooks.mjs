// Module hooks of the workspace's source loader (register.mjs). They run on Node's hooks thread.
//
// resolve: Node's own resolution first (the `@marin/source` condition comes from NODE_OPTIONS);
//   a relative import that names no file then tries TypeScript's spellings, as tsc and tsx
//   resolve them: `./x.js` → `./x.ts`, `./x` → `./x.ts`, `./dir` → `./dir/index.ts`.
// load: `.ts` and `.mts` files become JavaScript with amaro. Code that only has types to erase
//   (all of the workspace's: its tsconfig sets erasableSyntaxOnly) has them replaced by blanks,
//   so stack traces name the right line and column without a source map. Other TypeScript (an
//   enum, a namespace, a parameter property) is transformed instead, without a source map. The
//   output is cached under the OS temp folder by a hash of the text: a process loads what the
//   last one compiled. The cache is used only in a folder this user owns that nobody else may
//   write to (another user on the machine could otherwise plant code in it).
// A `.ts` file in a package that says `"type": "commonjs"`, and `.cts` and `.tsx` files, are
// refused with the reason: they need tsx.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const TS = /\.(ts|mts)$/;
const OTHER_TS = /\.(cts|tsx)$/;
/** Bumped when the output changes for the same input. */
const LOADER_VERSION = "1";
const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
const CACHE_DIR = path.join(os.tmpdir(), `marin-source-loader-${uid ?? "user"}`);

let amaro;
let cacheUsable;
const packageTypes = new Map();

export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (error) {
    if (!isRelative(specifier) || context.parentURL === undefined || !isNotFound(error)) throw error;
    for (const candidate of typeScriptSpellings(specifier)) {
      try {
        return await nextResolve(candidate, context);
      } catch (again) {
        if (!isNotFound(again)) throw again;
      }
    }
    throw error;
  }
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith("file:")) return nextLoad(url, context);
  const pathname = new URL(url).pathname;
  if (OTHER_TS.test(pathname)) throw new Error(`${fileURLToPath(url)}: the workspace source loader runs ES-module TypeScript (.ts, .mts) only; run this file under tsx`);
  if (!TS.test(pathname)) return nextLoad(url, context);
  const file = fileURLToPath(url);
  if (pathname.endsWith(".ts") && packageType(path.dirname(file)) === "commonjs") {
    throw new Error(`${file}: its package.json says "type": "commonjs"; the workspace source loader runs ES-module TypeScript only; run this file under tsx`);
  }
  return { format: "module", source: await compiled(file, readFileSync(file, "utf8")), shortCircuit: true };
}

async function compiled(file, source) {
  if (!(cacheUsable ??= ownCacheDir())) return strip(file, source);
  const key = createHash("sha1").update(`${LOADER_VERSION}\0${source}`).digest("hex");
  const cached = path.join(CACHE_DIR, `${key}.js`);
  try {
    return readFileSync(cached, "utf8");
  } catch {
    // Not compiled yet.
  }
  const code = await strip(file, source);
  try {
    const temporary = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(temporary, code, { mode: 0o600 });
    renameSync(temporary, cached);
  } catch {
    // A cache that cannot be written only costs the next process a compile.
  }
  return code;
}

/** Whether the cache folder exists (made if not), belongs to this user and only they may write it. */
function ownCacheDir() {
  try {
    mkdirSync(CACHE_DIR, { recursive: true, mode: 0o700 });
    const st = statSync(CACHE_DIR);
    return st.isDirectory() && (uid === undefined || st.uid === uid) && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** The JavaScript of `source`: types blanked out, or transformed where blanking cannot do. */
async function strip(file, source) {
  amaro ??= await import("amaro");
  try {
    return amaro.transformSync(source, { mode: "strip-only" }).code;
  } catch (error) {
    if (error?.code !== "UnsupportedSyntax") throw syntaxError(file, error);
  }
  try {
    return amaro.transformSync(source, { mode: "transform", sourceMap: false }).code;
  } catch (error) {
    throw syntaxError(file, error);
  }
}

function syntaxError(file, error) {
  const where = error?.startLine ? `${file}:${error.startLine}:${(error.startColumn ?? 0) + 1}` : file;
  const wrapped = new SyntaxError(`${where}: ${error?.message ?? error}${error?.snippet ? `\n${error.snippet}` : ""}`);
  wrapped.code = error?.code ?? "ERR_INVALID_TYPESCRIPT_SYNTAX";
  return wrapped;
}

function isRelative(specifier) {
  return specifier.startsWith("./") || specifier.startsWith("../") || specifier.startsWith("/") || specifier.startsWith("file:");
}

function isNotFound(error) {
  return error?.code === "ERR_MODULE_NOT_FOUND" || error?.code === "ERR_UNSUPPORTED_DIR_IMPORT";
}

function typeScriptSpellings(specifier) {
  const js = /\.(js|mjs)$/.exec(specifier);
  if (js) return [`${specifier.slice(0, -js[0].length)}${js[1] === "mjs" ? ".mts" : ".ts"}`];
  if (/\.[a-z]+$/i.test(specifier.split("/").pop() ?? "")) return [];
  return [`${specifier}.ts`, `${specifier}/index.ts`];
}

/** The `type` of the package.json nearest to `dir`: "module", "commonjs", "none" (unset), or undefined (no package.json). */
function packageType(dir) {
  if (packageTypes.has(dir)) return packageTypes.get(dir);
  let type;
  try {
    type = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")).type ?? "none";
  } catch (error) {
    const parent = path.dirname(dir);
    type = error?.code === "ENOENT" && parent !== dir ? packageType(parent) : undefined;
  }
  packageTypes.set(dir, type);
  return type;
}
